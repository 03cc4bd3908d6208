package stages

import (
	"context"
	"fmt"
	"time"

	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/stages/agent"
	"github.com/the-loop/the-loop-diagnose/stages/budget"
	"github.com/the-loop/the-loop-diagnose/stages/evidence"
	"github.com/the-loop/the-loop-diagnose/store"
)

// GateConfig configures the gate between diagnosis and filing.
type GateConfig struct {
	Store           *store.Store
	Now             func() time.Time
	MaxIssuesPerDay int
	Confidence      float64 // agent verdicts settle at or above this
	// Preview (a dry run) lets every finding through to be shown, marking
	// those the cap would hold back with Reason CapReason: an operator
	// deciding to opt in sees every diagnosis the scan made.
	Preview bool
}

// CapReason is why the daily issue cap held a defect back, in the-loop's
// words (the run's outcome line names the cap).
const CapReason = "daily issue cap reached"

// NewGate applies what can only be decided after diagnosis: a confident
// agent verdict of environment or transient whose evidence verifies against
// the dossier settles the finding (AgentSettlement, the one place an agent's
// verdict keeps a defect from a human);
// then the rolling 24 h issue cap lets through what it allows and defers the
// rest with their findings cached, so a later scan files them without
// running the agent again.
func NewGate(cfg GateConfig) pipeline.Stage[pipeline.Finding, pipeline.Finding] {
	return func(ctx context.Context, in <-chan pipeline.Finding, out chan<- pipeline.Finding) error {
		budget := cfg.issuesLeft()
		for f := range in {
			if f.Verdict == pipeline.VerdictNew {
				settle := AgentSettlement(f.Answer, f.Markdown, cfg.Confidence)
				switch {
				case f.Failure != "" || f.Answer == nil:
				case settle != nil:
					f.Verdict, f.Reason, f.Settle = pipeline.VerdictSettled, settle.Reason, settle
				case budget > 0:
					budget--
				case cfg.Preview:
					f.Reason = CapReason
				default:
					f.Verdict, f.Reason = pipeline.VerdictDeferred, CapReason
				}
			}
			if err := pipeline.Send(ctx, out, f); err != nil {
				return err
			}
		}
		return ctx.Err()
	}
}

// issuesLeft is what the daily issue cap still allows, by this
// deployment's own posts (an imported JSON state's too). The fleet-wide
// cap binds at the create (the post stage reserves with the intent): a
// count here would also hold the reservation of a create a crash
// interrupted, which its resume reuses.
func (cfg GateConfig) issuesLeft() (n int) {
	cfg.Store.View(func(st *store.State) {
		n = budget.Limits{MaxIssuesPerDay: cfg.MaxIssuesPerDay}.Usage(st, cfg.Now()).IssuesLeft()
	})
	return n
}

// HoldsBack reports whether the gate will defer d whatever the stages
// before it do: its answer came from an earlier scan (no agent run), that
// answer settles nothing, and the day's issue cap is used up by this
// deployment's own posts (so fleet-wide too: the fleet counts them). Such
// a defect is neither run nor filed this scan, so the fleet takes no
// claim on it: a watcher's every scan re-offered each capped defect of its
// backlog, at two commits (claim and release) apiece.
func (cfg GateConfig) HoldsBack(d pipeline.Dossier) bool {
	return d.Verdict == pipeline.VerdictNew && d.Wait == nil && d.Group.Finding != nil && cfg.issuesLeft() <= 0 &&
		AgentSettlement(d.Group.Finding, d.Markdown, cfg.Confidence) == nil // verifies evidence: last
}

// AgentSettlement settles on the agent's own verdict only when it is
// environment or transient, at least threshold confident, and every evidence
// item quotes the dossier (VerifyEvidence). Anything else — bug,
// inconclusive, a malformed verdict, no evidence, one invented quote — goes
// to a human: an agent that read hostile text must not be able to suppress
// a report by saying so.
func AgentSettlement(a *pipeline.Answer, dossier string, threshold float64) *pipeline.Settlement {
	if a == nil || a.Confidence == nil || *a.Confidence < threshold || *a.Confidence > 1 {
		return nil
	}
	var verdict pipeline.Settled
	switch a.Verdict {
	case "environment":
		verdict = pipeline.SettledEnvironment
	case "transient":
		verdict = pipeline.SettledTransient
	default:
		return nil
	}
	// The agent read the dossier as it was carried (a NUL shown as ␀).
	quotes, why := evidence.Verify(a.Evidence, agent.Carriable(dossier))
	if why != "" {
		return nil
	}
	return &pipeline.Settlement{Verdict: verdict,
		Reason:   fmt.Sprintf("the agent judged it %s with confidence %.2f, quoting the dossier", a.Verdict, *a.Confidence),
		Evidence: map[string]any{"agent_evidence": a.Evidence, "verified_quotes": quotes}}
}

// AgentSettledEarlier reports whether a settlement in force was made on an
// agent's verified verdict, so dedup does not run the agent again until it
// expires. One from a version that did not verify evidence does not count.
func AgentSettledEarlier(prev store.Settlement) bool {
	return prev.Evidence["agent_evidence"] != nil && prev.Evidence["verified_quotes"] != nil
}
