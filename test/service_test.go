package test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	fakegh "github.com/the-loop/the-loop-diagnose/fakes/github"
)

// A typo in a rule (eror: for error:) stops the binary with exit 2 naming
// the file, line and key and the key meant; before, the rule loaded with no
// regex and settled real defects as environment failures.
func TestConfigTypoExitsTwo(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, nil, deployOpts{extra: "  environmentRules:\n    - name: vpn\n      eror: \"dial tcp\"\n      reason: vpn down\n"})
	res := d.run("run", "--dry-run")
	if res.code != 2 || !strings.Contains(res.stderr, d.config+":") ||
		!strings.Contains(res.stderr, "selfDiagnosis.environmentRules[0].eror: unknown key (did you mean error?)") {
		t.Fatalf("exit %d, want 2 and the key named\n%s", res.code, res.stderr)
	}
	// A misspelt section, appended after the good one.
	b, err := os.ReadFile(d.config)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(b), "selfDiagnosis:", "selfDiagnosys:", 1)
	if err := os.WriteFile(d.config, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	res = d.run("run", "--dry-run")
	if res.code != 2 || !strings.Contains(res.stderr, "selfDiagnosys: unknown section (did you mean selfDiagnosis?)") {
		t.Fatalf("exit %d, want 2 and the section named\n%s", res.code, res.stderr)
	}
	// Not valid YAML is a config error too.
	if err := os.WriteFile(d.config, []byte("selfDiagnosis: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if res = d.run("run", "--dry-run"); res.code != 2 {
		t.Fatalf("bad YAML: exit %d, want 2\n%s", res.code, res.stderr)
	}
}

// An Enterprise token goes to its own host and nowhere else, end to end:
// with GH_HOST naming the fake's host:port the fake (which knows only the
// Enterprise token) gets it and the issue is filed; with GH_HOST naming
// another host the Enterprise token is withheld and GH_TOKEN is sent (the
// fake does not know the Enterprise token: had it been sent, 401). The
// fake speaks plain HTTP, so the API URL comes from selfDiagnosis.apiURL;
// GH_HOST's own https://HOST/api/v3/ is TestGitHubTarget's.
func TestEnterpriseTokenOnlyToItsHost(t *testing.T) {
	t.Parallel()
	failing := failure(t0, "dispatch.failed", "claude exited 1: open /tmp/the-loop-8f3a1c/dossier.md: no such file or directory")

	gh := fakegh.New(fakegh.Options{Tokens: map[string]fakegh.Token{"ent-token": {Login: "loop-bot", Triage: true}}})
	t.Cleanup(gh.Close)
	u, _ := url.Parse(gh.URL())
	d := newDeployment(t, gh, deployOpts{env: []string{"GH_TOKEN=", "GH_HOST=" + u.Host, "GH_ENTERPRISE_TOKEN=ent-token"}})
	d.appendLog(failing)
	if res := d.run("run", "--now", t0.Add(time.Hour).Format(time.RFC3339)); res.code != 0 || gh.CountCreates() != 1 {
		t.Fatalf("GH_HOST is the API's host: exit %d, %d issues, want 1\n%s", res.code, gh.CountCreates(), res.stderr)
	}

	gh2 := newGitHub(t) // knows test-token only
	d2 := newDeployment(t, gh2, deployOpts{env: []string{"GH_HOST=ghe.example.com", "GH_ENTERPRISE_TOKEN=ent-secret", "GITHUB_ENTERPRISE_TOKEN=ent-secret"}})
	d2.appendLog(failing)
	res := d2.run("run", "--now", t0.Add(time.Hour).Format(time.RFC3339))
	if res.code != 0 || gh2.CountCreates() != 1 {
		t.Fatalf("GH_HOST is another host: exit %d, %d issues, want 1 (filed with GH_TOKEN)\n%s", res.code, gh2.CountCreates(), res.stderr)
	}
	for _, r := range gh2.Requests() {
		if r.Login == "" { // a token the fake does not know: the Enterprise one
			t.Fatalf("%s %s was sent a token other than GH_TOKEN (status %d)", r.Method, r.Path, r.Status)
		}
	}
}

// GH_HOST alone names the API as gh does, https://HOST/api/v3/, and the
// Enterprise token goes there: the fake serves HTTPS on 127.0.0.1 (its
// certificate trusted through SSL_CERT_FILE) and knows only the Enterprise
// token, no apiURL or GITHUB_API_URL is set, and every request it gets is
// under /api/v3/ with that token.
func TestGHHostNamesTheAPI(t *testing.T) {
	t.Parallel()
	gh := fakegh.New(fakegh.Options{TLS: true, Tokens: map[string]fakegh.Token{"ent-token": {Login: "ghe-bot", Triage: true}}})
	t.Cleanup(gh.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, gh.CertificatePEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(gh.URL())
	d := newDeployment(t, nil, deployOpts{env: []string{"GH_HOST=" + u.Host, "GH_ENTERPRISE_TOKEN=ent-token", "GH_TOKEN=plain-token", "SSL_CERT_FILE=" + ca}})
	d.appendLog(failure(t0, "dispatch.failed", "claude exited 1: open /tmp/the-loop-8f3a1c/dossier.md: no such file or directory"))
	if res := d.run("run", "--now", t0.Add(time.Hour).Format(time.RFC3339)); res.code != 0 || gh.CountCreates() != 1 {
		t.Fatalf("GH_HOST=%s: exit %d, %d issues, want 1\n%s", u.Host, res.code, gh.CountCreates(), res.stderr)
	}
	reqs := gh.Requests()
	for _, r := range reqs {
		if !strings.HasPrefix(r.Path, "/api/v3/") || r.Login != "ghe-bot" {
			t.Errorf("%s %s (login %q): want every request under /api/v3/ with the Enterprise token", r.Method, r.Path, r.Login)
		}
	}
	if len(reqs) < 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	if issue := gh.Issues()[0]; !strings.HasPrefix(string(d.stateMap("reported")[markerOf(issue.Body)]), `{"url":"https://`+u.Host+"/") {
		t.Errorf("the issue recorded is not on the Enterprise host: %s", d.readState()["reported"])
	}
}

// --log-format json: every stderr line of a watcher, from its start line
// to its stop line, is a JSON object; the start line names version, config
// and mode, the stop line its reason, the agent's took is a duration with
// its unit, and a failed defect is an error-level line.
func TestWatchJSONLogs(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{})
	d.appendLog(failure(t0, "dispatch.failed", "claude exited 1: bad request"))
	cmd := d.command("watch", "--log-format", "json", "--log-level", "debug")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if !eventually(func() bool { return gh.CountCreates() == 1 && strings.Contains(stderr.String(), `"lines"`) }) {
		t.Fatalf("no issue filed\n%s", stderr.String())
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("watch: %v\n%s", err, stderr.String())
	}
	var start, stop, took map[string]any
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("stderr line is not JSON: %q (%v)\n%s", line, err, stderr.String())
		}
		switch {
		case m["message"] == "watch started":
			start = m
		case m["message"] == "watch stopped":
			stop = m
		case m["took"] != nil && took == nil:
			took = m
		}
	}
	if start == nil || start["version"] == nil || start["config"] != d.config || start["mode"] != "posting" || start["level"] != "info" {
		t.Errorf("start line %v", start)
	}
	if stop == nil || stop["reason"] != "signal" {
		t.Errorf("stop line %v", stop)
	}
	if s, ok := took["took"].(string); !ok || !strings.HasSuffix(s, "s") {
		t.Errorf("took %v, want a duration with its unit (1.2s)", took)
	}
}

func TestBadLogFlagsExitTwo(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, nil, deployOpts{})
	for _, args := range [][]string{{"--log-level", "loud"}, {"--log-format", "xml"}} {
		if res := d.run(append([]string{"run", "--dry-run"}, args...)...); res.code != 2 || !strings.Contains(res.stderr, args[0]) {
			t.Errorf("%v: exit %d\n%s", args, res.code, res.stderr)
		}
	}
}

// Under --log-format json a config error and a failed run end in JSON
// lines too, with the exit code kept.
func TestJSONLogsToTheEnd(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, nil, deployOpts{extra: "  maxRetires: 2\n"})
	res := d.run("run", "--dry-run", "--log-format", "json")
	if res.code != 2 {
		t.Fatalf("exit %d, want 2\n%s", res.code, res.stderr)
	}
	for _, line := range strings.Split(strings.TrimSpace(res.stderr), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil || m["level"] != "error" || !strings.Contains(m["message"].(string), "did you mean maxRetries") {
			t.Fatalf("stderr line %q (%v)", line, err)
		}
	}
}

// status says when the state does not exist yet, and its JSON names the
// tool's version; version --json is machine-readable.
func TestStatusAndVersionSayWhatTheyKnow(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{harness: "builtin"})
	res := d.run("status")
	if res.code != 0 || !strings.Contains(res.stdout, "does not exist yet") {
		t.Fatalf("status before any scan: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	js := d.run("status", "--json")
	var report struct {
		Version     string `json:"version"`
		StateExists *bool  `json:"state_exists"`
	}
	if err := json.Unmarshal([]byte(js.stdout), &report); err != nil || report.Version == "" || report.StateExists == nil || *report.StateExists {
		t.Fatalf("status --json: %v %+v\n%s", err, report, js.stdout)
	}
	v := d.run("version", "--json")
	var ver struct{ Name, Version, Go string }
	if err := json.Unmarshal([]byte(v.stdout), &ver); err != nil || ver.Name != "the-loop-diagnose" || ver.Version == "" || ver.Go == "" {
		t.Fatalf("version --json: %v %+v\n%s", err, ver, v.stdout)
	}
}

// A config read from another directory: this tool's own paths (statePath,
// eventsPath, sourcePath) resolve beside the config file, whatever the
// working directory; the-loop's eventLog.path is the working directory's,
// as the-loop opens it.
func TestConfigReadFromAnotherDirectory(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	root := t.TempDir()
	etc, work := filepath.Join(root, "etc"), filepath.Join(root, "work")
	os.MkdirAll(work, 0o755)
	if err := os.MkdirAll(filepath.Join(etc, "src", "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(etc, "src", "app", "worker.py"), []byte("def handle(event):\n    raise KeyError('harness_config')\n"), 0o644)
	config := filepath.Join(etc, "cli-config.yaml")
	os.WriteFile(config, []byte(fmt.Sprintf(`eventLog:
  path: logs/events.jsonl
selfDiagnosis:
  enabled: true
  repo: acme/widgets
  harness: builtin
  statePath: state/self-diagnosis.json
  eventsPath: state/events.jsonl
  sourcePath: src
  apiURL: %q
  writeSpacingSeconds: 0
  secondaryWaitSeconds: 0
`, gh.URL()+"/api/v3/")), 0o644)
	d := &deployment{t: t, dir: root, gh: gh, config: config, log: filepath.Join(work, "logs", "events.jsonl"),
		state: filepath.Join(etc, "state", "self-diagnosis.json"), env: []string{"GH_TOKEN=test-token", "HOME=" + work}}
	os.MkdirAll(filepath.Dir(d.log), 0o755)
	d.appendLog(failure(t0, "dispatch.failed", "Traceback (most recent call last):\n  File \"/srv/app/worker.py\", line 2, in handle\n    raise KeyError('harness_config')\nKeyError: 'harness_config'"))
	cmd := d.command("run", "--now", t0.Add(time.Hour).Format(time.RFC3339))
	cmd.Dir = work
	asReader(t, d, cmd) // the log read-only: the events go to eventsPath
	res := d.runCmd(cmd, nil)
	if res.code != 0 || gh.CountCreates() != 1 {
		t.Fatalf("exit %d, %d issues\n%s", res.code, gh.CountCreates(), res.stderr)
	}
	if len(d.stateMap("reported")) == 0 {
		t.Fatalf("no state beside the config at %s", d.state)
	}
	if _, err := os.Stat(filepath.Join(work, "state")); err == nil {
		t.Error("a state directory was made in the working directory")
	}
	if b, err := os.ReadFile(filepath.Join(etc, "state", "events.jsonl")); err != nil || !strings.Contains(string(b), "diagnosis.posted") {
		t.Errorf("the events are not beside the config (%v)", err)
	}
	if body := gh.Issues()[0].Body; !strings.Contains(body, "worker.py:2") {
		t.Errorf("the source beside the config was not quoted:\n%s", body)
	}
}
