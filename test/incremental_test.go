package test

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/the-loop/the-loop-diagnose/store"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// watcher is a running `watch` with its metrics endpoint.
type watcher struct {
	t      *testing.T
	cmd    *exec.Cmd
	addr   string
	stderr syncBuffer
}

func startWatcher(t *testing.T, d *deployment) *watcher {
	t.Helper()
	w := &watcher{t: t}
	w.cmd = d.command("watch", "--metrics-addr", "127.0.0.1:0")
	w.cmd.Stderr = &w.stderr
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		w.cmd.Process.Signal(syscall.SIGTERM)
		w.cmd.Wait()
	})
	w.addr = metricsAddr(t, &w.stderr)
	return w
}

// waitScans waits until the watcher has finished n scans without error.
func (w *watcher) waitScans(n int) {
	w.t.Helper()
	want := fmt.Sprintf(`the_loop_diagnose_scans_total{result="ok"} %d`, n)
	if !eventually(func() bool { _, m := get("http://" + w.addr + "/metrics"); return strings.Contains(m, want) }) {
		w.t.Fatalf("the watcher did not finish scan %d\n%s", n, w.stderr.String())
	}
}

func TestAScanWithNothingToPostAsksGitHubNothing(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{})
	d.appendLog(info(t0, "dispatch.started"), info(t0.Add(time.Second), "dispatch.finished"))
	if res := d.run("run"); res.code != 0 {
		t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
	}
	if reqs := gh.Requests(); len(reqs) != 0 {
		t.Fatalf("a run that found no failure made %d GitHub requests, first %s %s", len(reqs), reqs[0].Method, reqs[0].Path)
	}

	w := startWatcher(t, d)
	w.waitScans(1)
	d.appendLog(info(t0.Add(time.Minute), "dispatch.started"))
	w.waitScans(2)
	if reqs := gh.Requests(); len(reqs) != 0 {
		t.Fatalf("watcher scans that found no failure made %d GitHub requests, first %s %s", len(reqs), reqs[0].Method, reqs[0].Path)
	}
	// What needs GitHub still gets it.
	d.appendLog(failure(t0.Add(2*time.Minute), "dispatch.failed", "claude exited 1: bad request"))
	if !eventually(func() bool { return gh.CountCreates() == 1 }) {
		t.Fatalf("the failure was not filed\n%s", w.stderr.String())
	}
}

func TestAWatcherPicksUpAStateChangedBehindItsBack(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{})
	d.appendLog(info(t0, "dispatch.started"))
	w := startWatcher(t, d)
	w.waitScans(1)

	// Between two of the watcher's scans another writer (a cron run, retry)
	// records a defect in the store.
	var s *store.Store
	var err error
	if !within(20*time.Second, 10*time.Millisecond, func() bool {
		s, err = store.Open(d.state, false)
		return !errors.Is(err, store.ErrLocked) // else the watcher is scanning
	}) {
		t.Fatal("the watcher never let go of the state's lock")
	}
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(func(st *store.State) error {
		st.Reported.Set("0123456789abcdef", store.Reported{URL: "https://github.com/acme/widgets/issues/77", Number: 77})
		return nil
	})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}

	// A new defect: the scan's writes keep the other writer's row.
	d.appendLog(failure(t0.Add(time.Minute), "dispatch.failed", "claude exited 1: bad request"))
	w.waitScans(2)
	if !eventually(func() bool { return gh.CountCreates() == 1 }) {
		t.Fatalf("the new defect was not filed\n%s", w.stderr.String())
	}
	after := d.readState()
	if !strings.Contains(string(after["reported"]), "issues/77") || !strings.Contains(string(after["reported"]), "issues/1") {
		t.Fatalf("the watcher's write lost what another writer wrote behind its back:\n%s", after["reported"])
	}
}

// occurrences is how many sightings the state file records for the one
// issue the deployment filed.
func (d *deployment) occurrences() int {
	d.t.Helper()
	var issues map[string]struct {
		Occurrences int `json:"occurrences"`
	}
	json.Unmarshal(d.readState()["issues"], &issues)
	if len(issues) != 1 {
		d.t.Fatalf("state tracks %d issues, want 1", len(issues))
	}
	for _, is := range issues {
		return is.Occurrences
	}
	return 0
}

// A watcher's scan that sees only recurrences of a filed defect writes only
// the rows it changed (its cursor, the tally), in its last transaction.
// Killed, it loses nothing: the next scan reads those lines again from the
// committed cursor and counts them once; stopped, it has written all.
func TestAWatcherWritesRecurrencesBehindAndLosesNothingWhenKilled(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{})
	errText := "queue full: dropped work item after 3 attempts"
	d.appendLog(failure(t0, "queue.failed", errText))
	if res := d.run("run"); res.code != 0 || gh.CountCreates() != 1 {
		t.Fatalf("exit %d, %d issues\n%s", res.code, gh.CountCreates(), res.stderr)
	}
	base := d.occurrences()

	w := startWatcher(t, d)
	w.waitScans(1)
	// The first recurrence writes: the occurrence comment is published, and
	// what it publishes is made durable first.
	d.appendLog(failure(t0.Add(time.Minute), "queue.failed", errText))
	w.waitScans(2)
	asked := len(gh.Requests())
	d.appendLog(failure(t0.Add(2*time.Minute), "queue.failed", errText), failure(t0.Add(3*time.Minute), "queue.failed", errText))
	w.waitScans(3)
	if reqs := gh.Requests()[asked:]; len(reqs) != 0 {
		t.Fatalf("recurrences within the hour of the last look made %d GitHub requests, first %s %s", len(reqs), reqs[0].Method, reqs[0].Path)
	}
	w.cmd.Process.Kill()
	w.cmd.Wait()

	if res := d.run("run"); res.code != 0 {
		t.Fatalf("run after the kill: exit %d\n%s", res.code, res.stderr)
	}
	if got := d.occurrences() - base; got != 3 {
		t.Fatalf("after the kill and a rerun %d recurrences are counted, want 3 (none lost, none twice)", got)
	}
	if gh.CountCreates() != 1 {
		t.Fatalf("%d issues filed, want 1", gh.CountCreates())
	}

	// Stopped with SIGTERM, a watcher has written every scan.
	w = startWatcher(t, d)
	w.waitScans(1)
	d.appendLog(failure(t0.Add(4*time.Minute), "queue.failed", errText))
	w.waitScans(2)
	w.cmd.Process.Signal(syscall.SIGTERM)
	if err := w.cmd.Wait(); err != nil {
		t.Fatalf("watcher exit: %v\n%s", err, w.stderr.String())
	}
	if got := d.occurrences() - base; got != 4 {
		t.Fatalf("after SIGTERM the state counts %d recurrences, want 4\n%s", got, w.stderr.String())
	}
	fi, _ := os.Stat(d.log)
	if c := d.cursor(); c["offset"] != float64(fi.Size()) {
		t.Fatalf("after SIGTERM the cursor is %v, want the end of the log (%d)", c["offset"], fi.Size())
	}
}
