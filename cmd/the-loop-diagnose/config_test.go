package main

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/the-loop/the-loop-diagnose/logread"
	"github.com/the-loop/the-loop-diagnose/stages/budget"
	"github.com/the-loop/the-loop-diagnose/store"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "the-loop.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigDefaultsAndOverrides(t *testing.T) {
	cfg, err := LoadConfig(writeConfig(t, `
eventLog: {path: logs/e.jsonl}
selfDiagnosis:
  enabled: true
  repo: acme/widgets
  harness: command
  command: [my-agent, --prompt-file, "{promptFile}"]
  timeoutSeconds: 60
  maxIssuesPerDay: 5
  settleDays: 2
polling: {intervalSeconds: 30}
webhooks: {anything: [the-loop, reads, it]}
`))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Enabled || cfg.Repo != "acme/widgets" || cfg.EventLog != "logs/e.jsonl" || cfg.Timeout != time.Minute ||
		cfg.MaxIssuesPerDay != 5 || cfg.MaxRetries != 3 || cfg.Triage.SettleFor != 48*time.Hour || len(cfg.Command) != 3 {
		t.Fatalf("cfg = %+v", cfg)
	}
}

// The config is the one layer of defaults: what a file leaves unset is
// DefaultConfig's, and the stages take it as given (they default nothing).
func TestConfigHoldsTheTriageAndBudgetDefaults(t *testing.T) {
	cfg, err := LoadConfig(writeConfig(t, "selfDiagnosis: {enabled: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	tr := cfg.Triage
	if tr.FlakyThreshold != 5 || tr.SettleFor != 7*24*time.Hour || tr.Confidence != 0.8 ||
		!reflect.DeepEqual(tr.Policy, logread.DefaultPolicy()) {
		t.Errorf("triage defaults %+v", tr)
	}
	want := budget.Limits{MaxIssuesPerDay: 3, MaxDiagnosesPerScan: 5, MaxDiagnosesPerDay: 20}
	if got := cfg.Limits(); got != want {
		t.Errorf("caps %+v, want %+v (no cost cap)", got, want)
	}
	if cfg.Retention != store.DefaultRetention {
		t.Errorf("retention %+v", cfg.Retention)
	}
}

func TestOnlyALiteralTrueEnablesPosting(t *testing.T) {
	for _, v := range []string{`"true"`, "yes", "1", "True_", "[true]"} {
		cfg, err := LoadConfig(writeConfig(t, "selfDiagnosis:\n  enabled: "+v+"\n"))
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if cfg.Enabled {
			t.Errorf("enabled: %s turned posting on", v)
		}
	}
	cfg, _ := LoadConfig(writeConfig(t, "selfDiagnosis:\n  enabled: true\n"))
	if !cfg.Enabled {
		t.Error("enabled: true did not enable posting")
	}
}

func TestBadValuesNameTheirKey(t *testing.T) {
	cases := map[string]string{
		"selfDiagnosis:\n  maxIssuesPerDay: lots\n":                         "selfDiagnosis.maxIssuesPerDay",
		"selfDiagnosis:\n  timeoutSeconds: -5\n":                            "selfDiagnosis.timeoutSeconds",
		"selfDiagnosis:\n  httpRetries: -1\n":                               "selfDiagnosis.httpRetries",
		"selfDiagnosis:\n  harness: gpt\n":                                  "selfDiagnosis.harness",
		"selfDiagnosis:\n  harness: command\n":                              "selfDiagnosis.command",
		"selfDiagnosis:\n  repo: just-a-name\n":                             "selfDiagnosis.repo",
		"selfDiagnosis:\n  maxRetries: 0\n":                                 "selfDiagnosis.maxRetries",
		"selfDiagnosis:\n  label: \"the-loop stop\"\n":                      "selfDiagnosis.label",
		"selfDiagnosis:\n  command: notalist\n":                             "selfDiagnosis.command",
		"selfDiagnosis:\n  verdictConfidence: 2\n":                          "selfDiagnosis.verdictConfidence",
		"selfDiagnosis: [1, 2]\n":                                           "selfDiagnosis",
		"eventLog:\n  path: [a]\n":                                          "eventLog.path",
		"selfDiagnosis:\n  environmentRules: [{name: vpn, error: \"(\"}]\n": "vpn",
		"selfDiagnosis:\n  fingerprintRules: [{name: db, error: \"(\"}]\n":  "db",
		"selfDiagnosis:\n  trustedAuthors: loop-bot\n":                      "selfDiagnosis.trustedAuthors",
		"selfDiagnosis:\n  trustedAuthors: [loop-bot, \"\"]\n":              "selfDiagnosis.trustedAuthors[1]",
		"selfDiagnosis:\n  trustedAuthors: [\"@mallory\"]\n":                "selfDiagnosis.trustedAuthors[0]",
		"selfDiagnosis:\n  trustedAuthors: [a--b]\n":                        "selfDiagnosis.trustedAuthors[0]",
		"selfDiagnosis:\n  trustedAuthors: [{login: x}]\n":                  "selfDiagnosis.trustedAuthors[0]",
		"selfDiagnosis:\n  trustedAuthors: [null]\n":                        "selfDiagnosis.trustedAuthors[0]",
	}
	for text, key := range cases {
		_, err := LoadConfig(writeConfig(t, text))
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%q: error %v, want it to name %s", text, err, key)
		}
	}
	if _, err := LoadConfig(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: %v", err)
	}
}

func TestAgentEnvNamesAreValidatedAndTokensRefused(t *testing.T) {
	cfg, err := LoadConfig(writeConfig(t, "selfDiagnosis:\n  agentEnv: [ANTHROPIC_API_KEY, HTTPS_PROXY]\n"))
	if err != nil || !reflect.DeepEqual(cfg.AgentEnv, []string{"ANTHROPIC_API_KEY", "HTTPS_PROXY"}) {
		t.Fatalf("agentEnv = %q, %v", cfg.AgentEnv, err)
	}
	cases := map[string]string{
		"selfDiagnosis:\n  agentEnv: [\"BAD NAME\"]\n":            `"BAD NAME"`,
		"selfDiagnosis:\n  agentEnv: [\"X=1\"]\n":                 `"X=1"`,
		"selfDiagnosis:\n  agentEnv: [\"9LIVES\"]\n":              `"9LIVES"`,
		"selfDiagnosis:\n  agentEnv: [GH_TOKEN]\n":                "GH_TOKEN is never passed",
		"selfDiagnosis:\n  agentEnv: [OK, GITHUB_TOKEN]\n":        "GITHUB_TOKEN is never passed",
		"selfDiagnosis:\n  agentEnv: [GH_ENTERPRISE_TOKEN]\n":     "GH_ENTERPRISE_TOKEN is never passed",
		"selfDiagnosis:\n  agentEnv: [GITHUB_ENTERPRISE_TOKEN]\n": "GITHUB_ENTERPRISE_TOKEN is never passed",
		"selfDiagnosis:\n  agentEnv: [PWD]\n":                     "PWD is never passed",
		"selfDiagnosis:\n  agentEnv: [OLDPWD]\n":                  "OLDPWD is never passed",
		"selfDiagnosis:\n  agentEnv: ANTHROPIC_API_KEY\n":         "selfDiagnosis.agentEnv",
	}
	for text, want := range cases {
		_, err := LoadConfig(writeConfig(t, text))
		if err == nil || !strings.Contains(err.Error(), "selfDiagnosis.agentEnv") || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to name selfDiagnosis.agentEnv and %s", text, err, want)
		}
	}
}

func TestTrustedAuthorsAreGitHubLogins(t *testing.T) {
	long := strings.Repeat("a", 39)
	cfg, err := LoadConfig(writeConfig(t, "selfDiagnosis:\n  trustedAuthors:\n    - loop-bot-2\n    - Fleet-App[bot]\n    - 1234\n    - "+long+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"loop-bot-2", "Fleet-App[bot]", "1234", long}; strings.Join(cfg.TrustedAuthors, ",") != strings.Join(want, ",") {
		t.Fatalf("trustedAuthors = %q, want %q", cfg.TrustedAuthors, want)
	}
	_, err = LoadConfig(writeConfig(t, "selfDiagnosis:\n  trustedAuthors: ["+long+"a]\n"))
	if err == nil || !strings.Contains(err.Error(), "selfDiagnosis.trustedAuthors[0]") || !strings.Contains(err.Error(), "not a GitHub login") {
		t.Fatalf("a 40-character login: %v", err)
	}
}

// Unknown keys are errors naming file, line and key, with the key meant
// when one is close; the-loop's own sections stay accepted. (Before, an
// unknown selfDiagnosis key was a warning and the rest were ignored: a
// rule's `eror:` left a rule matching every error.)
func TestUnknownKeysAreErrors(t *testing.T) {
	cases := []struct{ text, want string }{
		{"selfDiagnosys:\n  enabled: true\n", `:1: selfDiagnosys: unknown section (did you mean selfDiagnosis?)`},
		{"frobnicate: 1\n", `:1: frobnicate: unknown section`},
		{"state:\n  rooot: x\n", `:2: state.rooot: unknown key (did you mean root?)`},
		{"eventLog:\n  enabeld: false\n", `:2: eventLog.enabeld: unknown key (did you mean enabled?)`},
		{"selfDiagnosis:\n  repo: a/b\n  maxRetires: 2\n", `:3: selfDiagnosis.maxRetires: unknown key (did you mean maxRetries?)`},
		{"selfDiagnosis:\n  environmentRules:\n    - name: vpn\n      eror: dial tcp\n      reason: vpn down\n",
			`:4: selfDiagnosis.environmentRules[0].eror: unknown key (did you mean error?)`},
		{"selfDiagnosis:\n  fingerprintRules:\n    - {name: db, error: x, fingerprint: db}\n    - {name: q, groups: [a]}\n",
			`:4: selfDiagnosis.fingerprintRules[1].groups: unknown key (did you mean group?)`},
		{"selfDiagnosis:\n  trustedAuthors:\n    - {login: x}\n", `:3: selfDiagnosis.trustedAuthors[0]`},
		{"selfDiagnosis:\n  maxRetries: 2.5\n", `:2: selfDiagnosis.maxRetries: want a whole number (got "2.5")`},
		{"selfDiagnosis:\n  maxIssuesPerDay: 0.5\n", `:2: selfDiagnosis.maxIssuesPerDay: want a whole number`},
	}
	for _, tc := range cases {
		p := writeConfig(t, tc.text)
		_, err := LoadConfig(p)
		if err == nil || !strings.Contains(err.Error(), p+tc.want) {
			t.Errorf("%q: error %v, want %q", tc.text, err, p+tc.want)
		}
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%q: %T is not a ConfigError (exit 2)", tc.text, err)
		}
	}
	// Every section of the-loop's schema is accepted, used or not.
	var all strings.Builder
	for _, k := range topLevelKeys {
		all.WriteString(k + ": {}\n")
	}
	if _, err := LoadConfig(writeConfig(t, all.String())); err != nil {
		t.Errorf("the-loop's own sections: %v", err)
	}
	// Every key loadConfig reads is known; a good rule list passes.
	cfg, err := LoadConfig(writeConfig(t, "selfDiagnosis:\n  environmentRules: [{name: vpn, event: \"x.*\", error: dial, reason: vpn}]\n  fingerprintRules: [{name: db, event: e, error: x, fingerprint: db}, {name: g, event: f, group: [a]}]\n  maxIssuesPerDay: 1.0e1\n"))
	if err != nil || len(cfg.Triage.EnvRules) != 1 || len(cfg.Rules) != 2 || cfg.MaxIssuesPerDay != 10 {
		t.Errorf("good rules: %v %+v", err, cfg)
	}
}

func TestEnabledNotLiterallyTrueWarns(t *testing.T) {
	cfg, err := LoadConfig(writeConfig(t, "selfDiagnosis:\n  enabled: \"true\"\n"))
	if err != nil || cfg.Enabled || len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], `selfDiagnosis.enabled is "true", not literally true`) {
		t.Fatalf("enabled: \"true\" → %v %v %q", cfg.Enabled, err, cfg.Warnings)
	}
	for _, v := range []string{"true", "false"} {
		cfg, _ := LoadConfig(writeConfig(t, "selfDiagnosis:\n  enabled: "+v+"\n"))
		if len(cfg.Warnings) != 0 {
			t.Errorf("enabled: %s warned %q", v, cfg.Warnings)
		}
	}
}

// This tool's path keys resolve against the config file's directory, from
// whatever directory it starts in; the-loop's keys against the working one.
func TestOwnPathsRelativeToConfigFile(t *testing.T) {
	p := writeConfig(t, "state: {root: r}\neventLog: {path: l.jsonl}\nselfDiagnosis:\n  statePath: s/ledger.json\n  sourcePath: src\n  sourceCheckout: ../clone\n")
	dir := filepath.Dir(p)
	if err := os.Mkdir(filepath.Join(dir, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir()) // src does not exist here: found beside the config
	cfg, err := LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.StatePath != filepath.Join(dir, "s", "ledger.json") || cfg.SourcePath != filepath.Join(dir, "src") ||
		cfg.SourceCheckout != filepath.Join(filepath.Dir(dir), "clone") {
		t.Errorf("own paths: state %q source %q checkout %q, want under %s", cfg.StatePath, cfg.SourcePath, cfg.SourceCheckout, dir)
	}
	if cfg.StateRoot != "r" || cfg.EventLog != "l.jsonl" {
		t.Errorf("the-loop's paths: root %q log %q, want them as written (the working directory's, as the-loop)", cfg.StateRoot, cfg.EventLog)
	}
}
