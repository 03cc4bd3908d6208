package test

import (
	"path/filepath"
	"testing"
	"time"

	fakegh "github.com/the-loop/the-loop-diagnose/fakes/github"
)

// An agent run is charged to the daily budget before it starts: scans
// killed while their agent runs never let the budget spend more than its
// cap (here 2 of 5 defects), however often they are killed.
func TestKilledScansNeverOverspendTheDiagnosisBudget(t *testing.T) {
	gh := newGitHub(t)
	record := filepath.Join(t.TempDir(), "runs.jsonl")
	d := newDeployment(t, gh, deployOpts{agentMode: "slow", env: []string{"FAKE_AGENT_RECORD=" + record},
		extra: "  maxDiagnosesPerDay: 2\n  maxDiagnosesPerScan: 5\n"})
	for i, e := range []string{"a", "b", "c", "d", "e"} {
		d.appendLog(failure(t0.Add(time.Duration(i)*time.Second), "job."+e+".failed", "job "+e+" crashed: nil map write in step "+e))
	}
	for scan := 1; scan <= 4; scan++ {
		before := agentRuns(t, record)
		cmd := d.command("run", "--now", t0.Add(time.Hour).Format(time.RFC3339))
		var stderr syncBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		// Kill it mid-diagnosis, or see it end by itself (no budget left).
		deadline := time.After(20 * time.Second)
	wait:
		for {
			select {
			case <-done:
				break wait
			case <-deadline:
				cmd.Process.Kill()
				t.Fatalf("scan %d neither ran an agent nor ended\n%s", scan, stderr.String())
			case <-time.After(20 * time.Millisecond):
				if agentRuns(t, record) > before {
					cmd.Process.Kill()
					<-done
					break wait
				}
			}
		}
	}
	if n := agentRuns(t, record); n != 2 {
		t.Fatalf("%d agent runs across killed scans, want the cap, 2", n)
	}
	if gh.CountCreates() != 0 {
		t.Fatalf("%d issues from runs that never finished", gh.CountCreates())
	}
}

// A diagnosis is paid for once: the answer is kept the moment it comes, so
// a post that fails (GitHub rejects the body once) or a rerun never runs
// the agent again for that defect.
func TestAFailedPostNeverPaysForTheDiagnosisAgain(t *testing.T) {
	gh := newGitHub(t)
	record := filepath.Join(t.TempDir(), "runs.jsonl")
	d := newDeployment(t, gh, deployOpts{env: []string{"FAKE_AGENT_RECORD=" + record}})
	d.appendLog(killDefects()[0])
	gh.Inject(fakegh.RouteCreateIssue, fakegh.Unprocessable("body is too long"))
	if res := d.run("run"); res.code != 1 {
		t.Fatalf("exit %d, want 1 for the rejected post\n%s", res.code, res.stderr)
	}
	res := d.run("run")
	if res.code != 0 || gh.CountCreates() != 1 {
		t.Fatalf("exit %d, %d issues\n%s", res.code, gh.CountCreates(), res.stderr)
	}
	if n := agentRuns(t, record); n != 1 {
		t.Fatalf("%d agent runs for one diagnosis, want 1", n)
	}
	if a := d.stateMap("answers"); len(a) != 0 {
		t.Fatalf("the kept answer outlived the filed issue: %v", a)
	}
}
