package stages

import (
	"context"

	"github.com/the-loop/the-loop-diagnose/fingerprint"
	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// NewFingerprint gives each candidate its defect identity. The algorithm
// lives in package fingerprint, behind one call.
func NewFingerprint(fp *fingerprint.Fingerprinter) pipeline.Stage[pipeline.Candidate, pipeline.Occurrence] {
	return pipeline.Map(func(_ context.Context, c pipeline.Candidate) (pipeline.Occurrence, bool, error) {
		if c.Reason == ReasonSuccess { // not a failure: passed on for the healing check
			return pipeline.Occurrence{Candidate: c}, true, nil
		}
		res := fp.Compute(fingerprint.Input{Event: c.Str("event"), Error: c.Str("error"), Fields: c.Fields})
		return pipeline.Occurrence{
			Candidate:   c,
			Fingerprint: res.Fingerprint,
			Template:    res.Template,
			Aliases:     res.Aliases,
		}, true, nil
	})
}
