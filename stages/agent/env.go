package agent

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
)

// The agent reads hostile text (a log anyone can write into), so it runs
// with what a read-only diagnosis needs and nothing more: the environment
// below, a working directory holding only the dossier, and read-only tools.
// Every limit on the agent's process is in this file.

// baseEnv are the variables every agent gets: what a CLI needs to find
// its binaries (PATH), its own login and settings (HOME), and to read and
// print text and times (LANG, LC_*, TZ, TMPDIR). TERM is left out: stdout is
// a pipe, not a terminal, so there is nothing for it to describe.
var baseEnv = map[string]bool{"PATH": true, "HOME": true, "LANG": true, "TZ": true, "TMPDIR": true}

// harnessEnv are the credentials a known CLI reads for its own model
// provider: passed to that harness without being listed, so a deployment
// that upgrades keeps a working agent (an agent that cannot authenticate
// fails for every dossier). They reach only the CLI they belong to; an
// operator's command harness gets only what allowedEnv lists.
var harnessEnv = map[string][]string{
	HarnessClaude: {"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "CLAUDE_CODE_OAUTH_TOKEN"},
	HarnessCursor: {"CURSOR_API_KEY"},
	// codex exec reads CODEX_API_KEY (exec only) or OPENAI_API_KEY, its
	// login and config under CODEX_HOME (default ~/.codex).
	HarnessCodex: {"CODEX_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_HOME"},
	// gemini: an AI Studio key, or Vertex AI's project, location and
	// credentials, or Code Assist.
	// GOOGLE_GEMINI_BASE_URL points it at a gateway (README: the settings
	// line it then needs).
	HarnessGemini: {"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION",
		"GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_GCA", "GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_GEMINI_BASE_URL"},
}

// harnessSetEnv are set for a known CLI whatever our environment
// holds. gemini refuses a headless run in a folder it was never told to
// trust (exit 55, since 0.41): the agent's directory is ours, fresh,
// holding only the dossier (no settings, hooks, MCP servers or GEMINI.md
// for trust to enable); the variable leaves older versions unchanged,
// where a --skip-trust flag would be an unknown option.
var harnessSetEnv = map[string][]string{
	HarnessGemini: {"GEMINI_CLI_TRUST_WORKSPACE=true"},
}

// neverEnv are never passed, even when listed: the GitHub tokens this
// tool files issues with (a prompt-injected agent must not find one to act
// with) and PWD/OLDPWD (the directory we were started in, beside the raw,
// unscrubbed event log).
var neverEnv = map[string]string{
	"GH_TOKEN":                "it is the GitHub token this tool files issues with",
	"GITHUB_TOKEN":            "it is the GitHub token this tool files issues with",
	"GH_ENTERPRISE_TOKEN":     "it is the GitHub token this tool files issues with",
	"GITHUB_ENTERPRISE_TOKEN": "it is the GitHub token this tool files issues with",
	"PWD":                     "it names the directory of the raw event log; the agent runs in its own",
	"OLDPWD":                  "it names a directory of ours; the agent runs in its own",
}

// envName is a portable environment variable name (POSIX: letters,
// digits and underscore, not starting with a digit).
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ValidateEnv checks selfDiagnosis.agentEnv: each entry a variable name,
// none of them one the agent must never get. The error names the entry.
func ValidateEnv(names []string) error {
	for i, name := range names {
		if !envName.MatchString(name) {
			return fmt.Errorf("entry %d (%q) is not an environment variable name (letters, digits, _)", i+1, name)
		}
		if why, ok := neverEnv[name]; ok {
			return fmt.Errorf("%s is never passed to the agent: %s; remove it", name, why)
		}
	}
	return nil
}

// allowedEnv is the agent's environment: from parent, the base variables and
// the listed ones, nothing else (an allow-list: a secret of the host is
// withheld without anyone having to think of its name).
func allowedEnv(parent, listed []string) []string {
	extra := make(map[string]bool, len(listed))
	for _, n := range listed {
		extra[n] = true
	}
	out := make([]string, 0, len(baseEnv)+len(listed))
	for _, kv := range parent {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || neverEnv[name] != "" {
			continue
		}
		if baseEnv[name] || strings.HasPrefix(name, "LC_") || extra[name] {
			out = append(out, kv)
		}
	}
	return out
}

// The tools an agent may use: read and search files, nothing that runs a
// command, changes a file, reaches the network or starts another agent.
var (
	// claudeTools is claude's whole tool set (--tools).
	claudeTools = []string{"Read", "Grep", "Glob"}
	// claudeDenied are removed outright (--disallowedTools) in case a
	// user's settings add them back: shell, edits, web, subagents. Each is
	// a tool claude knows (it warns of a rule naming one it does not:
	// MultiEdit is gone).
	claudeDenied = []string{"Bash", "Edit", "Write", "NotebookEdit", "WebFetch", "WebSearch", "Task"}
	// cursorDenied are cursor-agent permission rules (its CLI has no
	// per-tool flags), written to the workspace's .cursor/cli.json: no
	// shell command, no write anywhere, no web fetch.
	cursorDenied = []string{"Shell(*)", "Write(**)", "Write(/**)", "WebFetch(*)"}
)

// claudeFlags start claude with the read-only tools only, allowed on
// the run's directory and sourcePath only: a Read rule scopes every tool
// that reads (Grep and Glob too; a rule naming the tool alone would allow
// it on any path), "//" makes the path absolute. dontAsk denies every
// call no rule allows, so nothing waits for a prompt that a one-shot run
// cannot answer; --strict-mcp-config with no --mcp-config loads no MCP
// server (a user's servers may hold any tool).
func claudeFlags(workDir, sourcePath string) []string {
	allowed := []string{"Read(/" + filepath.ToSlash(workDir) + "/**)"}
	if sourcePath != "" {
		allowed = append(allowed, "Read(/"+filepath.ToSlash(sourcePath)+"/**)")
	}
	return []string{
		"--tools", strings.Join(claudeTools, ","),
		"--allowedTools", strings.Join(allowed, ","),
		"--disallowedTools", strings.Join(claudeDenied, ","),
		"--permission-mode", "dontAsk",
		"--strict-mcp-config",
	}
}

// cursorFlags start cursor-agent read-only: ask mode (no edits),
// commands sandboxed, never --force (which would run commands unasked), the
// workspace pinned to the agent's directory and trusted, as a headless run
// needs (it holds only the dossier and our deny rules).
func cursorFlags(workDir string) []string {
	return []string{"--mode", "ask", "--sandbox", "enabled", "--workspace", workDir, "--trust"}
}

// cursorConfig is the workspace's .cursor/cli.json: the deny rules.
func cursorConfig() []byte {
	b, _ := json.Marshal(map[string]any{"permissions": map[string]any{"allow": []string{}, "deny": cursorDenied}})
	return b
}

// codexFlags start `codex exec` read-only: its sandbox lets the
// commands it runs read but not write, nor reach the network (codex has
// no flag to remove its shell tool; exec never asks for approval, so
// nothing escalates out of the sandbox); no git repository is needed (the
// directory holds only the dossier); -C pins its workspace there; no MCP
// server from the user's config is started (-c overrides config.toml).
// Never --full-auto or --dangerously-bypass-approvals-and-sandbox.
func codexFlags(workDir string) []string {
	return []string{"--sandbox", "read-only", "--skip-git-repo-check", "--color", "never", "-C", workDir, "-c", "mcp_servers={}"}
}

// geminiFlags start gemini read-only: approval mode default, in which
// a headless run cannot approve the tools that ask (shell, edits, writes,
// web fetch), so it runs only the read-only ones; no extension loaded.
// Never --yolo or --approval-mode yolo/auto_edit.
func geminiFlags() []string {
	return []string{"--approval-mode", "default", "--extensions", "none"}
}

// harnessAdaptEnv translates what users of a CLI already have into
// what this CLI version reads. codex 0.171 ignores OPENAI_BASE_URL (it
// reads openai_base_url from config.toml or -c, codexArgv passes it)
// and, in exec, sends CODEX_API_KEY only: an OPENAI_API_KEY alone is
// passed on as CODEX_API_KEY.
func harnessAdaptEnv(harness string, env []string) []string {
	if harness != HarnessCodex {
		return env
	}
	if _, ok := envLookup(env, "CODEX_API_KEY"); ok {
		return env
	}
	if key, _ := envLookup(env, "OPENAI_API_KEY"); key != "" {
		env = append(env, "CODEX_API_KEY="+key)
	}
	return env
}

// envLookup is name's value in env (KEY=VALUE, the last one wins, as
// exec's environment does) and whether it is set at all.
func envLookup(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, _ := strings.Cut(env[i], "="); k == name {
			return v, true
		}
	}
	return "", false
}
