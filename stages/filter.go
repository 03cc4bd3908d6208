package stages

import (
	"context"

	"github.com/the-loop/the-loop-diagnose/logread"
	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// Candidate reasons (logread.Policy decides them).
const (
	ReasonError  = logread.ReasonError
	ReasonGiveUp = logread.ReasonGiveUp
)

// NewFilter is the filter stage: the policy's candidates and, besides them,
// the success events the healing check correlates (Reason ==
// ReasonSuccess); a nil triage passes candidates only, of the default policy.
func NewFilter(triage *TriageConfig, f *logread.Format) pipeline.Stage[pipeline.Record, pipeline.Candidate] {
	policy := logread.DefaultPolicy()
	if triage != nil {
		policy = triage.Policy
	}
	return pipeline.Map(func(_ context.Context, r pipeline.Record) (pipeline.Candidate, bool, error) {
		if reason, ok := policy.Select(r); ok {
			return pipeline.Candidate{Record: r, Reason: reason}, true, nil
		}
		if triage != nil && policy.IsSuccess(r, f) {
			return pipeline.Candidate{Record: r, Reason: ReasonSuccess}, true, nil
		}
		return pipeline.Candidate{}, false, nil
	})
}
