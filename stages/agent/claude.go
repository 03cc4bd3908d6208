package agent

import "cmp"

// Anthropic's claude CLI, run headless (-p) with --output-format json: one
// result envelope on stdout (answer.go reads it), read-only tools scoped to
// the run's directory and the source tree (claudeFlags, env.go).

// claudeArgv is claude headless and read-only.
func claudeArgv(cfg Config, prompt, workDir string) []string {
	argv := []string{cmp.Or(cfg.Binary, Binaries[HarnessClaude]), "-p", prompt, "--output-format", "json"}
	argv = append(argv, claudeFlags(workDir, cfg.SourcePath)...)
	if cfg.Model != "" {
		argv = append(argv, "--model", cfg.Model)
	}
	if cfg.SourcePath != "" {
		// Read access to the source tree, for the Read/Grep/Glob tools.
		argv = append(argv, "--add-dir", cfg.SourcePath)
	}
	return argv
}
