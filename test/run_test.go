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

	"github.com/gofrs/flock"

	"github.com/the-loop/the-loop-diagnose/fingerprint"
)

func TestNewDefectFilesExactlyOneIssueAndARerunFilesNothing(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{})
	d.appendLog(info(t0, "dispatch.started"),
		failure(t0.Add(time.Second), "dispatch.failed", "claude exited 1: open /tmp/the-loop-8f3a1c/dossier.md: no such file or directory"),
		info(t0.Add(2*time.Second), "dispatch.succeeded"))
	res := d.run("run")
	if res.code != 0 {
		t.Fatalf("run exit %d\n%s", res.code, res.stderr)
	}
	issues := gh.Issues()
	if len(issues) != 1 {
		t.Fatalf("filed %d issues, want 1", len(issues))
	}
	is := issues[0]
	if !strings.HasPrefix(is.Title, "[self-diagnosed] ") || !strings.Contains(is.Body, "<!-- the-loop-diagnose fingerprint:") ||
		!strings.HasSuffix(strings.TrimSpace(is.Body), "<!-- the-loop:agent-comment -->") {
		t.Fatalf("issue lacks the title prefix or markers:\n%s\n%s", is.Title, is.Body)
	}
	if strings.Contains(is.Body, "acme/private") || strings.Contains(is.Body, "alice") {
		t.Fatalf("issue leaks a private field:\n%s", is.Body)
	}
	if len(is.Labels) != 1 || is.Labels[0] != "the-loop: self-diagnosed" {
		t.Errorf("labels = %v", is.Labels)
	}
	// One defect reported, and kept for the-loop under its own v1
	// fingerprint too (alias_of), so the-loop's scan would not file it again.
	if own, theLoop := reportedKinds(d); len(own) != 1 || len(theLoop) != 1 {
		t.Fatalf("state reported = %s", d.readState()["reported"])
	}
	if ev := d.events("diagnosis.posted"); len(ev) != 1 {
		t.Fatalf("diagnosis.posted events = %v", ev)
	}

	// A rerun: nothing new (the diagnosis.* events it appended are ignored).
	if res := d.run("run"); res.code != 0 {
		t.Fatalf("rerun exit %d\n%s", res.code, res.stderr)
	}
	// The same defect again, later, from a different run: still one issue.
	d.appendLog(failure(t0.Add(time.Hour), "dispatch.failed", "claude exited 1: open /tmp/the-loop-77aa02/dossier.md: no such file or directory"))
	if res := d.run("run"); res.code != 0 {
		t.Fatalf("third run exit %d\n%s", res.code, res.stderr)
	}
	if n := gh.CountCreates(); n != 1 {
		t.Fatalf("created %d issues over three runs, want 1", n)
	}
}

func TestRetriesWithVolatileTokensAreOneIssue(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{})
	for i := 0; i < 5; i++ {
		d.appendLog(failure(t0.Add(time.Duration(i)*time.Minute), "worker.crashed",
			fmt.Sprintf("worker pid %d crashed at 2026-11-28T09:%02d:13Z reading /home/user%d/.cache/the-loop/run-%x.json after 1.%ds",
				4000+i*17, i, i, 0xabc0+i, i), "attempts", fmt.Sprint(i)))
	}
	if res := d.run("run"); res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	if n := gh.CountCreates(); n != 1 {
		t.Fatalf("created %d issues for one defect seen 5 times, want 1", n)
	}
	if body := gh.Issues()[0].Body; !strings.Contains(body, "Occurrences: 5") {
		t.Fatalf("issue does not count the occurrences:\n%s", body)
	}
}

func TestDailyCapDefersTheFourthDefectUntilTheWindowMoves(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{maxPerDay: 3})
	for i, op := range []string{"push", "fetch", "clone", "rebase"} {
		d.appendLog(failure(t0.Add(time.Duration(i)*time.Second), "git.failed", "git "+op+" failed: exit status 128"))
	}
	now := t0.Add(time.Hour)
	res := d.run("run", "--now", now.Format(time.RFC3339))
	if res.code != 0 || gh.CountCreates() != 3 {
		t.Fatalf("first run: exit %d, %d issues, want 3\n%s", res.code, gh.CountCreates(), res.stderr)
	}
	deferred := d.stateMap("deferred")
	if len(deferred) != 1 {
		t.Fatalf("the 4th defect was not deferred: %v", deferred)
	}
	// Its dossier waits in a file of its own, not in the state every scan rewrites.
	dossiers := strings.TrimSuffix(d.state, ".json") + ".dossiers"
	for _, raw := range deferred {
		var entry struct {
			Dossier     string `json:"dossier"`
			DossierFile string `json:"dossier_file"`
		}
		json.Unmarshal(raw, &entry)
		b, err := os.ReadFile(filepath.Join(dossiers, entry.DossierFile))
		// All seen once: the most recent go first, so the oldest (push) waits.
		if entry.Dossier != "" || err != nil || !strings.Contains(string(b), "push") {
			t.Fatalf("deferred entry %s: dossier inline %q, file error %v", raw, entry.Dossier, err)
		}
	}
	// One diagnosis.deferred for the one deferred defect, in the-loop's
	// shape (fingerprint, trigger).
	if ev := d.events("diagnosis.deferred"); len(ev) != 1 || ev[0]["trigger"] != "git.failed" || ev[0]["fingerprint"] == nil {
		t.Fatalf("want one diagnosis.deferred for the deferred defect, got %v", ev)
	}
	// Still inside the window: nothing more.
	d.run("run", "--now", now.Add(12*time.Hour).Format(time.RFC3339))
	if gh.CountCreates() != 3 {
		t.Fatalf("filed past the cap inside the window: %d", gh.CountCreates())
	}
	// The window moved: the deferred defect is filed, though its lines lie
	// behind the read cursor.
	res = d.run("run", "--now", now.Add(25*time.Hour).Format(time.RFC3339))
	if res.code != 0 || gh.CountCreates() != 4 {
		t.Fatalf("after the window moved: exit %d, %d issues, want 4\n%s", res.code, gh.CountCreates(), res.stderr)
	}
	if len(d.stateMap("deferred")) != 0 {
		t.Fatalf("backlog not emptied: %v", d.stateMap("deferred"))
	}
	if left, _ := os.ReadDir(dossiers); len(left) != 0 {
		t.Fatalf("the filed defect's dossier file was left behind: %v", left)
	}
	last := gh.Issues()[3].Body
	if !strings.Contains(last, "git push") {
		t.Fatalf("the deferred issue lost its dossier:\n%s", last)
	}
}

// An agent whose answer is unusable for a dossier fails that defect: it is
// retried, and abandoned at its maxRetries-th failed run (3), as the-loop
// abandons it: each one was a paid run.
func TestGarbageAgentIsRetriedThenAbandonedAndNothingPosted(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{agentMode: "garbage"})
	d.appendLog(failure(t0, "dispatch.failed", "boom"))
	at := []time.Duration{time.Hour, 2 * time.Hour, 3 * time.Hour}
	for i, after := range at {
		res := d.run("run", "--now", t0.Add(after).Format(time.RFC3339))
		if res.code == 0 {
			t.Fatalf("run %d: exit 0 although the agent failed\n%s", i+1, res.stderr)
		}
		if !strings.Contains(res.stderr, "retried") && i < len(at)-1 {
			t.Errorf("run %d stderr lacks a summary: %s", i+1, res.stderr)
		}
		if abandoned := ownEntries(d, "abandoned") == 1; abandoned != (i == len(at)-1) {
			t.Fatalf("run %d: abandoned %v, want it at the third failed run: %s", i+1, abandoned, d.readState()["abandoned"])
		}
	}
	if gh.CountCreates() != 0 {
		t.Fatalf("posted %d issues from a garbage answer", gh.CountCreates())
	}
	// Abandoned: the next run does nothing and succeeds.
	if res := d.run("run", "--now", t0.Add(27*time.Hour).Format(time.RFC3339)); res.code != 0 {
		t.Fatalf("run after abandonment: exit %d\n%s", res.code, res.stderr)
	}
	if ev := d.events("diagnosis.failed"); len(ev) != len(at) || ev[0]["level"] != "warning" {
		t.Fatalf("diagnosis.failed events = %v", ev)
	}
	// retry brings it back with its dossier: filed once the agent answers.
	if res := d.run("retry", "--all-abandoned"); res.code != 0 || !strings.Contains(res.stdout, "back in the backlog") {
		t.Fatalf("retry: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if len(d.stateMap("abandoned")) != 0 || len(d.stateMap("deferred")) != 1 {
		t.Fatalf("after retry: abandoned %s deferred %s", d.readState()["abandoned"], d.readState()["deferred"])
	}
	d.env = append(d.env, "FAKE_AGENT_MODE=valid")
	if res := d.run("run", "--now", t0.Add(28*time.Hour).Format(time.RFC3339)); res.code != 0 || gh.CountCreates() != 1 {
		t.Fatalf("after retry: exit %d, %d issues\n%s", res.code, gh.CountCreates(), res.stderr)
	}
	if res := d.run("retry", "v3:0000000000000000"); res.code != 1 || !strings.Contains(res.stderr, "not abandoned") {
		t.Fatalf("retry of an unknown fingerprint: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}

func TestHeldLockSkipsTheScan(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{})
	d.appendLog(failure(t0, "dispatch.failed", "boom"))
	lock := flock.New(d.state + ".lock")
	if ok, err := lock.TryLock(); !ok || err != nil {
		t.Fatal("cannot take the lock", err)
	}
	defer lock.Unlock()
	res := d.run("run")
	if res.code != 0 || !strings.Contains(res.stderr, "skipping") {
		t.Fatalf("exit %d, stderr %q: want 0 and a skip message", res.code, res.stderr)
	}
	if gh.CountCreates() != 0 {
		t.Fatal("a skipped scan posted")
	}
}

func TestCorruptLinesAreCountedAndSkipped(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{})
	d.appendLog(`{"event":"broken",`, "not json at all", "", `[1,2]`, "{\"event\":\"x\",\"level\":\"error\",\"error\":\"\xff\"}",
		failure(t0, "dispatch.failed", "boom"))
	res := d.run("run")
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	if !strings.Contains(res.stderr, "5 corrupt") {
		t.Fatalf("stderr does not count 5 corrupt lines:\n%s", res.stderr)
	}
	if gh.CountCreates() != 1 {
		t.Fatalf("created %d issues, want 1 (the good line)", gh.CountCreates())
	}
}

func TestDryRunLeavesStateByteIdenticalAndPostsNothing(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{})
	d.appendLog(failure(t0, "dispatch.failed", "first defect"))
	d.run("run")
	d.appendLog(failure(t0.Add(time.Minute), "queue.failed", "second defect: queue full"))
	before, _ := os.ReadFile(d.state)
	logBefore, _ := os.ReadFile(d.log)
	res := d.run("run", "--dry-run")
	if res.code != 0 {
		t.Fatalf("dry run exit %d\n%s", res.code, res.stderr)
	}
	if !strings.Contains(res.stdout, "--- would file on acme/widgets ---") || !strings.Contains(res.stdout, "queue full") {
		t.Fatalf("dry run did not print the would-be issue:\n%s", res.stdout)
	}
	if strings.Contains(res.stdout, "first defect") {
		t.Fatal("dry run re-reported an already filed defect")
	}
	after, _ := os.ReadFile(d.state)
	logAfter, _ := os.ReadFile(d.log)
	if !bytes.Equal(before, after) || !bytes.Equal(logBefore, logAfter) {
		t.Fatal("dry run changed the state file or the event log")
	}
	if gh.CountCreates() != 1 {
		t.Fatal("dry run posted")
	}
}

func TestDisabledRefusesToPost(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, nil, deployOpts{})
	cfg, _ := os.ReadFile(d.config)
	os.WriteFile(d.config, bytes.Replace(cfg, []byte("enabled: true"), []byte(`enabled: "true"`), 1), 0o644)
	d.appendLog(failure(t0, "dispatch.failed", "boom"))
	res := d.run("run")
	if res.code != 2 || !strings.Contains(res.stderr, "selfDiagnosis.enabled") || !strings.Contains(res.stderr, "--dry-run") {
		t.Fatalf("exit %d, stderr %q", res.code, res.stderr)
	}
	if res := d.run("run", "--dry-run"); res.code != 0 || !strings.Contains(res.stdout, "would file") {
		t.Fatalf("dry run while disabled: exit %d\n%s", res.code, res.stderr)
	}
}

func TestMalformedConfigNamesTheKeyAndRunsNothing(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{})
	cfg, _ := os.ReadFile(d.config)
	os.WriteFile(d.config, bytes.Replace(cfg, []byte("maxIssuesPerDay: 3"), []byte("maxIssuesPerDay: lots"), 1), 0o644)
	d.appendLog(failure(t0, "dispatch.failed", "boom"))
	res := d.run("run")
	if res.code != 2 || !strings.Contains(res.stderr, "selfDiagnosis.maxIssuesPerDay") {
		t.Fatalf("exit %d, stderr %q", res.code, res.stderr)
	}
	if _, err := os.Stat(d.state); err == nil || gh.CountCreates() != 0 {
		t.Fatal("a bad config still ran")
	}
}

func TestSigtermDuringWatchLeavesAValidStateFile(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	runs := filepath.Join(t.TempDir(), "agent-runs.jsonl")
	d := newDeployment(t, gh, deployOpts{env: []string{"FAKE_AGENT_RECORD=" + runs}})
	d.appendLog(failure(t0, "dispatch.failed", "boom"))
	cmd := d.command("watch")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if !eventually(func() bool { return gh.CountCreates() > 0 }) {
		t.Fatalf("the first defect was not filed\n%s", stderr.String())
	}
	// New work arrives; stop while the watcher is scanning it: its agent
	// has started on the second defect.
	d.appendLog(failure(t0.Add(time.Minute), "queue.failed", "second defect"))
	if !eventually(func() bool { return agentRuns(t, runs) >= 2 }) {
		t.Fatalf("the watcher never scanned the second defect\n%s", stderr.String())
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("watch exited with %v after SIGTERM\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("watch did not exit after SIGTERM\n%s", stderr.String())
	}
	d.readState() // fails the test when not valid JSON
	if gh.CountCreates() < 1 {
		t.Fatal("watch filed nothing")
	}
	_ = exec.ErrNotFound
}

// A deployment switching from the-loop's own scan keeps its state file:
// defects the-loop reported (under its own, unversioned fingerprints) are
// not filed again, whichever of their occurrences the-loop had seen.
func TestSwitchingFromTheLoopNeverRefilesItsDefects(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{})
	// One defect to this tool; two to the-loop, whose normalizer keeps short
	// hex ids: it reported the second form.
	first := "git checkout abcdef failed: conflict in queue.py"
	second := "git checkout bcadfe failed: conflict in queue.py"
	if fingerprint.Legacy("dispatch.failed", first) == fingerprint.Legacy("dispatch.failed", second) {
		t.Fatal("the two forms must differ to the-loop for this test to mean anything")
	}
	state := fmt.Sprintf(`{"reported": {%q: "https://github.com/acme/widgets/issues/7"}, "abandoned": {}, "attempts": {}, "posted": [%q]}`,
		fingerprint.Legacy("dispatch.failed", second), t0.Format(time.RFC3339))
	if err := os.WriteFile(d.state, []byte(state), 0o644); err != nil {
		t.Fatal(err)
	}
	d.appendLog(failure(t0, "dispatch.failed", first), failure(t0.Add(time.Minute), "dispatch.failed", second),
		failure(t0.Add(2*time.Minute), "queue.failed", "a new defect"))
	if res := d.run("run"); res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	issues := gh.Issues()
	if len(issues) != 1 || !strings.Contains(issues[0].Body, "a new defect") {
		t.Fatalf("filed %d issues; want only the new defect (the-loop reported the other)", len(issues))
	}
	if _, ok := d.stateMap("reported")[fingerprint.Legacy("dispatch.failed", second)]; !ok {
		t.Fatal("the-loop's own entry was dropped from the state")
	}
}

// The agent reads text from a log that anyone may have written into: a
// prompt injection there must not find the GitHub token in its environment.
func TestTheAgentNeverGetsTheGitHubToken(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	runs := filepath.Join(t.TempDir(), "agent-runs.jsonl")
	d := newDeployment(t, gh, deployOpts{env: []string{"FAKE_AGENT_RECORD=" + runs, "GITHUB_TOKEN=another-token"}})
	d.appendLog(failure(t0, "dispatch.failed", "boom"))
	if res := d.run("run"); res.code != 0 || gh.CountCreates() != 1 {
		t.Fatalf("exit %d, %d issues\n%s", res.code, gh.CountCreates(), res.stderr)
	}
	b, err := os.ReadFile(runs)
	if err != nil {
		t.Fatal("the agent did not run")
	}
	var rec struct {
		GitHubToken bool `json:"github_token"`
	}
	if err := json.Unmarshal([]byte(strings.Split(string(b), "\n")[0]), &rec); err != nil || rec.GitHubToken {
		t.Fatalf("the agent's environment held a GitHub token (record %s)", b)
	}
}
