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

// NewFilter is the filter stage.
func NewFilter() pipeline.Stage[pipeline.Record, pipeline.Candidate] {
	return pipeline.Map(func(_ context.Context, r pipeline.Record) (pipeline.Candidate, bool, error) {
		reason, ok := SelectCandidate(r)
		return pipeline.Candidate{Record: r, Reason: reason}, ok, nil
	})
}
