package test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// servingRE is the line a watcher logs once it serves /metrics.
var servingRE = regexp.MustCompile(`serving /metrics and /healthz addr=(\S+)`)

// metricsAddr waits for a watcher started with --metrics-addr 127.0.0.1:0
// to say the address the kernel gave it: no port is picked before the
// watcher binds it, so watchers of tests run side by side never race for one.
func metricsAddr(t *testing.T, stderr *syncBuffer) string {
	t.Helper()
	var addr string
	if !eventually(func() bool {
		if m := servingRE.FindStringSubmatch(stderr.String()); m != nil {
			addr = m[1]
		}
		return addr != ""
	}) {
		t.Fatalf("the watcher never said where it serves /metrics\n%s", stderr.String())
	}
	return addr
}

// signalPending reports whether sig, sent to process pid, is still pending:
// not yet taken by any of its threads (ShdPnd in /proc/PID/status).
func signalPending(pid int, sig syscall.Signal) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if mask, ok := strings.CutPrefix(line, "ShdPnd:"); ok {
			m, _ := strconv.ParseUint(strings.TrimSpace(mask), 16, 64)
			return m&(1<<(uint(sig)-1)) != 0
		}
	}
	return false
}

func get(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestWatchFollowsNewLinesAndServesMetrics(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{})
	d.appendLog(info(t0, "dispatch.started"))
	cmd := d.command("watch", "--metrics-addr", "127.0.0.1:0")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	addr := metricsAddr(t, &stderr)
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		if !eventually(ok) {
			t.Fatalf("timed out waiting for %s\n%s", what, stderr.String())
		}
	}
	waitFor("/healthz", func() bool { code, _ := get("http://" + addr + "/healthz"); return code == 200 })

	// A failure appended while watching is filed soon after (notification,
	// not the hour-long interval).
	d.appendLog(failure(t0.Add(time.Minute), "dispatch.failed", "claude exited 1: bad request"))
	waitFor("the new failure to be filed", func() bool { return gh.CountCreates() == 1 })

	wanted := []string{
		`the_loop_diagnose_outcomes_total{status="filed"} 1`,
		"the_loop_diagnose_lines_read_total", "the_loop_diagnose_candidates_total 1",
		`the_loop_diagnose_agent_runs_total{outcome="ok"} 1`, "the_loop_diagnose_agent_run_seconds_count 1",
		`the_loop_diagnose_github_requests_total{status="201"}`, "the_loop_diagnose_new_fingerprints_total 1",
	}
	var metrics string
	// Outcomes are counted as they are persisted, the scan's totals when it
	// ends: wait for the whole set.
	eventually(func() bool {
		_, metrics = get("http://" + addr + "/metrics")
		for _, want := range wanted {
			if !strings.Contains(metrics, want) {
				return false
			}
		}
		return true
	})
	for _, want := range wanted {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q\n%s", want, grepLines(metrics, "the_loop_diagnose"))
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("watch after SIGTERM: %v\n%s", err, stderr.String())
	}
}

func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// syncBuffer is a bytes.Buffer safe to read while a child process writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestDryRunWatchPrintsOnlyWhatIsNew(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, nil, deployOpts{harness: "builtin"})
	d.appendLog(failure(t0, "dispatch.failed", "first defect"))
	cmd := d.command("watch", "--dry-run")
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	wait := func(what string, ok func() bool) {
		t.Helper()
		if !eventually(ok) {
			t.Fatalf("timed out waiting for %s\nstdout:\n%s\nstderr:\n%s", what, stdout.String(), stderr.String())
		}
	}
	wait("the first would-be issue", func() bool { return strings.Contains(stdout.String(), "first defect") })
	d.appendLog(failure(t0.Add(time.Minute), "queue.failed", "second defect"))
	wait("the second would-be issue", func() bool { return strings.Contains(stdout.String(), "second defect") })
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	if n := strings.Count(stdout.String(), "--- would file on"); n != 2 {
		t.Fatalf("printed %d would-be issues, want 2 (the first must not be printed again)\n%s", n, stdout.String())
	}
	if _, err := os.Stat(d.state); err == nil {
		t.Fatal("a dry run wrote a state file")
	}
}

func TestASecondSignalAbortsAndLeavesAValidState(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{agentMode: "slow"}) // the agent never answers
	d.appendLog(failure(t0, "dispatch.failed", "boom"))
	runs := filepath.Join(t.TempDir(), "runs.jsonl")
	d.env = append(d.env, "FAKE_AGENT_RECORD="+runs)
	cmd := d.command("watch")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Wait until the agent is running: the scan is in flight.
	if !eventually(func() bool { _, err := os.Stat(runs); return err == nil }) {
		t.Fatalf("the agent never started\n%s", stderr.String())
	}
	cmd.Process.Signal(syscall.SIGTERM)
	// A second signal sent while the first is still pending would merge
	// with it: the second goes once the process has taken the first.
	eventually(func() bool { return !signalPending(cmd.Process.Pid, syscall.SIGTERM) })
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error)
	go func() { done <- cmd.Wait() }()
	// The Go runtime may yet merge the two; signalled again each second, the
	// watcher still sees a second signal, and only that ends it while its
	// agent hangs (the first lets the scan drain, for the agent's 20 s).
	again := time.NewTicker(time.Second)
	defer again.Stop()
	deadline := time.After(15 * time.Second)
wait:
	for {
		select {
		case err := <-done:
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 130 || !strings.Contains(stderr.String(), "aborted by a second signal") {
				t.Fatalf("exit %v, stderr:\n%s", err, stderr.String())
			}
			break wait
		case <-again.C:
			cmd.Process.Signal(syscall.SIGTERM)
		case <-deadline:
			t.Fatalf("a second signal did not abort the in-flight agent\n%s", stderr.String())
		}
	}
	if gh.CountCreates() != 0 {
		t.Fatal("an aborted scan filed an issue")
	}
	if _, err := os.Stat(d.state); err == nil {
		d.readState() // present: it must be valid JSON
	}
}
