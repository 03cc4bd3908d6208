package budget

import (
	"testing"
	"time"

	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/store"
)

func stateWith(now time.Time, diagnosed, posted []time.Duration, costs ...float64) *store.State {
	st := store.NewState()
	for _, ago := range diagnosed {
		st.Diagnosed = append(st.Diagnosed, now.Add(-ago))
	}
	for _, ago := range posted {
		st.Posted = append(st.Posted, now.Add(-ago))
	}
	for _, usd := range costs {
		st.Costs = append(st.Costs, store.CostEntry{At: now.Add(-time.Hour), USD: usd})
	}
	return st
}

// What rolled out of the 24 h window no longer counts; the per-scan budget
// bounds what the day allows; a reached cost cap stops every run, saying so.
func TestDiagnosesLeftCountsOnlyTheWindow(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	l := Limits{MaxIssuesPerDay: 3, MaxDiagnosesPerScan: 5, MaxDiagnosesPerDay: 4, MaxAgentCostPerDay: 2}
	for _, c := range []struct {
		name      string
		st        *store.State
		left      int
		why       string
		issueLeft int
	}{
		{"empty", stateWith(now, nil, nil), 4, "diagnosis budget reached", 3},
		{"old runs roll off", stateWith(now, []time.Duration{25 * time.Hour, time.Hour}, []time.Duration{30 * time.Hour, time.Minute}), 3, "diagnosis budget reached", 2},
		{"day spent", stateWith(now, []time.Duration{1, 2, 3, 4, 5}, nil), -1, "diagnosis budget reached", 3},
		{"cost cap reached", stateWith(now, nil, nil, 1.5, 0.5), 0, "agent cost budget reached ($2.00 of maxAgentCostPerDay $2.00 in 24 h)", 3},
		{"cost below cap", stateWith(now, nil, nil, 1.5), 4, "diagnosis budget reached", 3},
	} {
		u := l.Usage(c.st, now)
		left, why := u.DiagnosesLeft()
		if left != c.left || why != c.why || u.IssuesLeft() != c.issueLeft {
			t.Errorf("%s: left %d %q, issues left %d; want %d %q, %d", c.name, left, why, u.IssuesLeft(), c.left, c.why, c.issueLeft)
		}
	}
	perScan := Limits{MaxDiagnosesPerScan: 2, MaxDiagnosesPerDay: 20}
	if left, _ := perScan.Usage(stateWith(now, nil, nil), now).DiagnosesLeft(); left != 2 {
		t.Errorf("per-scan budget: left %d, want 2", left)
	}
	noCap := Limits{MaxDiagnosesPerScan: 2, MaxDiagnosesPerDay: 20}
	if u := noCap.Usage(stateWith(now, nil, nil, 1000), now); u.CostReached() || u.Cost.USD != 1000 {
		t.Errorf("no cost cap: reached %v, cost %v", u.CostReached(), u.Cost.USD)
	}
}

// A run charged before it started is refunded when it did not happen (the
// agent was down); one that ran stays charged once; a run nobody charged
// is counted when its outcome comes; the reported cost is added.
func TestAccountRefundsARunThatDidNotHappen(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	s := store.OpenMemory()
	charge := ChargeRun(s, func() time.Time { return now })
	for _, fp := range []string{"v3:down", "v3:ran"} {
		if err := charge(pipeline.Dossier{Group: pipeline.Group{Fingerprint: fp}}); err != nil {
			t.Fatal(err)
		}
	}
	var st *store.State
	s.View(func(v *store.State) { st = v })
	if n := len(st.Diagnosed); n != 2 {
		t.Fatalf("charged %d runs, want 2", n)
	}
	outcome := func(fp string, ran bool, wait *pipeline.Wait, cost *pipeline.Cost) pipeline.Outcome {
		var o pipeline.Outcome
		o.Fingerprint, o.AgentRan, o.Wait, o.Cost = fp, ran, wait, cost
		return o
	}
	later := now.Add(time.Minute)
	Account(st, outcome("v3:down", false, &pipeline.Wait{For: "agent", Reason: "down"}, nil), later)
	Account(st, outcome("v3:ran", true, nil, &pipeline.Cost{USD: 0.25, InputTokens: 10}), later)
	Account(st, outcome("v3:uncharged", true, nil, nil), later)
	if n := len(st.Diagnosed); n != 2 {
		t.Errorf("after accounting: %d runs charged, want 2 (one refunded, one counted late)", n)
	}
	if len(st.Charged) != 0 {
		t.Errorf("charges left open: %v", st.Charged)
	}
	u := Limits{MaxDiagnosesPerDay: 20, MaxDiagnosesPerScan: 20}.Usage(st, later)
	if u.Cost.USD != 0.25 || u.Cost.Runs != 1 || st.CostTotal.InputTokens != 10 {
		t.Errorf("cost %+v, total %+v", u.Cost, st.CostTotal)
	}
	Prune(st, later.Add(Window+time.Second))
	if len(st.Diagnosed) != 0 || len(st.Costs) != 0 {
		t.Errorf("past the window: %d runs, %d costs kept", len(st.Diagnosed), len(st.Costs))
	}
}
