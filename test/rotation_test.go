package test

import (
	"os"
	"strings"
	"testing"
	"time"
)

// copytruncate copies the live log to a sibling and truncates it in place
// (same inode). the-loop writing past the old cursor before the next scan
// used to read as "replaced": the copy's unread lines were never read.
func copytruncate(t *testing.T, log, copyName string) {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(copyName, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(log, 0); err != nil {
		t.Fatal(err)
	}
}

func TestCopytruncateThenRegrowthPastTheCursorFilesEveryDefectOnce(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{maxPerDay: 10})
	d.appendLog(failure(t0, "dispatch.failed", "claude exited 1: open /tmp/x/dossier.md: no such file or directory"))
	d.mustRun("run")
	// Read by no scan yet: in the copy only, after the cursor.
	d.appendLog(failure(t0.Add(time.Minute), "git.push.failed", "remote rejected: protected branch hook declined"),
		failure(t0.Add(2*time.Minute), "pr.create.failed", "422 Validation Failed: a pull request already exists"))
	copytruncate(t, d.log, d.log+"-20261202")
	// The live file grows well past the old cursor before the next scan.
	d.appendLog(failure(t0.Add(3*time.Minute), "queue.claim.failed", "lease expired before claim could be committed"),
		failure(t0.Add(4*time.Minute), "worktree.create.failed", "fatal: a branch named 'loop/7' already exists"),
		failure(t0.Add(5*time.Minute), "webhook.verify.failed", "signature mismatch for delivery"))
	if fi, _ := os.Stat(d.log); fi.Size() <= int64(d.cursor()["offset"].(float64)) {
		t.Fatalf("the live log (%d bytes) must outgrow the old cursor %v for this test to mean anything", fi.Size(), d.cursor()["offset"])
	}

	res := d.mustRun("run")
	if strings.Contains(res.stderr, "beginning") || strings.Contains(res.stderr, "missed") {
		t.Errorf("a copytruncate rotation is not a restart:\n%s", res.stderr)
	}
	for _, lost := range notFiled(gh, "dossier.md", "protected branch", "pull request already exists",
		"lease expired", "already exists", "signature mismatch") {
		t.Errorf("the defect %q was lost in a copytruncate rotation\n%s", lost, res.stderr)
	}
	d.mustRun("run")
	for fp, issues := range fingerprintsOnGitHub(gh) {
		if len(issues) != 1 {
			t.Errorf("defect %s has issues %v, want exactly one", fp, issues)
		}
	}
	if n := gh.CountCreates(); n != 6 {
		t.Fatalf("%d issues after a rerun, want 6", n)
	}
}

// A log rewritten in place with no copy of its old bytes anywhere: read
// from the beginning, and say on stderr which file and that lines may have
// been missed.
func TestALogReplacedWithoutACopyIsReadFromTheStartWithAWarning(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{maxPerDay: 10})
	d.appendLog(failure(t0, "dispatch.failed", "claude exited 1: open /tmp/x/dossier.md: no such file or directory"))
	d.mustRun("run")
	os.Truncate(d.log, 0)
	d.appendLog(failure(t0.Add(time.Hour), "git.push.failed", "remote rejected: protected branch hook declined"),
		failure(t0.Add(time.Hour+time.Minute), "queue.claim.failed", "lease expired before claim could be committed"))
	res := d.mustRun("run")
	if !strings.Contains(res.stderr, d.log) || !strings.Contains(res.stderr, "may have been missed") {
		t.Errorf("no warning naming the log and the possible loss:\n%s", res.stderr)
	}
	for _, lost := range notFiled(gh, "protected branch", "lease expired") {
		t.Errorf("the defect %q in the rewritten log was not read from its start", lost)
	}
	if n := gh.CountCreates(); n != 3 {
		t.Fatalf("%d issues, want 3", n)
	}
}

// A sibling named like the log whose first bytes are not the ones the
// cursor remembers is some other file: it is not read as the copy.
func TestASiblingThatIsNotTheCopyIsNotRead(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{maxPerDay: 10})
	d.appendLog(failure(t0, "dispatch.failed", "claude exited 1: open /tmp/x/dossier.md: no such file or directory"))
	d.mustRun("run")
	other := failure(t0.Add(-48*time.Hour), "archive.failed", "from another month's log") + "\n" +
		failure(t0.Add(-47*time.Hour), "archive.failed", "padding so this one is longer than the cursor") + "\n"
	if err := os.WriteFile(d.log+".1", []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Truncate(d.log, 0)
	d.appendLog(failure(t0.Add(time.Hour), "git.push.failed", "remote rejected: protected branch hook declined"),
		failure(t0.Add(time.Hour+time.Minute), "queue.claim.failed", "lease expired before claim could be committed"))
	res := d.mustRun("run")
	if !strings.Contains(res.stderr, "may have been missed") {
		t.Errorf("no warning:\n%s", res.stderr)
	}
	if lost := notFiled(gh, "another month"); len(lost) == 0 {
		t.Errorf("a sibling with other first bytes was read as the log's copy")
	}
	for _, lost := range notFiled(gh, "protected branch", "lease expired") {
		t.Errorf("the defect %q was lost", lost)
	}
}
