package stages

import (
	"context"
	"strings"

	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// Candidate reasons.
const (
	ReasonError  = "level:error"
	ReasonGiveUp = "give-up" // will_retry: false — the-loop stopped retrying
)

// SelectCandidate is the candidate policy: level "error", or a terminal
// give-up (will_retry false); never the tool's own diagnosis.* events, which
// it appends to the very log it reads.
func SelectCandidate(r pipeline.Record) (reason string, ok bool) {
	if strings.HasPrefix(r.Str("event"), "diagnosis.") {
		return "", false
	}
	if r.Str("level") == "error" {
		return ReasonError, true
	}
	if retry, present := r.Bool("will_retry"); present && !retry {
		return ReasonGiveUp, true
	}
	return "", false
}

// NewFilter is the filter stage. Besides candidates it passes along the
// success events the healing check correlates (Reason == ReasonSuccess);
// a nil triage passes candidates only.
func NewFilter(triage *TriageConfig) pipeline.Stage[pipeline.Record, pipeline.Candidate] {
	return pipeline.Map(func(_ context.Context, r pipeline.Record) (pipeline.Candidate, bool, error) {
		if reason, ok := SelectCandidate(r); ok {
			return pipeline.Candidate{Record: r, Reason: reason}, true, nil
		}
		if triage != nil && triage.IsSuccess(r) {
			return pipeline.Candidate{Record: r, Reason: ReasonSuccess}, true, nil
		}
		return pipeline.Candidate{}, false, nil
	})
}
