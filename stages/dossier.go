package stages

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/the-loop/the-loop-diagnose/logread"
	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/redact"
	"github.com/the-loop/the-loop-diagnose/stages/group"
	"github.com/the-loop/the-loop-diagnose/stages/source"
)

// DossierFields is the allow-list: nothing else from a record ever leaves the
// machine (never work_item, cwd, delivery_id or any unlisted field). It is
// logread.DossierFields: the canonical record's fields, which every format
// maps its own onto, and the-loop's safe ones.
var DossierFields = logread.DossierFields

// What of the log leaves the machine, for the agent and for the issue
// alike: one dossier, built once, quoted whole in the prompt and as the
// body's Evidence, so the model provider never reads more of the log than
// the public does (the-loop's boundary, and its limits: DOSSIER_MAX_CHARS,
// ERROR_MAX_CHARS). Raise them together here if a diagnosis needs more.
const (
	DossierMaxChars = 6000 // the evidence, the Source section aside (SourceSectionBytes)
	MaxErrorChars   = 800  // the error text quoted, and any one record
)

// Evidence bounds within DossierMaxChars.
const (
	dossierMaxSamples    = 3  // sample records quoted
	composeMaxValues     = 8  // distinct values shown per field
	composeMaxValueChars = 60 // one value shown in the distinct-values list
)

// DossierConfig configures the dossier stage.
type DossierConfig struct {
	Scrubber    *redact.Redactor
	ToolVersion string
	// Load reads a backlog defect's saved dossier (store.LoadDossier).
	Load func(name string) (string, error)
	Now  func() time.Time // default time.Now
	// Source, when set (selfDiagnosis.sourcePath), adds the Source section:
	// the lines of the service's source the evidence points at.
	Source *source.Finder
}

// NewDossier builds the scrubbed, allow-listed report of each group that
// still needs work; other groups pass through with an empty dossier.
func NewDossier(cfg DossierConfig) pipeline.Stage[pipeline.Group, pipeline.Dossier] {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	env := Environment(cfg.ToolVersion)
	// Dossiers are built once the log is read (dedup is a barrier): each
	// core takes its share of the scrubbing.
	return pipeline.MapOrdered(runtime.GOMAXPROCS(0), func(_ context.Context, g pipeline.Group) (pipeline.Dossier, bool, error) {
		d := pipeline.Dossier{Group: g, Environment: env}
		if g.Verdict != pipeline.VerdictNew && g.Verdict != pipeline.VerdictDeferred {
			return d, true, nil
		}
		if g.Backlog && g.DossierFile != "" {
			if g.Verdict == pipeline.VerdictDeferred {
				return d, true, nil // still waiting: its dossier stays in its file
			}
			if cfg.Load != nil {
				md, err := cfg.Load(g.DossierFile)
				if err != nil {
					// Filed all the same, with what the state still knows.
					md = BuildDossier(g, cfg.Scrubber, DossierMaxChars) + "\n_(the saved dossier could not be read: " + cfg.Scrubber.Scrub(err.Error()) + ")_\n"
				}
				d.Markdown = md
				return d, true, nil
			}
		}
		// A waiting defect that recurs and that no agent will read this
		// scan (diagnosed already, or deferred again before diagnosis)
		// reuses its saved dossier while that is fresh: building and
		// scrubbing it again every scan of a watcher was most of the scan,
		// and persist would keep the saved one anyway. Deferred again, it
		// needs no text at all: nothing is filed, and reading the file
		// back was a tenth of a watcher's scan of 1,000 new lines.
		fresh := g.DossierFile != "" && dossierFresh(g.DossierSaved, cfg.Now())
		if fresh && g.Verdict == pipeline.VerdictDeferred {
			return d, true, nil
		}
		if fresh && g.Finding != nil && cfg.Load != nil {
			if md, err := cfg.Load(g.DossierFile); err == nil {
				d.Markdown = md
				return d, true, nil
			}
		}
		d.Markdown = BuildDossier(g, cfg.Scrubber, DossierMaxChars)
		if len(g.Samples) > 0 {
			if sec := cfg.Source.Section(g, cfg.Scrubber); sec != "" {
				d.Markdown += "\n" + sec
			}
		}
		return d, true, nil
	})
}

// Environment is the environment block: what a maintainer needs to
// reproduce, and nothing that identifies the machine.
func Environment(toolVersion string) string {
	return fmt.Sprintf("- the-loop-diagnose %s\n- Go %s\n- OS %s/%s\n", toolVersion, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// BuildDossier renders a group's evidence as markdown within maxChars: the
// occurrences, the distinct values of the allow-listed fields over every
// occurrence, the newest error as text, and a few sample records, newest
// first. Over maxChars it quotes fewer samples, then leaves the values out.
// A backlog group without records is its saved dossier.
func BuildDossier(g pipeline.Group, s *redact.Redactor, maxChars int) string {
	if len(g.Samples) == 0 && g.CachedDossier != "" {
		return g.CachedDossier
	}
	// Each part is scrubbed once; only the assembly is tried at each size.
	ev := renderEvidence(g, s, GroupIdentity(g))
	var md string
	for _, fit := range []struct {
		samples int
		values  bool
	}{{3, true}, {2, true}, {1, true}, {1, false}, {0, false}} {
		md = ev.markdown(g, min(fit.samples, dossierMaxSamples), fit.values)
		if utf8.RuneCountInString(md) <= maxChars {
			break
		}
	}
	return md
}

// dossierParts is a dossier's parts, scrubbed, before they are fitted.
type dossierParts struct {
	head    string   // event, occurrences, times, fingerprint
	values  string   // the values seen, one line per field
	err     string   // the newest error's section
	records []string // up to dossierMaxSamples records, newest first
}

// renderEvidence renders and scrubs each part of g's evidence once.
func renderEvidence(g pipeline.Group, s *redact.Redactor, ids redact.RecordIdentity) dossierParts {
	var ev dossierParts
	var b strings.Builder
	if event := s.Scrub(g.Event); redact.IsName(event) {
		fmt.Fprintf(&b, "- Event: `%s`\n", event)
	} else {
		// A backtick or markup would break out of an inline span.
		b.WriteString("- Event:\n\n" + redact.Fence(event) + "\n\n")
	}
	fmt.Fprintf(&b, "- Occurrences: %d", g.Count)
	if g.Retries > 0 {
		fmt.Fprintf(&b, " (%d marked will_retry)", g.Retries)
	}
	b.WriteString("\n")
	if !g.FirstSeen.IsZero() {
		fmt.Fprintf(&b, "- First seen: %s\n- Last seen: %s\n", g.FirstSeen.UTC().Format(time.RFC3339), g.LastSeen.UTC().Format(time.RFC3339))
		if span := g.LastSeen.Sub(g.FirstSeen); span >= time.Minute && g.Count > 1 {
			fmt.Fprintf(&b, "- Rate: %.1f per hour\n", float64(g.Count)/span.Hours())
		}
	}
	if g.FirstLine > 0 {
		fmt.Fprintf(&b, "- Log lines: %d to %d\n", g.FirstLine, g.LastLine)
	}
	fmt.Fprintf(&b, "- Fingerprint: `%s`\n", g.Fingerprint)
	ev.head = b.String()
	// Distinct values of each allow-listed field, over every occurrence.
	var vals strings.Builder
	for _, k := range group.TallyFields {
		if ft := g.Tally.Fields[k]; ft != nil && k != "version" {
			if line := composeDistinct(ft, s, ids); line != "" {
				vals.WriteString("- " + k + ": " + line + "\n")
			}
		}
	}
	ev.values = vals.String()
	if len(g.Samples) == 0 {
		return ev
	}
	// The error, as text with its own line breaks.
	newest := g.Samples[len(g.Samples)-1]
	if e := newest.Str("error"); strings.TrimSpace(e) != "" {
		// Cut after scrubbing: a cut must not stop a rule.
		text := capRunes(s.ScrubRecord(redact.Normalize(e), ids.Union(RecordIdentity(newest.Record))), MaxErrorChars)
		ev.err = "\nError (newest occurrence):\n\n" + redact.Fence(strings.TrimRight(text, "\n")) + "\n"
	}
	// A few sample records, newest first, their error shown above.
	n := min(dossierMaxSamples, len(g.Samples))
	w := newRecordWriter(s)
	for i := len(g.Samples) - 1; i >= len(g.Samples)-n; i-- {
		r := g.Samples[i].Record
		var fields pipeline.Fields
		for _, fl := range r.Fields {
			if fl.Key != "error" {
				fields = append(fields, fl)
			}
		}
		// The identity comes from the whole record: its error is dropped
		// here, its other fields still say whose it is.
		r.Fields = fields
		ev.records = append(ev.records, capRunes(w.record(r), MaxErrorChars))
	}
	return ev
}

// markdown assembles the parts with at most samples sample records
// and, when values, the values seen.
func (ev dossierParts) markdown(g pipeline.Group, samples int, values bool) string {
	var b strings.Builder
	b.WriteString(ev.head)
	if ev.values != "" && values {
		b.WriteString("\nValues seen" + composeTallyScope(g) + ":\n\n")
		b.WriteString(ev.values)
	}
	if len(g.Samples) == 0 {
		return b.String()
	}
	b.WriteString(ev.err)
	n := min(samples, len(ev.records))
	if n == 0 {
		return b.String()
	}
	fmt.Fprintf(&b, "\nSample records (%d of %d, allow-listed fields, newest first):\n\n", n, g.Count)
	b.WriteString(redact.Fence(strings.Join(ev.records[:n], "\n")) + "\n")
	return b.String()
}

// dossierRecordKeys are a dossier record's keys in the order encoding/json
// writes a map's (sorted), so the line reads as it did when it was one.
var dossierRecordKeys = func() []string {
	keys := append(slices.Clone(DossierFields), "error", "line")
	slices.Sort(keys)
	return keys
}()

// recordWriter renders one defect's records as JSON lines. It writes each
// object itself, every value encoded by encoding/json into one reused
// buffer: marshalling a map sorted and reflected over its keys was a third
// of a dossier's cost, paid after the log is read. The records of a defect
// repeat most of their values (event, level, source...), so each distinct
// one is scrubbed once.
type recordWriter struct {
	scrubber *redact.Redactor
	scrubbed map[[2]string]string // by identity key and value
	id       redact.RecordIdentity
	idKey    string
	buf      bytes.Buffer
	enc      *json.Encoder
}

func newRecordWriter(s *redact.Redactor) *recordWriter {
	w := &recordWriter{scrubber: s, scrubbed: map[[2]string]string{}}
	w.enc = json.NewEncoder(&w.buf)
	return w
}

// scrub masks v as the current record's text: its own identity included.
func (w *recordWriter) scrub(v string) string {
	k := [2]string{w.idKey, v}
	out, ok := w.scrubbed[k]
	if !ok {
		out = w.scrubber.ScrubRecord(v, w.id)
		w.scrubbed[k] = out
	}
	return out
}

// GroupIdentity is the union of the identities of a group's sampled records.
func GroupIdentity(g pipeline.Group) redact.RecordIdentity {
	var ids redact.RecordIdentity
	for _, o := range g.Samples {
		ids = ids.Union(RecordIdentity(o.Record))
	}
	return ids
}

// RecordIdentity is what a record's fields that the allow-list drops say
// about whose it is (redact.RecordIdentity): masked where they reappear in
// its error text.
func RecordIdentity(r pipeline.Record) redact.RecordIdentity {
	var id redact.RecordIdentity
	for _, f := range r.Fields {
		if v, ok := f.Value.(string); ok && f.Key != "error" && !slices.Contains(DossierFields, f.Key) {
			id.Add(f.Key, v)
		}
	}
	return id
}

// record renders one record's allow-listed fields and its scrubbed, capped
// error text as a JSON line.
func (w *recordWriter) record(r pipeline.Record) string {
	w.id = RecordIdentity(r)
	w.idKey = w.id.Key()
	w.buf.Reset()
	w.buf.WriteByte('{')
	for _, k := range dossierRecordKeys {
		var v any
		switch k {
		case "line":
			v = r.Line
		case "error":
			e := r.Str("error")
			if e == "" {
				continue
			}
			v = capRunes(w.scrub(e), MaxErrorChars) // cut after scrubbing: a cut must not stop a rule
		default:
			field, ok := r.Fields.Lookup(k)
			if !ok {
				continue
			}
			if str, isStr := field.(string); isStr {
				v = w.scrub(str)
			} else {
				v = w.scrubber.Value(field, w.id)
			}
		}
		if w.buf.Len() > 1 {
			w.buf.WriteByte(',')
		}
		w.value(k)
		w.buf.WriteByte(':')
		w.value(v)
	}
	w.buf.WriteByte('}')
	return w.buf.String()
}

// value appends v as encoding/json encodes it (its escaping included); a
// value it cannot encode, which no decoded log line holds, is written null.
func (w *recordWriter) value(v any) {
	mark := w.buf.Len()
	if err := w.enc.Encode(v); err != nil {
		w.buf.Truncate(mark)
		w.buf.WriteString("null")
		return
	}
	w.buf.Truncate(w.buf.Len() - 1) // Encode ends the value with a newline
}

// capRunes cuts s to at most n runes with a visible note.
func capRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + fmt.Sprintf(" [... %d more characters cut]", len(r)-n)
}
