package test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/the-loop/the-loop-diagnose/fakes/eventlog"
	fakegh "github.com/the-loop/the-loop-diagnose/fakes/github"
)

func (d *deployment) cursor() map[string]any {
	d.t.Helper()
	var c map[string]any
	json.Unmarshal(d.readState()["cursor"], &c)
	return c
}

func (d *deployment) mustRun(args ...string) result {
	d.t.Helper()
	res := d.run(args...)
	if res.code != 0 {
		d.t.Fatalf("%v: exit %d\n%s", args, res.code, res.stderr)
	}
	return res
}

func TestRotationFinishesTheOldFileThenReadsTheNewOne(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{})
	d.appendLog(failure(t0, "dispatch.failed", "claude exited 1: open /tmp/x/dossier.md: no such file or directory"))
	d.mustRun("run")
	// Written after that scan, then the file is rotated away before the next.
	d.appendLog(failure(t0.Add(time.Minute), "git.push.failed", "remote rejected: protected branch hook declined"))
	if err := os.Rename(d.log, d.log+".1"); err != nil {
		t.Fatal(err)
	}
	d.appendLog(failure(t0.Add(2*time.Minute), "queue.claim.failed", "lease expired before claim could be committed"))

	res := d.mustRun("run")
	if strings.Contains(res.stderr, "beginning") {
		t.Errorf("a rotation is not a restart:\n%s", res.stderr)
	}
	var titles []string
	for _, is := range gh.Issues() {
		titles = append(titles, is.Title)
	}
	if len(titles) != 3 {
		t.Fatalf("filed %d issues, want 3 (the first, the rotated file's tail, the new file's): %q", len(titles), titles)
	}
	if c := d.cursor(); c["path"] != d.log || c["offset"] == float64(0) {
		t.Fatalf("the cursor should now be in the new file: %v", c)
	}
	d.mustRun("run")
	if n := gh.CountCreates(); n != 3 {
		t.Fatalf("a rerun after rotation filed again: %d creates", n)
	}
}

func TestTruncationRestartsFromTheBeginningWithAWarning(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{})
	d.appendLog(failure(t0, "dispatch.failed", "claude exited 1: open /tmp/x/dossier.md: no such file or directory"),
		info(t0.Add(time.Second), "dispatch.started"))
	d.mustRun("run")
	if err := os.Truncate(d.log, 0); err != nil {
		t.Fatal(err)
	}
	d.appendLog(failure(t0.Add(time.Hour), "git.push.failed", "remote rejected"))
	res := d.mustRun("run")
	if !strings.Contains(res.stderr, "truncated") {
		t.Errorf("no truncation warning on stderr:\n%s", res.stderr)
	}
	if n := gh.CountCreates(); n != 2 {
		t.Fatalf("filed %d issues, want 2: the line written after truncation was missed", n)
	}
}

// A scan killed before it finishes must not move the cursor: the next scan
// reads the same records again and loses nothing.
func TestCrashBeforeTheCursorAdvancesLosesNothing(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{})
	d.appendLog(failure(t0, "dispatch.failed", "claude exited 1: open /tmp/x/dossier.md: no such file or directory"))
	d.mustRun("run")
	before := string(d.readState()["cursor"])
	if before == "" {
		t.Fatal("the first scan persisted no cursor")
	}

	d.appendLog(failure(t0.Add(time.Minute), "git.push.failed", "remote rejected: protected branch hook declined"))
	record := filepath.Join(d.dir, "agent-record.jsonl")
	env := d.env
	d.env = append(append([]string{}, env...), "FAKE_AGENT_MODE=slow", "FAKE_AGENT_RECORD="+record)
	cmd := d.command("run")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	agentPid := waitForAgent(t, record)
	cmd.Process.Signal(syscall.SIGKILL) // mid-scan: the agent is still thinking
	cmd.Wait()
	syscall.Kill(-agentPid, syscall.SIGKILL)
	syscall.Kill(agentPid, syscall.SIGKILL)

	if after := string(d.readState()["cursor"]); after != before {
		t.Fatalf("a crashed scan moved the cursor:\nbefore %s\nafter  %s", before, after)
	}
	d.env = env
	d.mustRun("run")
	if n := gh.CountCreates(); n != 2 {
		t.Fatalf("filed %d issues after the crash and a rerun, want 2", n)
	}
}

func waitForAgent(t *testing.T, record string) int {
	t.Helper()
	pid := 0
	if !within(30*time.Second, 20*time.Millisecond, func() bool {
		if b, err := os.ReadFile(record); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			var rec struct{ Pid int }
			if json.Unmarshal(bytes.SplitN(b, []byte("\n"), 2)[0], &rec) == nil && rec.Pid > 0 {
				pid = rec.Pid
			}
		}
		return pid > 0
	}) {
		t.Fatal("the agent never started")
	}
	return pid
}

// A pipe has no cursor: it is read once, whole, and nothing is remembered.
func TestDryRunReadsALogFromAPipe(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, nil, deployOpts{harness: "builtin"})
	d.appendLog(info(t0, "dispatch.started"),
		failure(t0.Add(time.Second), "dispatch.failed", "claude exited 1: open /tmp/x/dossier.md: no such file or directory"))
	logBytes, err := os.ReadFile(d.log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := d.command("run", "--dry-run", "--log", "-")
	cmd.Stdin = bytes.NewReader(logBytes) // exec feeds it through a pipe
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	if !strings.Contains(out.String(), "[self-diagnosed]") || !strings.Contains(errb.String(), "2 lines read") {
		t.Fatalf("the piped log was not scanned:\nstdout %s\nstderr %s", out.String(), errb.String())
	}
	if _, err := os.Stat(d.state); !os.IsNotExist(err) {
		t.Fatalf("a dry run over a pipe wrote state: %v", err)
	}
}

// notFiled is those of texts no issue on the fake GitHub quotes.
func notFiled(gh *fakegh.Server, texts ...string) []string {
	var bodies []string
	for _, is := range gh.Issues() {
		bodies = append(bodies, is.Body)
	}
	all := strings.Join(bodies, "\n")
	var lost []string
	for _, text := range texts {
		if !strings.Contains(all, text) {
			lost = append(lost, text)
		}
	}
	return lost
}

// Rotated twice between two scans: the file the cursor was in, the whole
// file rotated after it, then the new log — nothing in between is lost.
func TestTwoRotationsBetweenScansLoseNothing(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{maxPerDay: 10})
	d.appendLog(failure(t0, "dispatch.failed", "claude exited 1: open /tmp/x/dossier.md: no such file or directory"))
	d.mustRun("run")
	d.appendLog(failure(t0.Add(time.Minute), "git.push.failed", "remote rejected: protected branch hook declined"))
	written := time.Now().Add(-time.Hour) // the rotated files' modification times, in order
	rotate := func() {
		t.Helper()
		if _, err := os.Stat(d.log + ".1"); err == nil {
			if err := os.Rename(d.log+".1", d.log+".2"); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Rename(d.log, d.log+".1"); err != nil {
			t.Fatal(err)
		}
		// Later files get later modification times, set rather than waited
		// for (the file system's clock may not tick between two writes).
		written = written.Add(time.Minute)
		if err := os.Chtimes(d.log+".1", written, written); err != nil {
			t.Fatal(err)
		}
	}
	rotate()
	d.appendLog(failure(t0.Add(2*time.Minute), "queue.claim.failed", "lease expired before claim could be committed"))
	rotate()
	d.appendLog(failure(t0.Add(3*time.Minute), "pr.create.failed", "422 Validation Failed: a pull request already exists"))

	res := d.mustRun("run")
	for _, lost := range notFiled(gh, "dossier.md", "protected branch", "lease expired", "pull request already exists") {
		t.Errorf("the defect %q was lost across two rotations\n%s", lost, res.stderr)
	}
	d.mustRun("run")
	if n := gh.CountCreates(); n != 4 {
		t.Fatalf("%d issues after a rerun, want 4", n)
	}
}

// logrotate's copytruncate: the log is copied to a sibling, then truncated
// in place. The lines written since the last scan are in the copy only.
func TestCopytruncateRotationLosesNothing(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{maxPerDay: 10})
	d.appendLog(failure(t0, "dispatch.failed", "claude exited 1: open /tmp/x/dossier.md: no such file or directory"))
	d.mustRun("run")
	d.appendLog(failure(t0.Add(time.Minute), "git.push.failed", "remote rejected: protected branch hook declined"))
	b, err := os.ReadFile(d.log)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d.log+".1", b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(d.log, 0); err != nil {
		t.Fatal(err)
	}
	d.appendLog(failure(t0.Add(2*time.Minute), "queue.claim.failed", "lease expired before claim could be committed"))
	res := d.mustRun("run")
	if strings.Contains(res.stderr, "truncated") {
		t.Errorf("a copytruncate rotation is not a restart:\n%s", res.stderr)
	}
	for _, lost := range notFiled(gh, "protected branch", "lease expired") {
		t.Errorf("the defect %q was lost in a copytruncate rotation", lost)
	}
	d.mustRun("run")
	if n := gh.CountCreates(); n != 3 {
		t.Fatalf("%d issues after a rerun, want 3", n)
	}
}

// Progress is for a person at a terminal: a large backlog scanned by cron
// (stderr not a terminal) prints none.
func TestNoProgressWhenStderrIsNotATerminal(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, nil, deployOpts{harness: "builtin"})
	f, err := os.Create(d.log)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eventlog.Generate(f, eventlog.Options{Lines: 350_000, Seed: 9}); err != nil { // ~70 MB: over the progress threshold
		t.Fatal(err)
	}
	f.Close()
	res := d.run("run", "--dry-run")
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	if strings.Contains(res.stderr, "\r") || strings.Contains(res.stderr, "MiB") {
		t.Fatalf("progress printed although stderr is a pipe:\n%q", res.stderr[:min(len(res.stderr), 300)])
	}
}

// The same scan on a terminal shows it (script(1) provides the terminal).
func TestProgressOnATerminal(t *testing.T) {
	t.Parallel()
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) is not installed: no terminal to test progress on")
	}
	d := newDeployment(t, nil, deployOpts{harness: "builtin"})
	f, err := os.Create(d.log)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eventlog.Generate(f, eventlog.Options{Lines: 350_000, Seed: 9}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	cmd := exec.Command(script, "-qec", fmt.Sprintf("%s run --dry-run --config %s >/dev/null", binary, d.config), "/dev/null")
	cmd.Dir = d.dir
	cmd.Env = append(cleanEnv(), d.env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "\r") || !strings.Contains(string(out), "MiB") {
		t.Fatalf("no progress on a terminal:\n%q", string(out)[:min(len(out), 300)])
	}
}
