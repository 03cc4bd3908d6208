package test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	fakegh "github.com/the-loop/the-loop-diagnose/fakes/github"
)

// An agent run is charged to the daily budget before it starts: scans
// killed while their agent runs never let the budget spend more than its
// cap (here 2 of 5 defects), however often they are killed.
func TestKilledScansNeverOverspendTheDiagnosisBudget(t *testing.T) {
	t.Parallel()
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
		ended := false
		if !within(20*time.Second, 20*time.Millisecond, func() bool {
			select {
			case <-done:
				ended = true
				return true
			default:
				return agentRuns(t, record) > before
			}
		}) {
			cmd.Process.Kill()
			t.Fatalf("scan %d neither ran an agent nor ended\n%s", scan, stderr.String())
		}
		if !ended {
			cmd.Process.Kill()
			<-done
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
	t.Parallel()
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

// What a run cost, as claude reports it (total_cost_usd, usage), is kept,
// summed in status, and caps the day's runs: once the day's spend reaches
// maxAgentCostPerDay, the next defect waits for the spend to roll off.
func TestAgentCostIsRecordedShownAndCapped(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	// The fake agent prints claude's result envelope, cost and usage
	// included, when asked for --output-format json.
	d := newDeployment(t, gh, deployOpts{agentMode: "valid",
		harness: "command\n  command: [" + quote(fakeAgent) + `, --prompt-file, "{promptFile}", --output-format, json]`,
		extra:   "  maxAgentCostPerDay: 0.04\n  maxDiagnosesPerScan: 1\n"})
	d.appendLog(killDefects()[:2]...)
	at := t0.Add(time.Hour)
	for i := 0; i < 2; i++ {
		d.run("run", "--now", at.Add(time.Duration(i)*time.Minute).Format(time.RFC3339))
	}
	if n := gh.CountCreates(); n != 1 {
		t.Fatalf("%d issues, want 1: the second run is over the day's cost cap", n)
	}
	st := d.run("status", "--now", at.Add(2*time.Minute).Format(time.RFC3339))
	if !strings.Contains(st.stdout, "agent cost in the last 24 h: $0.0421 of $0.04 (1 runs, 6500 tokens in, 450 out)") {
		t.Fatalf("status does not show the cost:\n%s", st.stdout)
	}
	if !strings.Contains(st.stdout, "agent cost budget reached") {
		t.Fatalf("status does not say why the second defect waits:\n%s", st.stdout)
	}
	js := d.run("status", "--json", "--now", at.Add(2*time.Minute).Format(time.RFC3339))
	if !strings.Contains(js.stdout, `"agent_cost"`) || !strings.Contains(js.stdout, "0.0421") {
		t.Fatalf("status --json lacks the cost:\n%s", js.stdout)
	}
	// A day later the spend has rolled off: the second is filed.
	d.run("run", "--now", at.Add(25*time.Hour).Format(time.RFC3339))
	if n := gh.CountCreates(); n != 2 {
		t.Fatalf("%d issues a day later, want 2", n)
	}
}
