package test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	fakegh "github.com/the-loop/the-loop-diagnose/fakes/github"
	"github.com/the-loop/the-loop-diagnose/fingerprint"
	"github.com/the-loop/the-loop-diagnose/store"
)

// A deployment configured the way the-loop is: a cli-config.yaml the tool
// must find by itself (no --config), state.root instead of explicit paths,
// every path relative to the working directory the binary runs in.

// theLoopOpts shapes a the-loop deployment.
type theLoopOpts struct {
	root      string // state.root; "" leaves it unset
	where     string // "cwd" (./.the-loop/cli-config.yaml), "env" ($THE_LOOP_CLI_CONFIG), "home" (~/.the-loop/...)
	noRepo    bool   // leave selfDiagnosis.repo unset
	disabled  bool   // enabled: false
	maxPerDay int
	agentMode string
}

// newTheLoopDeployment writes the config where o.where says and points
// d.log and d.state where the-loop keeps them: under state.root.
func newTheLoopDeployment(t *testing.T, gh *fakegh.Server, o theLoopOpts) *deployment {
	t.Helper()
	d := newDeployment(t, gh, deployOpts{agentMode: o.agentMode, maxPerDay: o.maxPerDay})
	root := o.root
	if root == "" {
		root = ".the-loop"
	}
	d.log = filepath.Join(d.dir, root, "logs", "events.jsonl")
	d.state = filepath.Join(d.dir, root, "self-diagnosis.json")
	os.MkdirAll(filepath.Dir(d.log), 0o755)
	home := t.TempDir() // apart from the working dir, so cwd and home differ
	d.env = append(d.env, "HOME="+home)
	var cfg strings.Builder
	if o.root != "" {
		fmt.Fprintf(&cfg, "state:\n  root: %s\n", o.root)
	}
	if o.maxPerDay == 0 {
		o.maxPerDay = 3
	}
	fmt.Fprintf(&cfg, "selfDiagnosis:\n  enabled: %v\n", !o.disabled)
	if !o.noRepo {
		cfg.WriteString("  repo: acme/widgets\n")
	}
	fmt.Fprintf(&cfg, `  harness: command
  command: [%s, --prompt-file, "{promptFile}"]
  timeoutSeconds: 20
  maxIssuesPerDay: %d
  apiURL: %q
  writeSpacingSeconds: 0
  secondaryWaitSeconds: 0
  httpRetries: 2
  agentEnv: [FAKE_AGENT_MODE]
`, quote(fakeAgent), o.maxPerDay, gh.URL()+"/api/v3/")
	switch o.where {
	case "", "cwd":
		d.config = filepath.Join(".the-loop", "cli-config.yaml")
		writeFile(t, filepath.Join(d.dir, d.config), cfg.String())
	case "env":
		d.config = filepath.Join(t.TempDir(), "elsewhere.yaml")
		writeFile(t, d.config, cfg.String())
		d.env = append(d.env, "THE_LOOP_CLI_CONFIG="+d.config)
	case "home":
		d.config = filepath.Join(home, ".the-loop", "cli-config.yaml")
		writeFile(t, d.config, cfg.String())
	default:
		t.Fatalf("where %q", o.where)
	}
	return d
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// bare runs the binary in the deployment's directory with no --config, as
// cron runs the-loop's `diagnose`.
func (d *deployment) bare(args ...string) result {
	d.t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = d.dir
	for _, kv := range cleanEnv() {
		if !strings.HasPrefix(kv, "THE_LOOP_CLI_CONFIG=") { // only d.env may set it
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, d.env...)
	return d.runCmd(cmd, args)
}

// A ledger the-loop wrote under a custom state.root, in its own shape and
// with its own (v1) fingerprints, is the one the tool reads and keeps
// writing: nothing the-loop filed is filed again, and no second ledger
// appears at ./.the-loop/self-diagnosis.json.
func TestTheLoopsLedgerUnderStateRootIsTheOneUsed(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newTheLoopDeployment(t, gh, theLoopOpts{root: "var/loop"})
	old := "tmux send-keys exited 1: client is read-only"
	fp := fingerprint.Legacy("dispatch.failed", old)
	// selfdiagnosis.py: state["reported"][fp] = {"url": url, "ts": _iso(now), "event": event}
	writeFile(t, d.state, fmt.Sprintf(`{
  "abandoned": {},
  "attempts": {},
  "posted": [%q],
  "reported": {%q: {"event": "dispatch.failed", "ts": %q, "url": "https://github.com/acme/widgets/issues/7"}}
}
`, t0.Format("2006-01-02T15:04:05.000Z"), fp, t0.Format("2006-01-02T15:04:05.000Z")))
	d.appendLog(failure(t0, "dispatch.failed", old), failure(t0.Add(time.Minute), "queue.failed", "a new defect"))
	res := d.bare("run")
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	issues := gh.Issues()
	if len(issues) != 1 || !strings.Contains(issues[0].Body, "a new defect") {
		t.Fatalf("filed %d issues; want only the new defect (the-loop had reported the other)", len(issues))
	}
	if _, ok := d.stateMap("reported")[fp]; !ok {
		t.Fatal("the-loop's entry was dropped from its ledger")
	}
	if _, err := os.Stat(filepath.Join(d.dir, ".the-loop", "self-diagnosis.json")); err == nil {
		t.Fatal("a second ledger was written at ./.the-loop/self-diagnosis.json, ignoring state.root")
	}
	if ev := d.events("diagnosis.posted"); len(ev) != 1 {
		t.Fatalf("diagnosis.posted events in <root>/logs/events.jsonl: %d, want 1", len(ev))
	}
}

// The config is found as the-loop finds it: $THE_LOOP_CLI_CONFIG before
// ./.the-loop/cli-config.yaml before ~/.the-loop/cli-config.yaml.
func TestTheConfigIsFoundWhereTheLoopFindsIt(t *testing.T) {
	t.Parallel()
	for _, where := range []string{"cwd", "env", "home"} {
		t.Run(where, func(t *testing.T) {
			t.Parallel()
			gh := newGitHub(t)
			d := newTheLoopDeployment(t, gh, theLoopOpts{root: "state", where: where})
			if where == "env" {
				// A disabled config in the working dir loses to the env var.
				writeFile(t, filepath.Join(d.dir, ".the-loop", "cli-config.yaml"), "selfDiagnosis: {enabled: false}\n")
			}
			d.appendLog(failure(t0, "dispatch.failed", "boom"))
			if res := d.bare("run"); res.code != 0 || gh.CountCreates() != 1 {
				t.Fatalf("exit %d, %d issues\n%s", res.code, gh.CountCreates(), res.stderr)
			}
			if _, err := os.Stat(store.DefaultDSN(d.state)); err != nil {
				t.Fatalf("no store beside <state.root>/self-diagnosis.json: %v", err)
			}
		})
	}
}

// Each outcome prints the-loop's line, on the stream the-loop uses: filed
// and deferred on stdout, failed on stderr, and a scan with nothing to act
// on (or no log yet) says so on stdout.
func TestOutcomeLinesAreTheLoops(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newTheLoopDeployment(t, gh, theLoopOpts{maxPerDay: 1})
	os.Remove(d.log)
	res := d.bare("run")
	if res.code != 0 || !strings.Contains(res.stdout, "nothing to diagnose — no new failure fingerprints in the log\n") ||
		!strings.Contains(res.stderr, "does not exist yet") {
		t.Fatalf("missing log: exit %d\nstdout %s\nstderr %s", res.code, res.stdout, res.stderr)
	}

	d.appendLog(failure(t0, "dispatch.failed", "first defect"), failure(t0.Add(time.Minute), "queue.failed", "second defect"))
	res = d.bare("run", "--now", t0.Add(time.Hour).Format(time.RFC3339))
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	filed := regexp.MustCompile(`(?m)^filed https?://\S+/acme/widgets/issues/1 — \[self-diagnosed\] .+$`)
	deferred := regexp.MustCompile(`(?m)^deferred v\d+:[0-9a-f]+ — daily cap \(maxIssuesPerDay: 1\) reached$`)
	if !filed.MatchString(res.stdout) || !deferred.MatchString(res.stdout) {
		t.Fatalf("want a filed and a deferred line on stdout:\n%s", res.stdout)
	}
	if filed.MatchString(res.stderr) || deferred.MatchString(res.stderr) || strings.Contains(res.stdout, "nothing to diagnose") {
		t.Fatalf("lines on the wrong stream or a wrong 'nothing':\nstdout %s\nstderr %s", res.stdout, res.stderr)
	}

	res = d.bare("run", "--now", t0.Add(90*time.Minute).Format(time.RFC3339))
	if !deferred.MatchString(res.stdout) {
		t.Fatalf("the cap still holds: want the deferred line again:\n%s", res.stdout)
	}
	res = d.bare("run", "--now", t0.Add(26*time.Hour).Format(time.RFC3339))
	if res.code != 0 || !regexp.MustCompile(`(?m)^filed \S+/issues/2 — `).MatchString(res.stdout) {
		t.Fatalf("a day later the deferred defect is filed: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	res = d.bare("run", "--now", t0.Add(27*time.Hour).Format(time.RFC3339))
	if res.code != 0 || strings.TrimSpace(res.stdout) != "nothing to diagnose — no new failure fingerprints in the log" {
		t.Fatalf("nothing new: exit %d, stdout %q", res.code, res.stdout)
	}

	bad := newTheLoopDeployment(t, newGitHub(t), theLoopOpts{agentMode: "garbage"})
	bad.appendLog(failure(t0, "dispatch.failed", "boom"))
	res = bad.bare("run")
	failed := regexp.MustCompile(`(?m)^failed v\d+:[0-9a-f]+ — .+$`)
	if res.code != 1 || !failed.MatchString(res.stderr) || failed.MatchString(res.stdout) {
		t.Fatalf("want the failed line on stderr only: exit %d\nstdout %s\nstderr %s", res.code, res.stdout, res.stderr)
	}
}

// With no repo set, the-loop files on its own upstream.
func TestTheDefaultRepoIsTheLoopsUpstream(t *testing.T) {
	t.Parallel()
	gh := fakegh.New(fakegh.Options{Repo: "MadaraUchiha-314/the-loop"})
	t.Cleanup(gh.Close)
	d := newTheLoopDeployment(t, gh, theLoopOpts{noRepo: true})
	d.appendLog(failure(t0, "dispatch.failed", "boom"))
	if res := d.bare("run", "--dry-run"); res.code != 0 || !strings.Contains(res.stdout, "--- would file on MadaraUchiha-314/the-loop ---\n") {
		t.Fatalf("dry run: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	res := d.bare("run")
	if res.code != 0 || gh.CountCreates() != 1 || !strings.Contains(res.stdout, "/MadaraUchiha-314/the-loop/issues/1 — ") {
		t.Fatalf("exit %d, %d issues\n%s\n%s", res.code, gh.CountCreates(), res.stdout, res.stderr)
	}
}

// Posting while disabled is refused in the-loop's words, naming the file
// that was read — or, when there is none, the last place looked.
func TestTheDisabledMessageNamesTheConfig(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newTheLoopDeployment(t, gh, theLoopOpts{disabled: true})
	d.appendLog(failure(t0, "dispatch.failed", "boom"))
	want := "self-diagnosis is off — set selfDiagnosis.enabled: true in " + filepath.Join(".the-loop", "cli-config.yaml") +
		" to let the-loop file issues for its own failures, or preview with --dry-run"
	if res := d.bare("run"); res.code != 2 || !strings.Contains(res.stderr, want) {
		t.Fatalf("exit %d, stderr %s\nwant %s", res.code, res.stderr, want)
	}
	os.Remove(filepath.Join(d.dir, ".the-loop", "cli-config.yaml"))
	res := d.bare("run")
	if res.code != 2 || !regexp.MustCompile(`in \S+/\.the-loop/cli-config\.yaml to let`).MatchString(res.stderr) {
		t.Fatalf("no config anywhere: exit %d, stderr %s", res.code, res.stderr)
	}
	if gh.CountCreates() != 0 {
		t.Fatal("posted while disabled")
	}
}

// A dry run whose agent fails shows the dossier it would have sent and
// exits 0: a preview, not a failed scan. It writes nothing.
func TestADryRunWithAFailingAgentShowsTheDossier(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newTheLoopDeployment(t, gh, theLoopOpts{agentMode: "exit", disabled: true})
	d.appendLog(failure(t0, "dispatch.failed", "worker lost its lease on /home/alice/w/queue.db"), failure(t0, "queue.failed", "queue wedged"))
	res := d.bare("run", "--dry-run")
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	block := regexp.MustCompile(`(?m)^--- would diagnose \(agent unavailable: .+\) ---$`)
	if n := len(block.FindAllString(res.stdout, -1)); n != 2 || !strings.Contains(res.stdout, "worker lost its lease") ||
		!strings.Contains(res.stdout, "queue wedged") {
		t.Fatalf("want two would-diagnose blocks with their dossiers, got %d:\n%s", n, res.stdout)
	}
	if strings.Contains(res.stdout, "/home/alice") {
		t.Fatalf("the dossier printed is not the scrubbed one:\n%s", res.stdout)
	}
	if _, err := os.Stat(d.state); err == nil {
		t.Fatal("a dry run wrote the ledger")
	}
}

// the-loop's own settlement (poll.comment_settled, will_retry false at
// info, no error) is not a failure; its give-ups are.
func TestTheLoopsSettlementIsNotAFailure(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newTheLoopDeployment(t, gh, theLoopOpts{})
	settled := fmt.Sprintf(`{"ts":%q,"source":"poll","event":"poll.comment_settled","level":"info","pid":42,"work_item":"github:acme/private#7","comment_id":99,"actor":"alice","outcome":"session-paused","will_retry":false}`,
		t0.Format("2006-01-02T15:04:05.000Z"))
	d.appendLog(settled)
	res := d.bare("run")
	if res.code != 0 || gh.CountCreates() != 0 || !strings.Contains(res.stdout, "nothing to diagnose") {
		t.Fatalf("a settlement was taken for a failure: exit %d, %d issues\n%s\n%s", res.code, gh.CountCreates(), res.stdout, res.stderr)
	}
	gaveUp := fmt.Sprintf(`{"ts":%q,"source":"poll","event":"poll.comment_failed","level":"error","pid":42,"work_item":"github:acme/private#7","comment_id":99,"actor":"alice","attempts":3,"will_retry":false}`,
		t0.Add(time.Minute).Format("2006-01-02T15:04:05.000Z"))
	d.appendLog(gaveUp)
	if res := d.bare("run"); res.code != 0 || gh.CountCreates() != 1 {
		t.Fatalf("a give-up was not filed: exit %d, %d issues\n%s", res.code, gh.CountCreates(), res.stderr)
	}
}

// A the-loop ledger whose reported fingerprints the-loop computed for
// Unicode text and non-string error values (golden values from the-loop's
// own fingerprint(), as in fingerprint/legacy_golden_test.go): the tool
// files none of those defects again.
func TestTheLoopsReportedUnicodeAndNonStringErrorsAreNotFiledAgain(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newTheLoopDeployment(t, gh, theLoopOpts{root: "var/loop"})
	ts := t0.Format("2006-01-02T15:04:05.000Z")
	golden := []struct{ record, fp string }{
		{`{"event": "dispatch.failed", "error": "cannot open /home/jos\u00e9/donn\u00e9es/x.txt"}`, "034a06c4adb0f34f"},
		{`{"event": "dispatch.failed", "error": "retry \u0663 of \u0665 failed"}`, "1518c5d62b048d89"},
		{`{"event": "dispatch.failed", "error": null}`, "2e7a19cd6f893699"},
		{`{"event": "dispatch.failed", "error": 137}`, "ae5ce37e34f3146f"},
		{`{"event": "dispatch.failed", "error": {"code": 137}}`, "bd588e74138d8eed"},
	}
	var reported []string
	for i, g := range golden {
		reported = append(reported, fmt.Sprintf(`%q: {"event": "dispatch.failed", "ts": %q, "url": "https://github.com/acme/widgets/issues/%d"}`, g.fp, ts, i+1))
		// As the-loop writes a failure: level error, the error as it was.
		line := strings.Replace(g.record, `{"event"`, fmt.Sprintf(`{"ts": %q, "level": "error", "source": "webhook", "event"`, t0.Add(time.Duration(i)*time.Second).Format(time.RFC3339Nano)), 1)
		d.appendLog(line)
	}
	writeFile(t, d.state, `{"abandoned": {}, "attempts": {}, "posted": [], "reported": {`+strings.Join(reported, ", ")+`}}`+"\n")
	if res := d.bare("run"); res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	if n := gh.CountCreates(); n != 0 {
		var titles []string
		for _, is := range gh.Issues() {
			titles = append(titles, is.Title)
		}
		t.Fatalf("%d issues filed again for defects the-loop had reported: %v", n, titles)
	}
}
