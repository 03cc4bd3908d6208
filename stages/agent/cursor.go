package agent

import "cmp"

// Cursor's cursor-agent CLI, run headless (-p) with --output-format json:
// claude's result envelope (answer.go), in ask mode, its deny rules written
// to the workspace's .cursor/cli.json (cursorFlags, cursorConfig: env.go).

// cursorArgv is cursor-agent headless and read-only.
func cursorArgv(cfg Config, prompt, workDir string) []string {
	argv := []string{cmp.Or(cfg.Binary, Binaries[HarnessCursor]), "-p", prompt, "--output-format", "json"}
	if cfg.Model != "" {
		argv = append(argv, "-m", cfg.Model) // as the-loop passes it
	}
	return append(argv, cursorFlags(workDir)...)
}
