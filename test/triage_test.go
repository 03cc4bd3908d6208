package test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func record(fields map[string]any) string {
	b, _ := json.Marshal(fields)
	return string(b)
}

// ledger is the settlement ledger, as `state export --format ledger`
// prints it from the store.
func ledger(t *testing.T, d *deployment) []map[string]any {
	t.Helper()
	r := d.run("state", "export", "--format", "ledger")
	if r.code != 0 {
		t.Fatalf("state export --format ledger: exit %d\n%s", r.code, r.stderr)
	}
	var out []map[string]any
	if strings.TrimSpace(r.stdout) == "" {
		return nil
	}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("ledger line is not JSON: %q", line)
		}
		out = append(out, m)
	}
	return out
}

func TestMachineSettlesWhatItCanAndOnlyTheRealDefectReachesAHuman(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{})
	ts := func(s int) string { return t0.Add(time.Duration(s) * time.Second).Format(time.RFC3339Nano) }
	d.appendLog(
		// A transient: retried, then the same work item succeeded.
		record(map[string]any{"ts": ts(1), "event": "dispatch.failed", "level": "error", "will_retry": true,
			"work_item": "acme/w#1", "error": "queue timeout after 30s"}),
		record(map[string]any{"ts": ts(9), "event": "dispatch.succeeded", "level": "info", "work_item": "acme/w#1"}),
		// The operator's environment.
		record(map[string]any{"ts": ts(3), "event": "agent.failed", "level": "error", "will_retry": false,
			"error": `exec: "claude": executable file not found in $PATH`}),
		// A real defect.
		record(map[string]any{"ts": ts(4), "event": "scheduler.crashed", "level": "error",
			"error": "panic: assignment to entry in nil map"}),
	)
	res := d.run("run")
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	issues := gh.Issues()
	if len(issues) != 1 || !strings.Contains(issues[0].Body, "nil map") {
		t.Fatalf("want exactly the real defect filed, got %d issues", len(issues))
	}
	if !strings.Contains(res.stderr, "settled locally") || !strings.Contains(res.stderr, "executable is missing") {
		t.Errorf("the operator is not told about the environment failure:\n%s", res.stderr)
	}
	entries := ledger(t, d)
	verdicts := map[string]bool{}
	for _, e := range entries {
		verdicts[e["verdict"].(string)] = true
		if e["evidence"] == nil || e["tool_version"] == "" || e["time"] == "" {
			t.Errorf("ledger entry lacks evidence, time or version: %v", e)
		}
	}
	if len(entries) != 2 || !verdicts["healed"] || !verdicts["environment"] {
		t.Fatalf("ledger = %v", entries)
	}
	var envEvent map[string]any
	for _, e := range d.events("diagnosis.settled") {
		if e["verdict"] == "environment" {
			envEvent = e
		}
	}
	if envEvent == nil || envEvent["level"] != "warning" {
		t.Fatalf("no diagnosis.settled warning for the environment failure: %v", d.events("diagnosis.settled"))
	}
	status := d.run("status")
	if !strings.Contains(status.stdout, "environment: an executable is missing") || !strings.Contains(status.stdout, "healed") {
		t.Fatalf("status does not show the settlements:\n%s", status.stdout)
	}
	// A rerun settles nothing twice.
	d.run("run")
	if n := len(ledger(t, d)); n != 2 {
		t.Fatalf("ledger grew to %d on a rerun with nothing new", n)
	}
}

func TestAgentVerdictsSettleOnlyWhenConfidentWithEvidence(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, verdict, confidence, evidence string
		filed                               bool
	}{
		{"confident environment quoting the dossier", "environment", "0.9", "[\"line 1: `the worker returned an unexpected payload`\"]", false},
		{"confident environment with an invented quote", "environment", "0.99", "[\"`ENOSPC: no space left on device on /var`\"]", true},
		{"low confidence", "environment", "0.5", `["line 1"]`, true},
		{"no evidence", "transient", "0.95", `[]`, true},
		{"a bug", "bug", "0.99", `["line 1"]`, true},
		{"malformed verdict", "maybe?", "0.99", `["line 1"]`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			gh := newGitHub(t)
			d := newDeployment(t, gh, deployOpts{agentMode: "verdict", env: []string{
				"FAKE_AGENT_VERDICT=" + tc.verdict, "FAKE_AGENT_CONFIDENCE=" + tc.confidence, "FAKE_AGENT_EVIDENCE=" + tc.evidence}})
			d.appendLog(failure(t0, "dispatch.failed", "the worker returned an unexpected payload"))
			if res := d.run("run"); res.code != 0 {
				t.Fatalf("exit %d\n%s", res.code, res.stderr)
			}
			if filed := gh.CountCreates() == 1; filed != tc.filed {
				t.Fatalf("filed = %v, want %v", filed, tc.filed)
			}
		})
	}
}

func TestAFloodOfOneEventTypeCannotStarveAnother(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{maxPerDay: 3})
	for i := 0; i < 40; i++ {
		d.appendLog(failure(t0.Add(time.Duration(i)*time.Second), "dispatch.failed",
			fmt.Sprintf("handler %s failed", strings.Repeat(string(rune('a'+i%26)), 1+i/26))))
	}
	d.appendLog(failure(t0.Add(time.Hour), "git.push_failed", "git push rejected: non-fast-forward"))
	if res := d.run("run"); res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	issues := gh.Issues()
	if len(issues) != 3 {
		t.Fatalf("filed %d, want 3 (the cap)", len(issues))
	}
	found := false
	for _, is := range issues {
		found = found || strings.Contains(is.Body, "non-fast-forward")
	}
	if !found {
		t.Fatal("the lone git.push_failed defect was starved by the flood")
	}
	// One diagnosis.deferred per deferred defect (the-loop's shape), each
	// named once.
	ev := d.events("diagnosis.deferred")
	seen := map[any]bool{}
	for _, e := range ev {
		seen[e["fingerprint"]] = true
	}
	if len(ev) == 0 || len(seen) != len(ev) || len(ev) != len(d.stateMap("deferred")) {
		t.Fatalf("want one diagnosis.deferred per deferred defect (%d), got %d", len(d.stateMap("deferred")), len(ev))
	}
}

func TestADiagnosedButCappedFindingIsFiledNextDayWithoutAnotherAgentRun(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	runs := filepath.Join(t.TempDir(), "agent-runs.jsonl")
	d := newDeployment(t, gh, deployOpts{maxPerDay: 3, env: []string{"FAKE_AGENT_RECORD=" + runs}})
	for i, op := range []string{"push", "fetch", "clone", "rebase"} {
		d.appendLog(failure(t0.Add(time.Duration(i)*time.Second), "git.failed", "git "+op+" failed: exit status 128"))
	}
	now := t0.Add(time.Hour)
	d.run("run", "--now", now.Format(time.RFC3339))
	countRuns := func() int {
		b, _ := os.ReadFile(runs)
		return strings.Count(string(b), "\n")
	}
	if gh.CountCreates() != 3 || countRuns() != 4 {
		t.Fatalf("first day: %d issues, %d agent runs; want 3 and 4 (all diagnosed, one capped)", gh.CountCreates(), countRuns())
	}
	res := d.run("run", "--now", now.Add(25*time.Hour).Format(time.RFC3339))
	if res.code != 0 || gh.CountCreates() != 4 {
		t.Fatalf("next day: exit %d, %d issues\n%s", res.code, gh.CountCreates(), res.stderr)
	}
	if countRuns() != 4 {
		t.Fatalf("the agent ran again (%d runs) for a finding already diagnosed", countRuns())
	}
}
