package stages

import (
	"context"
	"slices"
	"strings"

	"github.com/the-loop/the-loop-diagnose/fingerprint"
	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/redact"
)

// NewFingerprint gives each candidate its defect identity. The algorithm
// lives in package fingerprint, behind one call. With an incident index, a
// bare give-up takes the identity of the earlier failure of its incident
// (IncidentIndex.Link) and keeps its own only when there is none: items
// still leave in input order, one out per one in.
func NewFingerprint(fp *fingerprint.Fingerprinter, incidents *IncidentIndex) pipeline.Stage[pipeline.Candidate, pipeline.Occurrence] {
	keys := identityKeys{}
	return pipeline.Map(func(_ context.Context, c pipeline.Candidate) (pipeline.Occurrence, bool, error) {
		if c.Reason == ReasonSuccess { // not a failure: passed on for the healing check
			return pipeline.Occurrence{Candidate: c}, true, nil
		}
		if incidents != nil && IsBareGiveUp(c) {
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

// IdentityFields name who and where a record is about (its work item, its
// branch, the person or bot acting, the session, the machine, the working
// directory, one delivery): a value of one of them that reappears in the
// error text is volatile for the fingerprint (the same defect on another
// work item is the same defect). A field whose name ends in "id" (a
// request, trace or correlation id) is one too. Other fields are left out:
// a logger's or component's name ("logger":"payments") reappearing in its
// message names the defect, and masking it would merge two components'
// defects. Redaction masks every dropped field (RecordIdentity): there,
// masking too much is safe.
var IdentityFields = []string{
	"work_item", "repo", "repository", "full_name", "branch", "ref", "actor", "user", "username",
	"login", "sender", "author", "owner", "assignee", "committer", "requester", "tmux_target",
	"session", "cwd", "workdir", "working_dir", "dir", "home", "host", "hostname", "pod", "node",
	"container", "instance",
}

// IdentityOf is the record's identity as the fingerprint masks it: the
// values of its identity fields (identityField).
func IdentityOf(r pipeline.Record) redact.RecordIdentity { return identityKeys{}.identityOf(r) }

// identityKeys remembers identityField's answer per key: a log writes the
// same few keys on every record, and working the answer out anew was a
// fifth of the cost of a record's identity.
type identityKeys map[string]identityKey

type identityKey struct {
	name string
	ok   bool
}

// maxIdentityKeys bounds identityKeys for a log whose keys are data: it is
// emptied when full.
const maxIdentityKeys = 1024

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
	k, ok := m[key]
	if !ok {
		k.name, k.ok = identityField(key)
		if len(m) >= maxIdentityKeys {
			clear(m)
		}
		m[strings.Clone(key)] = k // not a slice of the record's line, which it would keep
	}
	return k.name, k.ok
}

// identityField tells whether key names identity, and under which of
// IdentityFields' names: one of them, an id field, or a key whose last word
// is one of them, as other loggers name them ("git_branch" is a branch,
// "userLogin" a login, "pod_name" and "host.name" the last word before a
// "name"), so the value is judged as that field's (a login is a person's
// name even when it reads as a word).
func identityField(key string) (string, bool) {
	if k := strings.ToLower(key); slices.Contains(IdentityFields, k) || isIDField(key) {
		return k, true
	}
	words := keyWords(key)
	if len(words) < 2 { // a one-word key was looked up whole above
		return "", false
	}
	last := words[len(words)-1]
	if last == "name" {
		last = words[len(words)-2]
	}
	return last, slices.Contains(IdentityFields, last)
}

func isIdentityField(key string) bool {
	_, ok := identityField(key)
	return ok
}

// keyWords splits a field name into lower-case words at '_', '-', '.' and
// a lower-to-upper case change.
func keyWords(key string) []string {
	var words []string
	start := 0
	for i := 0; i <= len(key); i++ {
		split := i == len(key) || key[i] == '_' || key[i] == '-' || key[i] == '.'
		camel := i > 0 && i < len(key) && key[i-1] >= 'a' && key[i-1] <= 'z' && key[i] >= 'A' && key[i] <= 'Z'
		if split || camel {
			if i > start {
				words = append(words, strings.ToLower(key[start:i]))
			}
			start = i
			if split {
				start = i + 1
			}
		}
	}
	return words
}

// isIDField: "id", "delivery_id", "request-id", "traceId", "spanID".
func isIDField(key string) bool {
	k := strings.ToLower(key)
	return k == "id" || strings.HasSuffix(k, "_id") || strings.HasSuffix(k, "-id") ||
		strings.HasSuffix(key, "Id") || strings.HasSuffix(key, "ID")
}
