package agent

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// secretEnv is a host environment full of secrets the agent must not
// see, under names a deny-list would have to guess.
var secretEnv = map[string]string{
	"GITHUB_PAT":              "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
	"AWS_SECRET_ACCESS_KEY":   "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
	"AWS_ACCESS_KEY_ID":       "AKIAIOSFODNN7EXAMPLE",
	"DATABASE_URL":            "postgres://app:s3cret-pw@db.internal:5432/prod",
	"SLACK_BOT_TOKEN":         "xoxb-1234-5678-abcdefghijkl",
	"OPENAI_API_KEY":          "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
	"GH_TOKEN":                "ghp_" + strings.Repeat("A", 36),
	"GITHUB_TOKEN":            "ghp_" + strings.Repeat("B", 36),
	"GH_ENTERPRISE_TOKEN":     "ghp_" + strings.Repeat("C", 36),
	"GITHUB_ENTERPRISE_TOKEN": "ghp_" + strings.Repeat("D", 36),
	"PWD":                     "/srv/the-loop/.the-loop/logs",
	"OLDPWD":                  "/srv/the-loop",
	"SSH_AUTH_SOCK":           "/tmp/ssh-XXXX/agent.1",
	"TERM":                    "xterm-256color",
}

func TestAgentEnvIsAnAllowList(t *testing.T) {
	parent := []string{"PATH=/usr/bin:/bin", "HOME=/home/runner", "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "LC_TIME=de_DE.UTF-8",
		"TZ=Europe/Berlin", "TMPDIR=/var/tmp", "ANTHROPIC_API_KEY=sk-ant-api03-xyz", "NOEQUALS"}
	for k, v := range secretEnv {
		parent = append(parent, k+"="+v)
	}
	// Even listed, the GitHub tokens and PWD stay out (New refuses
	// such a list; allowedEnv does not rely on that).
	got := allowedEnv(parent, []string{"ANTHROPIC_API_KEY", "GH_TOKEN", "PWD", "NOT_SET"})
	want := []string{"PATH=/usr/bin:/bin", "HOME=/home/runner", "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "LC_TIME=de_DE.UTF-8",
		"TZ=Europe/Berlin", "TMPDIR=/var/tmp", "ANTHROPIC_API_KEY=sk-ant-api03-xyz"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("agent env = %q\nwant %q", got, want)
	}
	if got := allowedEnv(parent, nil); slices.Contains(got, "ANTHROPIC_API_KEY=sk-ant-api03-xyz") {
		t.Error("an unlisted API key reached the agent")
	}
}

func TestNewRefusesAForbiddenOrBadAgentEnv(t *testing.T) {
	for _, bad := range [][]string{{"GH_TOKEN"}, {"GITHUB_TOKEN"}, {"GH_ENTERPRISE_TOKEN"}, {"GITHUB_ENTERPRISE_TOKEN"}, {"PWD"}, {"OLDPWD"}, {"A B"}, {""}, {"X=y"}} {
		_, err := New(Config{Harness: "builtin", Env: bad})
		if err == nil || !strings.Contains(err.Error(), "selfDiagnosis.agentEnv") {
			t.Errorf("Env %q: error %v, want one naming selfDiagnosis.agentEnv", bad, err)
		}
	}
}

// The agent, run through the fake CLI, gets only the allow-listed
// environment, a working directory of its own (no PWD), and for claude and
// cursor the read-only tool flags.
func TestAgentProcessSeesNoSecretAndOnlyReadOnlyTools(t *testing.T) {
	for k, v := range secretEnv {
		t.Setenv(k, v)
	}
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-api03-listed-key")
	t.Setenv("CURSOR_API_KEY", "cursor-key-not-listed")
	for _, harness := range []string{"claude", "cursor", "command"} {
		t.Run(harness, func(t *testing.T) {
			record := useFake(t, "valid")
			d := testDossier("fp-env", "# Dossier\n\nworker 7 crashed\n")
			cfg := Config{Harness: harness, Binary: fakeBinary, Env: []string{"ANTHROPIC_API_KEY"}}
			if harness == "command" {
				cfg.Command = []string{fakeBinary, "--output-format", "json", "-p", "{prompt}"}
			}
			f := runAgent(t, cfg, d)[0]
			if f.Answer == nil {
				t.Fatalf("no answer: %s", f.Failure)
			}
			rec := oneRecord(t, record)
			env := map[string]string{}
			for _, kv := range rec.Env {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
			for k := range secretEnv {
				if v, ok := env[k]; ok {
					t.Errorf("%s=%s reached the agent", k, v)
				}
			}
			for _, kv := range rec.Env {
				for _, v := range secretEnv {
					if strings.Contains(kv, v) {
						t.Errorf("a secret's value reached the agent in %s", kv)
					}
				}
			}
			// A CLI's own credentials reach that CLI, unlisted, and no other.
			if got, want := env["CURSOR_API_KEY"] != "", harness == "cursor"; got != want {
				t.Errorf("CURSOR_API_KEY reached the %s agent: %v, want %v", harness, got, want)
			}
			if env["ANTHROPIC_API_KEY"] != "sk-ant-api03-listed-key" {
				t.Errorf("the listed ANTHROPIC_API_KEY did not reach the agent: %q", rec.Env)
			}
			if env["PATH"] != os.Getenv("PATH") || env["HOME"] != os.Getenv("HOME") {
				t.Errorf("PATH/HOME not passed: %q", rec.Env)
			}
			if filepath.Base(rec.Cwd) != "work" || !strings.Contains(rec.Cwd, "the-loop-diagnose-agent-") {
				t.Errorf("agent ran in %s, not its own temp dir", rec.Cwd)
			}
			switch harness {
			case "claude":
				// Read, Grep and Glob, allowed on the run's directory only.
				claudeFlags := []string{"--tools", "Read,Grep,Glob", "--allowedTools", "Read(/" + rec.Cwd + "/**)",
					"--disallowedTools", "Bash,Edit,Write,NotebookEdit,WebFetch,WebSearch,Task",
					"--permission-mode", "dontAsk", "--strict-mcp-config"}
				want := append([]string{fakeBinary, "-p", Prompt(d), "--output-format", "json"}, claudeFlags...)
				if !reflect.DeepEqual(rec.Argv, want) {
					t.Errorf("claude argv = %q\nwant %q", rec.Argv[3:], want[3:])
				}
			case "cursor":
				want := []string{fakeBinary, "-p", Prompt(d), "--output-format", "json",
					"--mode", "ask", "--sandbox", "enabled", "--workspace", rec.Cwd, "--trust"}
				if !reflect.DeepEqual(rec.Argv, want) {
					t.Errorf("cursor argv = %q\nwant %q", rec.Argv[3:], want[3:])
				}
				if slices.Contains(rec.Argv, "--force") || slices.Contains(rec.Argv, "--yolo") || slices.Contains(rec.Argv, "-f") {
					t.Error("cursor-agent was started with --force")
				}
				if !reflect.DeepEqual(rec.Files, []string{".cursor", "dossier.md"}) {
					t.Errorf("cursor's workspace holds %q", rec.Files)
				}
			}
		})
	}
}

func TestAgentCursorConfigDeniesShellWritesAndWeb(t *testing.T) {
	var cfg struct {
		Permissions struct{ Allow, Deny []string }
	}
	if err := json.Unmarshal(cursorConfig(), &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Permissions.Allow) != 0 {
		t.Errorf("cursor allow-list %q, want nothing pre-approved", cfg.Permissions.Allow)
	}
	for _, want := range []string{"Shell(*)", "Write(**)", "WebFetch(*)"} {
		if !slices.Contains(cfg.Permissions.Deny, want) {
			t.Errorf("cursor deny list %q lacks %s", cfg.Permissions.Deny, want)
		}
	}
}

// An upgrade that adds no allowedEnv keeps claude's and cursor's own
// credentials flowing to them: an agent that cannot authenticate fails for
// every dossier, which is the setup's fault, never the defects'.
func TestHarnessCredentialsNeedNoListing(t *testing.T) {
	parent := []string{"PATH=/bin", "ANTHROPIC_API_KEY=a", "CLAUDE_CODE_OAUTH_TOKEN=b", "CURSOR_API_KEY=c", "OPENAI_API_KEY=d", "AWS_SECRET_ACCESS_KEY=e"}
	for harness, want := range map[string][]string{
		HarnessClaude:  {"PATH=/bin", "ANTHROPIC_API_KEY=a", "CLAUDE_CODE_OAUTH_TOKEN=b"},
		HarnessCursor:  {"PATH=/bin", "CURSOR_API_KEY=c"},
		HarnessCommand: {"PATH=/bin"},
	} {
		if got := allowedEnv(parent, harnessEnv[harness]); !slices.Equal(got, want) {
			t.Errorf("%s: env %q, want %q", harness, got, want)
		}
	}
}
