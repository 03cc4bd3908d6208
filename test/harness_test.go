// Package test holds end-to-end tests: they build the real binary once and
// run it against a generated event log, the fake GitHub server and the fake
// agent, asserting what a user sees.
package test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	fakegh "github.com/the-loop/the-loop-diagnose/fakes/github"
	"github.com/the-loop/the-loop-diagnose/store"
	"github.com/the-loop/the-loop-diagnose/store/pgtest"
)

var (
	binary    string // the-loop-diagnose under test
	fakeAgent string // fakes/agent
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "the-loop-diagnose-e2e-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "the-loop-diagnose")
	fakeAgent = filepath.Join(dir, "fake-agent")
	for target, pkg := range map[string]string{binary: "./cmd/the-loop-diagnose", fakeAgent: "./fakes/agent"} {
		cmd := exec.Command("go", "build", "-o", target, pkg)
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n%s", pkg, err, out)
			os.Exit(1)
		}
	}
	code := m.Run()
	pgtest.StopShared() // the fleet tests' PostgreSQL
	os.RemoveAll(dir)
	// What a test started (a fake's handler, a watcher's reader, a store's
	// connection) ends with it; checked once the shared PostgreSQL is
	// stopped, so its connections are not counted.
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: goroutines left after the tests passed: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// deployment is one the-loop installation: a work dir with its event log,
// config and state, pointed at a fake GitHub.
type deployment struct {
	t      *testing.T
	dir    string
	log    string
	state  string
	config string
	gh     *fakegh.Server
	env    []string
}

type deployOpts struct {
	harness   string   // default: command with the fake agent
	agentMode string   // FAKE_AGENT_MODE, default valid
	maxPerDay int      // default 3
	extra     string   // more selfDiagnosis YAML lines
	eventLog  string   // more eventLog YAML lines (format, mapping)
	env       []string // more environment
	timeout   int      // selfDiagnosis.timeoutSeconds, default 20
}

func newDeployment(t *testing.T, gh *fakegh.Server, o deployOpts) *deployment {
	t.Helper()
	dir := t.TempDir()
	d := &deployment{t: t, dir: dir, gh: gh,
		log:   filepath.Join(dir, "logs", "events.jsonl"),
		state: filepath.Join(dir, "self-diagnosis.json"), config: filepath.Join(dir, "the-loop.yaml")}
	os.MkdirAll(filepath.Dir(d.log), 0o755)
	if o.maxPerDay == 0 {
		o.maxPerDay = 3
	}
	if o.agentMode == "" {
		o.agentMode = "raw"
	}
	if o.timeout == 0 {
		o.timeout = 20
	}
	harness := "harness: command\n  command: [" + quote(fakeAgent) + ", --prompt-file, \"{promptFile}\"]"
	if o.harness != "" {
		harness = "harness: " + o.harness
	}
	apiURL := ""
	if gh != nil {
		apiURL = gh.URL() + "/api/v3/"
	}
	cfg := fmt.Sprintf(`eventLog:
  path: %s
%sselfDiagnosis:
  enabled: true
  repo: acme/widgets
  %s
  timeoutSeconds: %d
  maxIssuesPerDay: %d
  maxRetries: 3
  statePath: %s
  apiURL: %q
  writeSpacingSeconds: 0
  secondaryWaitSeconds: 0
  httpRetries: 2
  agentEnv: [ANTHROPIC_API_KEY, FAKE_AGENT_MODE, FAKE_AGENT_RECORD, FAKE_AGENT_VERDICT, FAKE_AGENT_CONFIDENCE, FAKE_AGENT_EVIDENCE, FAKE_AGENT_PIDFILE, FAKE_AGENT_DELAY]
%s`, quote(d.log), o.eventLog, harness, o.timeout, o.maxPerDay, quote(d.state), apiURL, o.extra)
	if err := os.WriteFile(d.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	d.env = append([]string{"GH_TOKEN=test-token", "FAKE_AGENT_MODE=" + o.agentMode, "HOME=" + dir}, o.env...)
	return d
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// result is one finished run of the binary.
type result struct {
	code           int
	stdout, stderr string
}

func (d *deployment) run(args ...string) result {
	d.t.Helper()
	return d.runCmd(d.command(args...), args)
}

// runCmd runs cmd to its end and returns its exit code and output.
func (d *deployment) runCmd(cmd *exec.Cmd, args []string) result {
	d.t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		d.t.Fatalf("run %v: %v", args, err)
	}
	return result{code, out.String(), errb.String()}
}

func (d *deployment) command(args ...string) *exec.Cmd {
	full := append([]string{}, args...)
	if len(args) > 0 && !contains([]string{"redact", "version", "help"}, args[0]) { // commands that read no config
		full = append(full, "--config", d.config)
	}
	cmd := exec.Command(binary, full...)
	cmd.Dir = d.dir
	cmd.Env = append(cleanEnv(), d.env...)
	return cmd
}

// cleanEnv drops anything that could point the binary at a real GitHub.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name := kv[:strings.IndexByte(kv, '=')]
		switch name {
		case "GH_TOKEN", "GITHUB_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN", "GITHUB_API_URL", "GH_HOST":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// appendLog appends event records to the deployment's log.
func (d *deployment) appendLog(lines ...string) {
	d.t.Helper()
	f, err := os.OpenFile(d.log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		d.t.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		fmt.Fprintln(f, l)
	}
}

// failure renders one the-loop failure record.
func failure(ts time.Time, event, errText string, extra ...string) string {
	rec := map[string]any{"ts": ts.UTC().Format("2006-01-02T15:04:05.000Z"), "event": event, "level": "error",
		"source": "webhook", "harness": "claude", "work_item": "acme/private#1", "cwd": "/home/alice/w", "error": errText}
	for i := 0; i+1 < len(extra); i += 2 {
		rec[extra[i]] = extra[i+1]
	}
	b, _ := json.Marshal(rec)
	return string(b)
}

func info(ts time.Time, event string) string {
	return fmt.Sprintf(`{"ts":%q,"event":%q,"level":"info","source":"webhook"}`, ts.UTC().Format(time.RFC3339Nano), event)
}

// stateJSON is the deployment's state as `state export --format the-loop`
// writes it, read from its store.
func (d *deployment) stateJSON() []byte {
	d.t.Helper()
	if !store.Exists(d.state, "") {
		d.t.Fatalf("state file: no store and no %s", d.state)
	}
	st, err := store.Load(d.state)
	if err != nil {
		d.t.Fatalf("state: %v", err)
	}
	b, err := st.MarshalJSON()
	if err != nil {
		d.t.Fatalf("state: %v", err)
	}
	return b
}

// storeBytes is everything the store's database holds on disk (its file and
// write-ahead log), as raw bytes: SQLite keeps text as it was written, so a
// value written to the state in clear is found here.
func (d *deployment) storeBytes() []byte {
	db := store.DefaultDSN(d.state)
	var all []byte
	for _, p := range []string{db, db + "-wal"} {
		b, _ := os.ReadFile(p)
		all = append(all, b...)
	}
	return all
}

func (d *deployment) readState() map[string]json.RawMessage {
	d.t.Helper()
	b := d.stateJSON()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		d.t.Fatalf("state file is not valid JSON: %v\n%s", err, b)
	}
	return m
}

func (d *deployment) stateMap(key string) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	json.Unmarshal(d.readState()[key], &m)
	return m
}

func (d *deployment) events(prefix string) []map[string]any {
	b, _ := os.ReadFile(d.log)
	var out []map[string]any
	for _, line := range strings.Split(string(b), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			if ev, _ := m["event"].(string); strings.HasPrefix(ev, prefix) {
				out = append(out, m)
			}
		}
	}
	return out
}

func newGitHub(t *testing.T) *fakegh.Server {
	gh := fakegh.New(fakegh.Options{})
	t.Cleanup(gh.Close)
	return gh
}

var t0 = time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)

// eventually polls ok every 50 ms for up to 20 s and reports whether it
// came true: how the tests wait for a running watcher, never how they time it.
func eventually(ok func() bool) bool { return within(20*time.Second, 50*time.Millisecond, ok) }

// within polls ok every interval until it is true or limit has passed, and
// reports whether it came true. It is the one place the tests sleep: each
// wait is for something a test can see (a file written, a request the fake
// recorded, a process gone), bounded by a deadline.
func within(limit, interval time.Duration, ok func() bool) bool {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(interval) {
		if ok() {
			return true
		}
	}
	return ok()
}

// scanEnded waits until no scan holds d's state lock (its file is removed
// on release) and reports whether that came: a watcher's scan under way
// when it is called has then ended, its outcomes persisted.
func (d *deployment) scanEnded() bool {
	return eventually(func() bool {
		_, err := os.Lstat(d.state + ".lock")
		return os.IsNotExist(err)
	})
}
