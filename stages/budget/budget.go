// Package budget holds the caps on what a deployment spends and their one
// rolling window: issues filed, agent runs (per scan and per day) and the
// agents' reported cost per day. Dedup asks it how many diagnoses are left,
// the gate how many issues, the agent stage charges each run through it,
// persist settles each charge and adds each cost, and status reports its
// Usage. The fleet-wide claims and reservations (FleetScan, fleet.go) count against the
// same Window in the shared store.
//
// A budget is never overspent: a run is charged, durably, right before it
// starts (ChargeRun), so no crash, kill or abort lets it spend past its cap;
// Account refunds a run that did not happen once its outcome is known.
package budget

import (
	"fmt"
	"time"

	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/store"
)

// Window is the rolling period of every daily cap (and of the flaky count:
// heals within it).
const Window = 24 * time.Hour

// Limits are the caps. The config (selfDiagnosis.maxIssuesPerDay,
// maxDiagnosesPerScan, maxDiagnosesPerDay, maxAgentCostPerDay) sets them.
type Limits struct {
	MaxIssuesPerDay     int // issues this deployment files per Window
	MaxDiagnosesPerScan int // agent runs one scan may start
	MaxDiagnosesPerDay  int // agent runs per Window
	// MaxAgentCostPerDay is the agents' spend (USD, as their harnesses
	// report it) per Window; 0 means no cap.
	MaxAgentCostPerDay float64
}

// Usage is what this deployment's state records as spent in the Window
// before a moment, beside the limits it is spent against.
type Usage struct {
	Limits
	Issues    int             // issues filed by this deployment
	Diagnoses int             // agent runs charged
	Cost      store.CostTotal // the agents' reported spend
}

// Usage reads what st records as spent in the Window before now.
func (l Limits) Usage(st *store.State, now time.Time) Usage {
	since := now.Add(-Window)
	return Usage{Limits: l, Issues: st.PostedSince(since), Diagnoses: store.CountSince(st.Diagnosed, since),
		Cost: st.CostSince(since)}
}

// IssuesLeft is what the daily issue cap still allows (≤ 0: none).
func (u Usage) IssuesLeft() int { return u.MaxIssuesPerDay - u.Issues }

// CostReached reports whether the day's agent spend has reached its cap.
func (u Usage) CostReached() bool {
	return u.MaxAgentCostPerDay > 0 && u.Cost.USD >= u.MaxAgentCostPerDay
}

// DiagnosesLeft is how many agent runs this scan may still start, and why
// the rest wait: the daily diagnosis budget, or none at all once the day's
// spend has reached the cost cap (until it rolls off), never more than the
// per-scan budget.
func (u Usage) DiagnosesLeft() (n int, why string) {
	n, why = u.MaxDiagnosesPerDay-u.Diagnoses, DiagnosesReason
	if u.CostReached() {
		n, why = 0, CostReason(u.Cost.USD, u.MaxAgentCostPerDay, "")
	}
	return min(n, u.MaxDiagnosesPerScan), why
}

// DiagnosesReason is why a defect waits for the daily diagnosis budget.
const DiagnosesReason = "diagnosis budget reached"

// CostReason is why a defect waits once the day's agent spend (usd) has
// reached the cap; scope says whose spend (", fleet-wide") or is "".
func CostReason(usd, limit float64, scope string) string {
	return fmt.Sprintf("agent cost budget reached ($%.2f of maxAgentCostPerDay $%.2f in 24 h%s)", usd, limit, scope)
}

// ChargeRun returns the agent stage's BeforeRun: the run is written to
// the daily budget's record, durably, before the agent starts.
func ChargeRun(st *store.Store, now func() time.Time) func(pipeline.Dossier) error {
	return func(d pipeline.Dossier) error {
		at := now()
		return st.Update(func(s *store.State) error {
			s.Diagnosed = append(s.Diagnosed, at)
			s.Charged[d.Fingerprint] = at
			return nil
		})
	}
}

// Account records an outcome's spend in st once the outcome is known: a
// run charged before it started stays charged; one that did not happen
// (the agent was down) is refunded; a run nobody charged (a caller
// without ChargeRun) is counted now; the cost the agent reported is added
// to the day's and the all-time total.
func Account(st *store.State, o pipeline.Outcome, now time.Time) {
	at, charged := st.Charged[o.Fingerprint]
	delete(st.Charged, o.Fingerprint)
	switch {
	case charged && !o.AgentRan && o.Wait != nil:
		for i, t := range st.Diagnosed {
			if t.Equal(at) {
				st.Diagnosed = append(st.Diagnosed[:i], st.Diagnosed[i+1:]...)
				break
			}
		}
	case !charged && o.AgentRan:
		st.Diagnosed = append(st.Diagnosed, now)
	}
	if c := o.Cost; c != nil {
		st.Costs = append(st.Costs, store.CostEntry{At: now, Fingerprint: o.Fingerprint, USD: c.USD,
			InputTokens: c.InputTokens, OutputTokens: c.OutputTokens})
		t := &st.CostTotal
		t.Runs, t.USD, t.InputTokens, t.OutputTokens = t.Runs+1, t.USD+c.USD, t.InputTokens+c.InputTokens, t.OutputTokens+c.OutputTokens
	}
}

// Prune drops from st the spend the Window no longer counts.
func Prune(st *store.State, now time.Time) { st.PrunePosted(now.Add(-Window)) }
