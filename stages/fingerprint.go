package stages

import (
	"context"
	"strings"

	"github.com/the-loop/the-loop-diagnose/fingerprint"
	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/redact"
	"github.com/the-loop/the-loop-diagnose/stages/incident"
)

// NewFingerprint gives each candidate its defect identity. The algorithm
// lives in package fingerprint, behind one call. With an incident index, a
// bare give-up takes the identity of the earlier failure of its incident
// (incident.Index.Link) and keeps its own only when there is none: items
// still leave in input order, one out per one in.
func NewFingerprint(fp *fingerprint.Fingerprinter, incidents *incident.Index) pipeline.Stage[pipeline.Candidate, pipeline.Occurrence] {
	keys := identityKeys{}
	return pipeline.Map(func(_ context.Context, c pipeline.Candidate) (pipeline.Occurrence, bool, error) {
		if c.Reason == ReasonSuccess { // not a failure: passed on for the healing check
			return pipeline.Occurrence{Candidate: c}, true, nil
		}
		if incidents != nil && incident.IsBareGiveUp(c) {
			if f, tmpl, aliases, ok := incidents.Link(c); ok {
				return pipeline.Occurrence{Candidate: c, Fingerprint: f, Template: tmpl, Aliases: aliases}, true, nil
			}
		}
		errText := c.Str("error")
		id, values := keys.identityAndValues(c.Record)
		res := fp.Compute(fingerprint.Input{Event: c.Str("event"), Error: errText, Fields: c.Fields,
			Identity: id.Find(errText), Values: values})
		o := pipeline.Occurrence{
			Candidate:   c,
			Fingerprint: res.Fingerprint,
			Template:    res.Template,
			Aliases:     res.Aliases,
		}
		if incidents != nil && strings.TrimSpace(errText) != "" {
			incidents.Note(o)
		}
		return o, true, nil
	})
}

// IdentityOf is the record's identity as the fingerprint masks it: the
// values of its identity fields (incident.IdentityField).
func IdentityOf(r pipeline.Record) redact.RecordIdentity { return identityKeys{}.identityOf(r) }

// identityKeys is incident.IdentityKeys, with the record's identity read
// through it.
type identityKeys incident.IdentityKeys

func (m identityKeys) identityOf(r pipeline.Record) redact.RecordIdentity {
	id, _ := m.identityAndValues(r)
	return id
}

// identityAndValues is the record's identity and the raw values of its
// identity fields (fingerprint.Input.Values).
func (m identityKeys) identityAndValues(r pipeline.Record) (redact.RecordIdentity, []string) {
	var id redact.RecordIdentity
	var values []string
	for _, f := range r.Fields {
		if v, ok := f.Value.(string); ok {
			if key, ok := m.field(f.Key); ok {
				id.Add(key, v)
				values = append(values, v)
			}
		}
	}
	return id, values
}

func (m identityKeys) field(key string) (string, bool) {
	return incident.IdentityKeys(m).Field(key)
}
