package agent

import "strings"

// An operator's own command (selfDiagnosis.command): its argv with the
// placeholders substituted, never through a shell; its stdout is the
// answer, bare or in claude's envelope (answer.go). What it may do is the
// operator's to restrict: only the environment allow-list applies.

// commandArgv substitutes {prompt}, {promptFile} and {sourcePath} in each
// element of the configured argv, in one pass per element: a prompt that
// itself contains "{promptFile}" is not substituted again.
func commandArgv(cfg Config, prompt, promptFile string) []string {
	r := strings.NewReplacer("{prompt}", prompt, "{promptFile}", promptFile, "{sourcePath}", cfg.SourcePath)
	argv := make([]string, len(cfg.Command))
	for i, a := range cfg.Command {
		argv[i] = r.Replace(a)
	}
	return argv
}

func argvUses(argv []string, placeholder string) bool {
	for _, a := range argv {
		if strings.Contains(a, placeholder) {
			return true
		}
	}
	return false
}
