package test

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	fakegh "github.com/the-loop/the-loop-diagnose/fakes/github"
)

// troubleOpts makes a watcher's backoff short: it starts at the scan
// interval, so 0.2 s retries after 0.2, 0.4, 0.8 s ... up to 2 s.
var troubleOpts = deployOpts{extra: "  intervalSeconds: 0.2\n"}

func (w *watcher) healthz() (int, string) { return get("http://" + w.addr + "/healthz") }

// troubled reports whether the watcher still runs and /healthz says 503.
func (w *watcher) troubled() bool {
	code, _ := w.healthz()
	return code == http.StatusServiceUnavailable
}

func (w *watcher) waitFor(what string, ok func() bool) {
	w.t.Helper()
	if !eventually(ok) {
		w.t.Fatalf("timed out waiting for %s\n%s", what, w.stderr.String())
	}
}

// stop sends SIGTERM and wants exit 0.
func (w *watcher) stop() {
	w.t.Helper()
	w.cmd.Process.Signal(syscall.SIGTERM)
	if err := w.cmd.Wait(); err != nil {
		w.t.Fatalf("watch after SIGTERM: %v\n%s", err, w.stderr.String())
	}
}

func statusCount(gh *fakegh.Server, route fakegh.Route, status int) int {
	n := 0
	for _, r := range gh.RequestsTo(route) {
		if r.Status == status {
			n++
		}
	}
	return n
}

// A token GitHub rejects for a while (suspended, rotated under a running
// watcher) is trouble to wait out, not a reason to exit: the watcher backs
// off, /healthz says why, and the pending defect is filed once the token
// works again — once.
func TestAWatcherRidesOutARejectedToken(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	gh.RemoveToken("test-token")
	runs := filepath.Join(t.TempDir(), "agent-runs.jsonl")
	o := troubleOpts
	o.env = []string{"FAKE_AGENT_RECORD=" + runs}
	d := newDeployment(t, gh, o)
	d.appendLog(failure(t0, "dispatch.failed", "claude exited 1: open /tmp/x/dossier.md: no such file or directory"))
	w := startWatcher(t, d)

	w.waitFor("/healthz to report the rejected token", func() bool {
		code, body := w.healthz()
		return code == http.StatusServiceUnavailable && strings.Contains(body, "token was rejected")
	})
	// Several rejected retries: it kept running, and backed off between them.
	w.waitFor("retries", func() bool { return statusCount(gh, fakegh.RouteListIssues, 401) >= 3 })
	if !w.troubled() {
		t.Fatalf("the watcher is not running and troubled after a rejected token\n%s", w.stderr.String())
	}
	if _, err := os.Stat(runs); err == nil {
		t.Error("the agent ran while GitHub rejected the token")
	}

	gh.AddToken("test-token", fakegh.Token{Login: "loop-bot", Triage: true})
	w.waitFor("the pending defect to be filed", func() bool { return gh.CountCreates() == 1 })
	w.waitFor("/healthz to recover", func() bool { code, _ := w.healthz(); return code == http.StatusOK })
	if a := d.stateMap("attempts"); len(a) != 0 {
		t.Errorf("the rejected token was charged to the defect: %v", a)
	}
	w.stop()
	if n := gh.CountCreates(); n != 1 {
		t.Fatalf("%d issues, want exactly one", n)
	}
	if !strings.Contains(w.stderr.String(), "token was rejected") {
		t.Errorf("the watcher did not log why it waited:\n%s", w.stderr.String())
	}
}

// GitHub answering 5xx (an outage) stops each scan before any agent runs,
// charging no defect; the watcher files once GitHub is back.
func TestAWatcherRidesOutAGitHubOutage(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	gh.SetOutage(http.StatusBadGateway)
	runs := filepath.Join(t.TempDir(), "agent-runs.jsonl")
	o := troubleOpts
	o.env = []string{"FAKE_AGENT_RECORD=" + runs}
	d := newDeployment(t, gh, o)
	d.appendLog(failure(t0, "dispatch.failed", "claude exited 1: open /tmp/x/dossier.md: no such file or directory"))
	w := startWatcher(t, d)

	w.waitFor("/healthz to report the outage", func() bool {
		code, body := w.healthz()
		return code == http.StatusServiceUnavailable && strings.Contains(body, "GitHub is not answering (HTTP 502)")
	})
	w.waitFor("retries", func() bool { return statusCount(gh, fakegh.RouteListIssues, 502) >= 3 })
	if !w.troubled() {
		t.Fatalf("the watcher is not running and troubled in a GitHub outage\n%s", w.stderr.String())
	}
	if _, err := os.Stat(runs); err == nil {
		t.Error("the agent ran while GitHub was down")
	}
	gh.SetOutage(0)
	w.waitFor("the pending defect to be filed", func() bool { return gh.CountCreates() == 1 })
	w.waitFor("/healthz to recover", func() bool { code, _ := w.healthz(); return code == http.StatusOK })
	if a := d.stateMap("attempts"); len(a) != 0 {
		t.Errorf("the outage was charged to the defect: %v", a)
	}
	w.stop()
	if n := gh.CountCreates(); n != 1 {
		t.Fatalf("%d issues, want exactly one", n)
	}
}

// A watcher started before the-loop wrote its first line waits for the log
// and reads it from its start once it appears.
func TestAWatcherStartedBeforeTheLogExistsFilesWhenItAppears(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, troubleOpts)
	w := startWatcher(t, d)
	w.waitFor("/healthz to report the missing log", func() bool {
		code, body := w.healthz()
		return code == http.StatusServiceUnavailable && strings.Contains(body, d.log) && strings.Contains(body, "does not exist yet")
	})
	d.appendLog(failure(t0, "dispatch.failed", "claude exited 1: open /tmp/x/dossier.md: no such file or directory"),
		failure(t0.Add(time.Minute), "git.push.failed", "remote rejected: protected branch hook declined"))
	w.waitFor("both defects to be filed", func() bool { return gh.CountCreates() == 2 })
	w.waitFor("/healthz to recover", func() bool { code, _ := w.healthz(); return code == http.StatusOK })
	w.stop()
	if lost := notFiled(gh, "dossier.md", "protected branch"); len(lost) != 0 {
		t.Fatalf("not read from its start: %q", lost)
	}
}

// For cron a log not written yet is nothing to diagnose, not an error.
func TestARunBeforeTheLogExistsHasNothingToDiagnose(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{})
	res := d.run("run")
	if res.code != 0 || !strings.Contains(res.stderr, "event log "+d.log+" does not exist yet: nothing to diagnose") {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	if n := len(gh.Requests()); n != 0 {
		t.Fatalf("%d GitHub requests", n)
	}
}

// What a person must fix ends the watcher, saying what: here a state file
// that exists but is empty.
func TestAWatcherStopsOnACorruptStateFile(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, troubleOpts)
	d.appendLog(failure(t0, "dispatch.failed", "boom"))
	os.WriteFile(d.state, nil, 0o600)
	cmd := d.command("watch")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), d.state) {
			t.Fatalf("exit %v, want 1 naming the state file\n%s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("the watcher kept running on a corrupt state file\n%s", stderr.String())
	}
	if gh.CountCreates() != 0 {
		t.Fatal("filed on a corrupt state")
	}
}
