package main

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/the-loop/the-loop-diagnose/fingerprint"
	"github.com/the-loop/the-loop-diagnose/logread"
	"github.com/the-loop/the-loop-diagnose/redact"
	"github.com/the-loop/the-loop-diagnose/stages"
	"github.com/the-loop/the-loop-diagnose/stages/agent"
	"github.com/the-loop/the-loop-diagnose/stages/budget"
	"github.com/the-loop/the-loop-diagnose/store"
)

// Config is the-loop's config file, the parts this tool reads: state.root,
// eventLog.path and eventLog.enabled, routing.control.keywords and the
// selfDiagnosis section. Every key is optional.
type Config struct {
	// File is the config file read ("" for none); ConfigPath found it.
	File string
	// Warnings are what the file holds that is not an error yet is likely
	// not meant (enabled: "yes"); resolve prints them.
	Warnings []string
	// StateRoot is the-loop's state.root: where its generated files live,
	// the event log and the self-diagnosis ledger among them.
	StateRoot string
	// EventLog and StatePath are "" until resolvePaths derives them from
	// StateRoot, as the-loop does, unless set explicitly.
	EventLog string
	// EventLogEnabled is eventLog.enabled: false, the-loop writes no events,
	// and this tool appends no diagnosis.* events either.
	EventLogEnabled bool
	// Format is eventLog.format with eventLog.mapping: how the log writes
	// a record (logread's presets; the-loop's by default).
	Format          *logread.Format
	Enabled         bool
	Repo            string
	Label           string
	Harness         string
	Command         []string
	Model           string
	Timeout         time.Duration
	Interval        time.Duration
	MaxIssuesPerDay int
	MaxRetries      int
	StatePath       string
	APIURL          string
	Keywords        []string
	// ControlKeywords are the deployment's routing.control.keywords
	// (command -> keyword), defanged like the-loop's defaults: the-loop's
	// own scan does (selfdiagnosis.compose_issue).
	ControlKeywords []string
	Rules           []fingerprint.Rule
	AgentParallel   int
	AgentEnv        []string // variables passed to the agent beyond PATH, HOME, LANG, LC_*, TZ, TMPDIR
	Version         string   // the deployment's version, when records carry none
	// TrustedAuthors are logins besides the token's own whose issues count
	// as the tool's (a fleet's other bot accounts).
	TrustedAuthors []string

	// Triage before a human: budgets and the mechanical checks.
	MaxDiagnosesPerScan int
	MaxDiagnosesPerDay  int
	Triage              stages.TriageConfig
	SourceCheckout      string // a git clone of the target repo, for "fixed upstream"
	// SourcePath is the service's source (its installed package or a
	// checkout): the dossier quotes the lines the evidence points at, and
	// the agent may read it. Relative to the working directory, as
	// statePath is.
	SourcePath string
	// EventsPath takes the diagnosis.* events when the event log is not
	// writable by the tool's user (a read-only log); "": they are skipped,
	// with one warning. Relative to the config file.
	EventsPath string
	// Store is where the state lives: "" for a SQLite file beside
	// StatePath (store.DefaultDSN), a SQLite path, or a postgres:// URL a
	// fleet shares. $THE_LOOP_DIAGNOSE_STORE wins over selfDiagnosis.store.
	Store string
	// Retention is what the state keeps of its past (backlogDays).
	Retention store.Retention

	// GitHub pacing: GitHub's defaults; tests set them to zero against the fake.
	WriteSpacing  time.Duration
	SecondaryWait time.Duration
	MaxWait       time.Duration
	HTTPRetries   int
	HTTPTimeout   time.Duration // one GitHub call; 0: tracker.DefaultCallTimeout
	// MaxAgentCostPerDay caps the agents' reported spend (USD) per 24 h; 0: none.
	MaxAgentCostPerDay float64

	// Harness openai: the chat-completions base URL, the name of the
	// variable holding its key ("": none) and its prices per million tokens.
	Endpoint                                    string
	APIKeyEnv                                   string
	PricePerMillionInput, PricePerMillionOutput float64
}

// DefaultRepo is where the-loop files when selfDiagnosis.repo is unset: its
// own upstream (selfdiagnosis.py: DEFAULT_REPO = "MadaraUchiha-314/the-loop").
const DefaultRepo = "MadaraUchiha-314/the-loop"

// DefaultStateRoot is the-loop's state.root when unset or blank
// (state.py: DEFAULT_STATE_ROOT = ".the-loop"), relative to the working
// directory like every path in its config.
const DefaultStateRoot = ".the-loop"

// DefaultConfig is the-loop's defaults, applied before the file is
// decoded, and the only layer of them: the stages' constructors validate
// what the config gives them and default nothing.
// EventLog and StatePath stay empty: resolvePaths puts them under state.root.
func DefaultConfig() Config {
	return Config{
		EventLogEnabled: true,
		Format:          logread.TheLoop(),
		Repo:            DefaultRepo,
		Label:           "the-loop: self-diagnosed",
		Harness:         "claude",
		Timeout:         900 * time.Second,
		Interval:        3600 * time.Second,
		MaxIssuesPerDay: 3,
		MaxRetries:      3,
		AgentParallel:   1,
		WriteSpacing:    time.Second,
		SecondaryWait:   60 * time.Second,
		MaxWait:         15 * time.Minute,
		HTTPRetries:     4,

		MaxDiagnosesPerScan: 5,
		MaxDiagnosesPerDay:  20,
		Triage: stages.TriageConfig{
			Policy:         logread.DefaultPolicy(),
			FlakyThreshold: 5,
			SettleFor:      7 * 24 * time.Hour,
			Confidence:     0.8,
		},
		Retention: store.DefaultRetention,
	}
}

// Limits are the config's caps, which the budget spends against.
func (c Config) Limits() budget.Limits {
	return budget.Limits{MaxIssuesPerDay: c.MaxIssuesPerDay, MaxDiagnosesPerScan: c.MaxDiagnosesPerScan,
		MaxDiagnosesPerDay: c.MaxDiagnosesPerDay, MaxAgentCostPerDay: c.MaxAgentCostPerDay}
}

// ConfigError names the file and key of a bad value.
type ConfigError struct {
	File, Key string
	Line      int
	Err       error
}

func (e *ConfigError) Error() string {
	where := e.File
	if e.Line > 0 {
		where = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	return fmt.Sprintf("config %s: %s: %v", where, e.Key, e.Err)
}

// LoadConfig reads path over the defaults; a missing file is an error (a
// path given with --config). "" reads nothing.
func LoadConfig(path string) (Config, error) { return loadConfig(path, true) }

// loadConfig reads path over the defaults. A missing file is an error only
// when mustExist; otherwise, as the-loop's loader does for the files it
// looks for ("a missing ... config degrades to {}", cli_config.py), it
// means the defaults. Keys are decoded one by one so an error names the
// exact key (selfDiagnosis.maxIssuesPerDay, ...).
func loadConfig(path string, mustExist bool) (Config, error) {
	cfg := DefaultConfig()
	if path == "" {
		return cfg, nil
	}
	cfg.File = path
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !mustExist {
		return cfg, nil
	}
	if err != nil {
		return cfg, &ConfigError{File: path, Key: "(file)", Err: err}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return cfg, &ConfigError{File: path, Key: "(file)", Err: fmt.Errorf("not valid YAML: %w", err)}
	}
	if len(root.Content) == 0 {
		return cfg, nil
	}
	top, err := mapping(root.Content[0])
	if err != nil {
		return cfg, &ConfigError{path, "(top level)", root.Content[0].Line, err}
	}
	if err := checkKeys(path, "", root.Content[0], topLevelKeys); err != nil {
		return cfg, err
	}
	if st, ok := top["state"]; ok && !isNull(st) {
		m, err := mapping(st)
		if err != nil {
			return cfg, &ConfigError{path, "state", st.Line, err}
		}
		if err := checkKeys(path, "state", st, stateKeys); err != nil {
			return cfg, err
		}
		if r, ok := m["root"]; ok && !isNull(r) {
			if err := decodeKey(path, "state.root", r, &cfg.StateRoot); err != nil {
				return cfg, err
			}
		}
	}
	if ev, ok := top["eventLog"]; ok {
		m, err := mapping(ev)
		if err != nil {
			return cfg, &ConfigError{path, "eventLog", ev.Line, err}
		}
		if err := checkKeys(path, "eventLog", ev, eventLogKeys); err != nil {
			return cfg, err
		}
		if p, ok := m["path"]; ok && !isNull(p) {
			if err := decodeKey(path, "eventLog.path", p, &cfg.EventLog); err != nil {
				return cfg, err
			}
		}
		if e, ok := m["enabled"]; ok {
			// eventlog.py: enabled=bool(cfg.get("enabled", True)) — Python
			// truthiness, so only a falsy value turns the log off.
			cfg.EventLogEnabled = truthy(e)
		}
		if cfg.Format, err = decodeFormat(path, m); err != nil {
			return cfg, err
		}
	}
	if rt, ok := top["routing"]; ok && !isNull(rt) {
		if err := decodeControlKeywords(path, rt, &cfg.ControlKeywords); err != nil {
			return cfg, err
		}
	}
	sd, ok := top["selfDiagnosis"]
	if !ok || isNull(sd) {
		cfg.Keywords = withControlKeywords(cfg.Keywords, cfg.ControlKeywords)
		return cfg, cfg.validate(path)
	}
	if _, err := mapping(sd); err != nil {
		return cfg, &ConfigError{path, "selfDiagnosis", sd.Line, err}
	}
	if err := checkKeys(path, "selfDiagnosis", sd, selfDiagnosisKeys); err != nil {
		return cfg, err
	}
	seconds := func(key string, dst *time.Duration, n *yaml.Node) error {
		var s float64
		if err := decodeKey(path, key, n, &s); err != nil {
			return err
		}
		if s < 0 {
			return &ConfigError{path, key, n.Line, errors.New("must not be negative")}
		}
		*dst = time.Duration(s * float64(time.Second))
		return nil
	}
	// In the file's order, so the first bad key is the one reported.
	for i := 0; i+1 < len(sd.Content); i += 2 {
		key, n := sd.Content[i].Value, sd.Content[i+1]
		full := "selfDiagnosis." + key
		var err error
		switch key {
		case "enabled":
			// Only a literal true enables posting: "yes", "true" in quotes, 1 do not.
			cfg.Enabled = n.Kind == yaml.ScalarNode && n.Tag == "!!bool" && n.Value == "true"
			if !cfg.Enabled && !(n.Kind == yaml.ScalarNode && n.Tag == "!!bool") {
				// Not a boolean at all ("yes", "true" in quotes, 1): off,
				// fail closed as the-loop does, but say why.
				cfg.Warnings = append(cfg.Warnings, fmt.Sprintf("config %s:%d: %s is %s, not literally true: posting stays off", path, n.Line, full, kindName(n)))
			}
		case "repo":
			err = decodeKey(path, full, n, &cfg.Repo)
		case "label":
			err = decodeKey(path, full, n, &cfg.Label)
		case "harness":
			err = decodeKey(path, full, n, &cfg.Harness)
		case "command":
			err = decodeKey(path, full, n, &cfg.Command)
		case "endpoint":
			err = decodeKey(path, full, n, &cfg.Endpoint)
		case "apiKeyEnv":
			err = decodeKey(path, full, n, &cfg.APIKeyEnv)
		case "pricePerMillionInput":
			err = decodeKey(path, full, n, &cfg.PricePerMillionInput)
		case "pricePerMillionOutput":
			err = decodeKey(path, full, n, &cfg.PricePerMillionOutput)
		case "model":
			err = decodeKey(path, full, n, &cfg.Model)
		case "timeoutSeconds":
			err = seconds(full, &cfg.Timeout, n)
		case "intervalSeconds":
			err = seconds(full, &cfg.Interval, n)
		case "maxIssuesPerDay":
			err = decodeKey(path, full, n, &cfg.MaxIssuesPerDay)
		case "maxRetries":
			err = decodeKey(path, full, n, &cfg.MaxRetries)
		case "statePath":
			err = decodeKey(path, full, n, &cfg.StatePath)
		case "apiURL":
			err = decodeKey(path, full, n, &cfg.APIURL)
		case "controlKeywords":
			err = decodeKey(path, full, n, &cfg.Keywords)
		case "fingerprintRules":
			if err = checkListKeys(path, full, n, fingerprintRuleKeys); err == nil {
				err = decodeKey(path, full, n, &cfg.Rules)
			}
		case "agentParallel":
			err = decodeKey(path, full, n, &cfg.AgentParallel)
		case "agentEnv":
			err = decodeKey(path, full, n, &cfg.AgentEnv)
		case "version":
			err = decodeKey(path, full, n, &cfg.Version)
		case "writeSpacingSeconds":
			err = seconds(full, &cfg.WriteSpacing, n)
		case "secondaryWaitSeconds":
			err = seconds(full, &cfg.SecondaryWait, n)
		case "maxWaitSeconds":
			err = seconds(full, &cfg.MaxWait, n)
		case "httpRetries":
			err = decodeKey(path, full, n, &cfg.HTTPRetries)
		case "httpTimeoutSeconds":
			err = seconds(full, &cfg.HTTPTimeout, n)
		case "maxDiagnosesPerScan":
			err = decodeKey(path, full, n, &cfg.MaxDiagnosesPerScan)
		case "maxDiagnosesPerDay":
			err = decodeKey(path, full, n, &cfg.MaxDiagnosesPerDay)
		case "maxAgentCostPerDay":
			err = decodeKey(path, full, n, &cfg.MaxAgentCostPerDay)
		case "verdictConfidence":
			err = decodeKey(path, full, n, &cfg.Triage.Confidence)
		case "settleDays":
			var days float64
			if err = decodeKey(path, full, n, &days); err == nil {
				cfg.Triage.SettleFor = time.Duration(days * 24 * float64(time.Hour))
			}
		case "flakyThreshold":
			err = decodeKey(path, full, n, &cfg.Triage.FlakyThreshold)
		case "correlationKeys":
			err = decodeKey(path, full, n, &cfg.Triage.CorrelationKeys)
		case "successSuffixes":
			err = decodeKey(path, full, n, &cfg.Triage.SuccessSuffixes)
		case "environmentRules":
			if err = checkListKeys(path, full, n, envRuleKeys); err == nil {
				err = decodeKey(path, full, n, &cfg.Triage.EnvRules)
			}
		case "sourceCheckout":
			err = decodeKey(path, full, n, &cfg.SourceCheckout)
		case "sourcePath":
			err = decodeKey(path, full, n, &cfg.SourcePath)
		case "eventsPath":
			err = decodeKey(path, full, n, &cfg.EventsPath)
		case "store":
			err = decodeKey(path, full, n, &cfg.Store)
		case "backlogDays":
			err = decodeKey(path, full, n, &cfg.Retention.BacklogDays)
		case "trustedAuthors":
			err = decodeTrustedAuthors(path, full, n, &cfg.TrustedAuthors)
		}
		if err != nil {
			return cfg, err
		}
	}
	// After selfDiagnosis.controlKeywords, which may replace the defaults:
	// the deployment's own keywords are always defanged too.
	cfg.Keywords = withControlKeywords(cfg.Keywords, cfg.ControlKeywords)
	cfg.relativeToFile(path)
	return cfg, cfg.validate(path)
}

// relativeToFile resolves this tool's own path keys (selfDiagnosis.statePath,
// sourcePath, sourceCheckout) against the config file's directory, so a
// config means the same files whichever directory the tool starts in.
// the-loop's keys (state.root, eventLog.path) stay relative to the working
// directory, as the-loop opens them (state.py: Path(root); eventlog.py:
// Path(path)): the two must keep naming the same files.
func (c *Config) relativeToFile(file string) {
	dir := filepath.Dir(file)
	for _, p := range []*string{&c.StatePath, &c.SourcePath, &c.SourceCheckout, &c.EventsPath} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	if c.Store != "" && !store.IsPostgresURL(c.Store) && !strings.HasPrefix(c.Store, "sqlite:") && !filepath.IsAbs(c.Store) {
		c.Store = filepath.Join(dir, c.Store)
	}
}

// withControlKeywords adds the deployment's keywords to those defanged,
// once each, sorted after the ones configured before them.
func withControlKeywords(keywords, control []string) []string {
	control = slices.Sorted(slices.Values(control))
	for _, k := range slices.Compact(control) {
		if !slices.Contains(keywords, k) {
			keywords = append(keywords, k)
		}
	}
	return keywords
}

// StoreEnv names the store, winning over selfDiagnosis.store.
const StoreEnv = "THE_LOOP_DIAGNOSE_STORE"

// checkStore accepts a SQLite path or a PostgreSQL URL; the error never
// quotes the URL (it may hold a password).
func checkStore(dsn string) error {
	if dsn == "" {
		return nil
	}
	if store.IsPostgresURL(dsn) {
		u, err := url.Parse(dsn)
		if err != nil {
			return errors.New("not a valid postgres:// URL (want postgres://USER:PASSWORD@HOST:PORT/DATABASE)")
		}
		if u.Host == "" && u.Query().Get("host") == "" {
			return errors.New("the postgres:// URL names no host (want postgres://USER:PASSWORD@HOST:PORT/DATABASE)")
		}
		return nil
	}
	if scheme, _, ok := strings.Cut(dsn, "://"); ok && !strings.EqualFold(scheme, "sqlite") {
		return fmt.Errorf("%s:// is not a store: want a postgres:// URL or a SQLite file path", scheme)
	}
	return nil
}

// ConfigEnv names the config file for the-loop's CLI (cli_config.py:
// CLI_CONFIG_ENV).
const ConfigEnv = "THE_LOOP_CLI_CONFIG"

// ConfigPath finds the config file the way the-loop's CLI does
// (cli_config.default_cli_config_path): --config; else $THE_LOOP_CLI_CONFIG;
// else ./.the-loop/cli-config.yaml when it is a file; else
// ~/.the-loop/cli-config.yaml. mustExist is true only for --config: a file
// named on the command line must be there, while the others, as in
// the-loop, may be missing and then mean the defaults.
func ConfigPath(flag string, getenv func(string) string, home func() (string, error)) (path string, mustExist bool) {
	if flag != "" {
		return flag, true
	}
	if env := getenv(ConfigEnv); env != "" {
		return env, false
	}
	cwd := filepath.Join(".the-loop", "cli-config.yaml")
	if fi, err := os.Stat(cwd); err == nil && fi.Mode().IsRegular() {
		return cwd, false
	}
	if h, err := home(); err == nil && h != "" {
		return filepath.Join(h, ".the-loop", "cli-config.yaml"), false
	}
	return "", false
}

// resolvePaths puts what is not set explicitly under state.root, as
// the-loop's StateLayout does: the ledger at <root>/self-diagnosis.json and
// the event log at <root>/logs/events.jsonl. A blank root is the default
// (state.py: str(state.get("root") or "").strip() or DEFAULT_STATE_ROOT);
// paths stay relative to the working directory, as the-loop opens them.
func (c *Config) resolvePaths() {
	root := strings.TrimSpace(c.StateRoot)
	if root == "" {
		root = DefaultStateRoot
	}
	if c.StatePath == "" {
		c.StatePath = filepath.Join(root, "self-diagnosis.json")
	}
	if c.EventLog == "" {
		c.EventLog = filepath.Join(root, "logs", "events.jsonl")
	}
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// truthy is Python's bool() of a YAML value as PyYAML loads it.
func truthy(n *yaml.Node) bool {
	switch n.Kind {
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return false
		case "!!bool":
			return n.Value == "true"
		case "!!int", "!!float":
			var f float64
			return n.Decode(&f) != nil || f != 0
		case "!!str":
			// PyYAML reads YAML 1.1: a plain no/off is the boolean false.
			if n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) == 0 {
				switch n.Value {
				case "no", "No", "NO", "off", "Off", "OFF":
					return false
				}
			}
			return n.Value != ""
		}
		return true
	case yaml.SequenceNode, yaml.MappingNode:
		return len(n.Content) > 0
	}
	return true
}

func (c *Config) validate(file string) error {
	bad := func(key, msg string) error {
		return &ConfigError{File: file, Key: key, Err: errors.New(msg)}
	}
	if c.SourcePath != "" {
		if fi, err := os.Stat(c.SourcePath); err != nil {
			return &ConfigError{File: file, Key: "selfDiagnosis.sourcePath", Err: err}
		} else if !fi.IsDir() {
			return bad("selfDiagnosis.sourcePath", fmt.Sprintf("%q is not a directory", c.SourcePath))
		}
	}
	switch c.Harness {
	case "claude", "cursor", "codex", "gemini", "builtin":
	case "command":
		if len(c.Command) == 0 {
			return bad("selfDiagnosis.command", "harness command needs an argv list, e.g. [my-agent, --prompt-file, \"{promptFile}\"]")
		}
	case "openai":
		if err := c.validateOpenAI(file); err != nil {
			return err
		}
	default:
		return bad("selfDiagnosis.harness", fmt.Sprintf("%q is not one of claude, cursor, codex, gemini, openai, command, builtin", c.Harness))
	}
	if c.Repo != "" {
		if parts := strings.Split(c.Repo, "/"); len(parts) != 2 || parts[0] == "" || parts[1] == "" {
			return bad("selfDiagnosis.repo", fmt.Sprintf("%q is not owner/name", c.Repo))
		}
	}
	if c.HTTPRetries < 0 {
		return bad("selfDiagnosis.httpRetries", "must not be negative (0: no retries)")
	}
	if c.MaxIssuesPerDay < 0 {
		return bad("selfDiagnosis.maxIssuesPerDay", "must not be negative")
	}
	if c.MaxRetries < 1 {
		return bad("selfDiagnosis.maxRetries", "must be at least 1")
	}
	if c.Retention.BacklogDays < 1 {
		return bad("selfDiagnosis.backlogDays", "must be at least 1")
	}
	if err := checkStore(c.Store); err != nil {
		key := "selfDiagnosis.store"
		if os.Getenv(StoreEnv) != "" {
			key = "$" + StoreEnv
		}
		return bad(key, err.Error())
	}
	if c.MaxAgentCostPerDay < 0 {
		return bad("selfDiagnosis.maxAgentCostPerDay", "must not be negative (0: no cap)")
	}
	if c.Timeout <= 0 {
		return bad("selfDiagnosis.timeoutSeconds", "must be positive")
	}
	if c.Interval <= 0 {
		return bad("selfDiagnosis.intervalSeconds", "must be positive")
	}
	if c.AgentParallel < 1 {
		return bad("selfDiagnosis.agentParallel", "must be at least 1")
	}
	if err := agent.ValidateEnv(c.AgentEnv); err != nil {
		return &ConfigError{File: file, Key: "selfDiagnosis.agentEnv", Err: err}
	}
	if strings.TrimSpace(c.Label) == "" {
		return bad("selfDiagnosis.label", "must not be empty")
	}
	// The label must never arm the-loop: it may not hold a control keyword
	// (compared normalised, as Defang reads it: a no-break space is a space).
	if label := redact.Normalize(c.Label); redact.Defang(label, c.Keywords) != label {
		return bad("selfDiagnosis.label", fmt.Sprintf("%q holds a the-loop control keyword", c.Label))
	}
	if c.MaxDiagnosesPerScan < 0 {
		return bad("selfDiagnosis.maxDiagnosesPerScan", "must not be negative")
	}
	if c.MaxDiagnosesPerDay < 0 {
		return bad("selfDiagnosis.maxDiagnosesPerDay", "must not be negative")
	}
	if c.Triage.Confidence < 0 || c.Triage.Confidence > 1 {
		return bad("selfDiagnosis.verdictConfidence", "must be between 0 and 1")
	}
	if c.Triage.SettleFor <= 0 {
		return bad("selfDiagnosis.settleDays", "must be positive")
	}
	if c.Triage.FlakyThreshold < 1 {
		return bad("selfDiagnosis.flakyThreshold", "must be at least 1")
	}
	rules, err := stages.CompileEnvRules(c.Triage.EnvRules)
	if err != nil {
		return &ConfigError{File: file, Key: "selfDiagnosis.environmentRules", Err: err}
	}
	c.Triage.EnvRules = rules
	if _, err := fingerprint.New(c.Rules); err != nil {
		return &ConfigError{File: file, Key: "selfDiagnosis.fingerprintRules", Err: err}
	}
	return nil
}

// decodeControlKeywords reads routing.control.keywords, a mapping of
// command to keyword, as the-loop does: every non-empty value, whatever
// its command (an empty one disables that command). A shape the-loop
// cannot read either is an error: the keywords are what must never be
// posted armed.
func decodeControlKeywords(file string, routing *yaml.Node, dst *[]string) error {
	m, err := mapping(routing)
	if err != nil {
		return &ConfigError{file, "routing", routing.Line, err}
	}
	ctl, ok := m["control"]
	if !ok || ctl.Tag == "!!null" {
		return nil
	}
	if m, err = mapping(ctl); err != nil {
		return &ConfigError{file, "routing.control", ctl.Line, err}
	}
	kw, ok := m["keywords"]
	if !ok || kw.Tag == "!!null" {
		return nil
	}
	if kw.Kind != yaml.MappingNode {
		return &ConfigError{file, "routing.control.keywords", kw.Line, fmt.Errorf("want a mapping of command to keyword, got %s", kindName(kw))}
	}
	for i := 0; i+1 < len(kw.Content); i += 2 {
		k, v := kw.Content[i], kw.Content[i+1]
		if v.Kind != yaml.ScalarNode {
			return &ConfigError{file, "routing.control.keywords." + k.Value, v.Line, fmt.Errorf("want a keyword, got %s", kindName(v))}
		}
		if v.Tag != "!!null" && v.Value != "" {
			*dst = append(*dst, v.Value)
		}
	}
	return nil
}

// validateOpenAI checks harness openai's keys: an http(s) endpoint and a
// model are needed; the key's variable, when named, must be one that may
// be sent (never a GitHub token); prices must not be negative.
func (c *Config) validateOpenAI(file string) error {
	bad := func(key, msg string) error {
		return &ConfigError{File: file, Key: key, Err: errors.New(msg)}
	}
	if strings.TrimSpace(c.Endpoint) == "" {
		return bad("selfDiagnosis.endpoint", "harness openai needs the endpoint's base URL, e.g. http://127.0.0.1:11434/v1")
	}
	if u, err := url.Parse(c.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return bad("selfDiagnosis.endpoint", fmt.Sprintf("%q is not an http(s) URL", c.Endpoint))
	}
	if strings.TrimSpace(c.Model) == "" {
		return bad("selfDiagnosis.model", "harness openai needs the model's name, e.g. qwen2.5-coder:7b")
	}
	if c.APIKeyEnv != "" {
		if err := agent.ValidateEnv([]string{c.APIKeyEnv}); err != nil {
			return &ConfigError{File: file, Key: "selfDiagnosis.apiKeyEnv", Err: err}
		}
	}
	if c.PricePerMillionInput < 0 {
		return bad("selfDiagnosis.pricePerMillionInput", "must not be negative")
	}
	if c.PricePerMillionOutput < 0 {
		return bad("selfDiagnosis.pricePerMillionOutput", "must not be negative")
	}
	return nil
}

// decodeTrustedAuthors reads a list of GitHub logins; an entry that is not
// one is an error naming its position, never silently dropped (a typo would
// make the fleet's other account a stranger).
func decodeTrustedAuthors(file, key string, n *yaml.Node, dst *[]string) error {
	if n.Kind != yaml.SequenceNode {
		return &ConfigError{File: file, Key: key, Line: n.Line, Err: fmt.Errorf("want a list of GitHub logins (got %s)", kindName(n))}
	}
	var logins []string
	for i, item := range n.Content {
		if item.Kind != yaml.ScalarNode || (item.Tag != "!!str" && item.Tag != "!!int") || !stages.ValidLogin(item.Value) {
			return &ConfigError{File: file, Key: fmt.Sprintf("%s[%d]", key, i), Line: item.Line,
				Err: fmt.Errorf("%s is not a GitHub login (letters, digits and single hyphens, at most 39, optionally ending in [bot])", kindName(item))}
		}
		logins = append(logins, item.Value)
	}
	*dst = logins
	return nil
}

func mapping(n *yaml.Node) (map[string]*yaml.Node, error) {
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("want a mapping, got %s", kindName(n))
	}
	m := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		m[n.Content[i].Value] = n.Content[i+1]
	}
	return m, nil
}

func decodeKey(file, key string, n *yaml.Node, dst any) error {
	var f float64
	if _, isInt := dst.(*int); isInt && n.Kind == yaml.ScalarNode && n.Tag == "!!float" && n.Decode(&f) == nil && f != math.Trunc(f) {
		// yaml.v3 truncates 2.5 into an int without a word.
		return &ConfigError{File: file, Key: key, Line: n.Line, Err: fmt.Errorf("want a whole number (got %s)", kindName(n))}
	}
	if err := n.Decode(dst); err != nil {
		msg := err.Error()
		if i := strings.LastIndex(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
		return &ConfigError{File: file, Key: key, Line: n.Line, Err: fmt.Errorf("%s (got %s)", msg, kindName(n))}
	}
	return nil
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "nothing"
}

// decodeFormat reads eventLog.format and eventLog.mapping (a field is one
// path or a list of them; levels maps a name or number to a level).
func decodeFormat(file string, m map[string]*yaml.Node) (*logread.Format, error) {
	var name string
	if n, ok := m["format"]; ok && !isNull(n) {
		if err := decodeKey(file, "eventLog.format", n, &name); err != nil {
			return nil, err
		}
	}
	var mp logread.Mapping
	key := "eventLog.format"
	if n, ok := m["mapping"]; ok && !isNull(n) {
		key = "eventLog.mapping"
		fields, err := mapping(n)
		if err != nil {
			return nil, &ConfigError{file, key, n.Line, err}
		}
		if err := checkKeys(file, key, n, eventLogMappingKeys); err != nil {
			return nil, err
		}
		paths := map[string]*[]string{"time": &mp.Time, "level": &mp.Level, "message": &mp.Message, "error": &mp.Error,
			"stack": &mp.Stack, "event": &mp.Event, "logger": &mp.Logger, "ids": &mp.IDs, "retry": &mp.Retry, "lift": &mp.Lift}
		for k, v := range fields {
			full := key + "." + k
			switch dst := paths[k]; {
			case dst != nil && v.Kind == yaml.ScalarNode:
				var one string
				if err := decodeKey(file, full, v, &one); err != nil {
					return nil, err
				}
				*dst = []string{one}
			case dst != nil:
				if err := decodeKey(file, full, v, dst); err != nil {
					return nil, err
				}
			case k == "levels":
				if err := decodeKey(file, full, v, &mp.Levels); err != nil {
					return nil, err
				}
			case k == "inner":
				if err := decodeKey(file, full, v, &mp.Inner); err != nil {
					return nil, err
				}
				key = full
			}
		}
	}
	f, err := logread.NewFormat(name, mp)
	if err != nil {
		line := 0
		if n, ok := m["format"]; ok {
			line = n.Line
		}
		return nil, &ConfigError{File: file, Key: key, Line: line, Err: err}
	}
	return f, nil
}
