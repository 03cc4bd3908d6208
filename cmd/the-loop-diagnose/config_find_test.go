package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The order is the-loop's (cli_config.default_cli_config_path): --config,
// $THE_LOOP_CLI_CONFIG, ./.the-loop/cli-config.yaml if it is a file,
// ~/.the-loop/cli-config.yaml.
func TestConfigPathFollowsTheLoopsOrder(t *testing.T) {
	work, home := t.TempDir(), t.TempDir()
	t.Chdir(work)
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	homeDir := func() (string, error) { return home, nil }
	check := func(name, flag, want string, wantMust bool) {
		t.Helper()
		got, must := ConfigPath(flag, getenv, homeDir)
		if got != want || must != wantMust {
			t.Errorf("%s: ConfigPath = %q (mustExist %v), want %q (%v)", name, got, must, want, wantMust)
		}
	}
	homeConfig := filepath.Join(home, ".the-loop", "cli-config.yaml")
	check("nothing anywhere: home, may be missing", "", homeConfig, false)

	// A directory of that name is not a config file.
	os.MkdirAll(filepath.Join(".the-loop", "cli-config.yaml"), 0o755)
	check("a directory in cwd", "", homeConfig, false)
	os.RemoveAll(".the-loop")
	os.MkdirAll(".the-loop", 0o755)
	os.WriteFile(filepath.Join(".the-loop", "cli-config.yaml"), []byte("{}\n"), 0o644)
	check("cwd file beats home", "", filepath.Join(".the-loop", "cli-config.yaml"), false)

	env[ConfigEnv] = "/elsewhere/cli-config.yaml"
	check("env beats cwd, even when missing", "", "/elsewhere/cli-config.yaml", false)
	check("--config beats env, and must exist", "mine.yaml", "mine.yaml", true)

	env[ConfigEnv] = ""
	check("an empty env var is unset", "", filepath.Join(".the-loop", "cli-config.yaml"), false)

	os.RemoveAll(".the-loop")
	noHome := func() (string, error) { return "", errors.New("no home") }
	if got, _ := ConfigPath("", getenv, noHome); got != "" {
		t.Errorf("no home, nothing found: %q, want none", got)
	}
}

func TestAMissingDiscoveredConfigMeansTheDefaults(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "cli-config.yaml")
	cfg, err := loadConfig(missing, false)
	if err != nil || cfg.Enabled || cfg.File != missing {
		t.Fatalf("cfg %+v, err %v: want the defaults, naming the file", cfg, err)
	}
	if _, err := loadConfig(missing, true); err == nil {
		t.Fatal("a missing --config file was accepted")
	}
}

// the-loop keeps its ledger at <state.root>/self-diagnosis.json and its log
// at <state.root>/logs/events.jsonl, relative to the working directory; an
// explicit path wins over the root, a flag over both. This tool's own
// selfDiagnosis.statePath is relative to the config file's directory (it
// was relative to the working directory: the "explicit paths win" case
// changed deliberately); a flag stays relative to the working directory.
func TestPathsResolveUnderStateRoot(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, flagState, flagLog string
		wantState, wantLog             string
	}{
		{"defaults", "{}\n", "", "", ".the-loop/self-diagnosis.json", ".the-loop/logs/events.jsonl"},
		{"state.root", "state: {root: var/loop}\n", "", "", "var/loop/self-diagnosis.json", "var/loop/logs/events.jsonl"},
		{"blank root is the default", "state: {root: \"  \"}\n", "", "", ".the-loop/self-diagnosis.json", ".the-loop/logs/events.jsonl"},
		{"absolute root", "state: {root: /srv/loop}\n", "", "", "/srv/loop/self-diagnosis.json", "/srv/loop/logs/events.jsonl"},
		{"explicit paths win", "state: {root: r}\neventLog: {path: l.jsonl}\nselfDiagnosis: {statePath: s.json}\n", "", "", "<config>/s.json", "l.jsonl"},
		{"absolute statePath", "selfDiagnosis: {statePath: /srv/s.json}\n", "", "", "/srv/s.json", ".the-loop/logs/events.jsonl"},
		{"empty explicit paths are unset", "state: {root: r}\neventLog: {path: \"\"}\nselfDiagnosis: {statePath: \"\"}\n", "", "", "r/self-diagnosis.json", "r/logs/events.jsonl"},
		{"flags win", "state: {root: r}\nselfDiagnosis: {statePath: s.json}\n", "f.json", "f.jsonl", "f.json", "f.jsonl"},
	} {
		c := commonFlags{config: writeConfig(t, tc.yaml), state: tc.flagState, log: tc.flagLog}
		cfg, _, err := c.resolve()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		tc.wantState = strings.Replace(tc.wantState, "<config>", filepath.ToSlash(filepath.Dir(c.config)), 1)
		if cfg.StatePath != filepath.FromSlash(tc.wantState) || cfg.EventLog != filepath.FromSlash(tc.wantLog) {
			t.Errorf("%s: state %q log %q, want %q %q", tc.name, cfg.StatePath, cfg.EventLog, tc.wantState, tc.wantLog)
		}
	}
}

func TestTheLoopsOwnKeysAreRead(t *testing.T) {
	cfg, err := LoadConfig(writeConfig(t, `
eventLog: {enabled: false}
routing:
  control:
    keywords: {stop: "halt-bot stop", start: "", pause: "halt-bot pause"}
selfDiagnosis:
  controlKeywords: [extra word]
`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.EventLogEnabled {
		t.Error("eventLog.enabled: false left the event log on")
	}
	if want := []string{"extra word", "halt-bot pause", "halt-bot stop"}; !slices.Equal(cfg.Keywords, want) {
		t.Errorf("keywords %q, want %q (routing.control.keywords' non-empty values defanged too)", cfg.Keywords, want)
	}
	if cfg.Repo != DefaultRepo {
		t.Errorf("repo %q, want the-loop's upstream %s", cfg.Repo, DefaultRepo)
	}
	for v, want := range map[string]bool{"true": true, "\"false\"": true, "0": false, "null": false, "\"\"": false, "yes": true, "off": false, "\"off\"": true} {
		cfg, err := LoadConfig(writeConfig(t, "eventLog: {enabled: "+v+"}\n"))
		if err != nil || cfg.EventLogEnabled != want {
			t.Errorf("eventLog.enabled: %s → %v (%v), want %v (Python's bool())", v, cfg.EventLogEnabled, err, want)
		}
	}
}
