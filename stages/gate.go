package stages

import (
	"context"
	"time"

	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/store"
)

// GateConfig configures the gate between diagnosis and filing.
type GateConfig struct {
	Store           *store.Store
	Now             func() time.Time
	MaxIssuesPerDay int
	Confidence      float64 // agent verdicts settle at or above this
}

// NewGate applies what can only be decided after diagnosis: a confident,
// evidenced agent verdict of environment or transient settles the finding;
// then the rolling 24 h issue cap lets through what it allows and defers the
// rest with their findings cached, so a later scan files them without
// running the agent again.
func NewGate(cfg GateConfig) pipeline.Stage[pipeline.Finding, pipeline.Finding] {
	return func(ctx context.Context, in <-chan pipeline.Finding, out chan<- pipeline.Finding) error {
		var budget int
		cfg.Store.View(func(st *store.State) {
			budget = cfg.MaxIssuesPerDay - st.PostedSince(cfg.Now().Add(-Window))
		})
		for f := range in {
			if f.Verdict == pipeline.VerdictNew {
				settle := AgentSettlement(f.Answer, cfg.Confidence)
				switch {
				case f.Failure != "" || f.Answer == nil:
				case settle != nil:
					f.Verdict, f.Reason, f.Settle = pipeline.VerdictSettled, settle.Reason, settle
				case budget > 0:
					budget--
				default:
					f.Verdict, f.Reason = pipeline.VerdictDeferred, "daily issue cap reached"
				}
			}
			if err := pipeline.Send(ctx, out, f); err != nil {
				return err
			}
		}
		return ctx.Err()
	}
}
