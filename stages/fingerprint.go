package stages

import (
	"context"
	"strings"

	"github.com/the-loop/the-loop-diagnose/fingerprint"
	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// NewFingerprint gives each candidate its defect identity. The algorithm
// lives in package fingerprint, behind one call. With an incident index, a
// bare give-up takes the identity of the earlier failure of its incident
// (IncidentIndex.Link) and keeps its own only when there is none: items
// still leave in input order, one out per one in.
func NewFingerprint(fp *fingerprint.Fingerprinter, incidents *IncidentIndex) pipeline.Stage[pipeline.Candidate, pipeline.Occurrence] {
	return pipeline.Map(func(_ context.Context, c pipeline.Candidate) (pipeline.Occurrence, bool, error) {
		if c.Reason == ReasonSuccess { // not a failure: passed on for the healing check
			return pipeline.Occurrence{Candidate: c}, true, nil
		}
		if incidents != nil && IsBareGiveUp(c) {
			if f, tmpl, aliases, ok := incidents.Link(c); ok {
				return pipeline.Occurrence{Candidate: c, Fingerprint: f, Template: tmpl, Aliases: aliases}, true, nil
			}
		}
		res := fp.Compute(fingerprint.Input{Event: c.Str("event"), Error: c.Str("error"), Fields: c.Fields})
		o := pipeline.Occurrence{
			Candidate:   c,
			Fingerprint: res.Fingerprint,
			Template:    res.Template,
			Aliases:     res.Aliases,
		}
		if incidents != nil && strings.TrimSpace(c.Str("error")) != "" {
			incidents.Note(o)
		}
		return o, true, nil
	})
}
