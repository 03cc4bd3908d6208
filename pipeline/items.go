package pipeline

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// Record is one well-formed line of the event log.
type Record struct {
	Line   int64  `json:"line"`   // 1-based line number in the file
	Offset int64  `json:"offset"` // byte offset of the line's first byte
	End    int64  `json:"end"`    // byte offset just after the line (a safe cursor)
	Fields Fields `json:"fields"` // the decoded JSON object
	// Raw is the line not decoded yet (the reader left decoding to the
	// decode stage, off its own goroutine); "" once Fields is set. A string:
	// the decoded fields share its bytes instead of copying them again.
	Raw string `json:"-"`
}

// Str returns a string field, or "" when absent or not a string.
func (r Record) Str(key string) string {
	s, _ := r.Fields.Get(key).(string)
	return s
}

// Bool returns a boolean field and whether it was present as a boolean.
func (r Record) Bool(key string) (value, ok bool) {
	value, ok = r.Fields.Get(key).(bool)
	return value, ok
}

// Time parses the record's ts field; zero when missing or malformed.
func (r Record) Time() time.Time {
	t, err := time.Parse(time.RFC3339Nano, r.Str("ts"))
	if err != nil {
		return time.Time{}
	}
	return t
}

// Field is one top-level key and its decoded value.
type Field struct {
	Key   string
	Value any
}

// Fields are a record's decoded top-level fields in line order. A slice, not
// a map: a scan decodes thousands of records of a dozen or two fields each and
// looks at a few of them, and a map's table costs more to build and to
// allocate than a linear search over so few keys. A key may repeat (JSON
// allows it); as encoding/json does for a map, its last value is the one that
// counts. nil means a record without fields.
type Fields []Field

// Get returns the value of key, or nil when absent.
func (f Fields) Get(key string) any {
	v, _ := f.Lookup(key)
	return v
}

// Lookup returns the value of key and whether it is present.
func (f Fields) Lookup(key string) (any, bool) {
	for i := len(f) - 1; i >= 0; i-- { // from the end: the last value wins
		if f[i].Key == key {
			return f[i].Value, true
		}
	}
	return nil, false
}

// Set replaces key's value, or adds key when absent.
func (f *Fields) Set(key string, v any) {
	for i := len(*f) - 1; i >= 0; i-- {
		if (*f)[i].Key == key {
			(*f)[i].Value = v
			return
		}
	}
	*f = append(*f, Field{key, v})
}

// Map returns the fields as encoding/json would have decoded them into a map.
func (f Fields) Map() map[string]any {
	if f == nil {
		return nil
	}
	m := make(map[string]any, len(f))
	for _, kv := range f {
		m[kv.Key] = kv.Value
	}
	return m
}

// FieldsOf returns m's entries as Fields, sorted by key so the result does
// not depend on map order.
func FieldsOf(m map[string]any) Fields {
	if m == nil {
		return nil
	}
	f := make(Fields, 0, len(m))
	for k, v := range m {
		f = append(f, Field{k, v})
	}
	slices.SortFunc(f, func(a, b Field) int { return strings.Compare(a.Key, b.Key) })
	return f
}

// MarshalJSON writes the object the map would give — keys sorted, each
// once — so JSON output reads the same as when Fields was a map.
func (f Fields) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	// The caller's encoder escapes HTML when it is asked to (it re-escapes
	// what a Marshaler returns); escaping here would force it on all.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(f.Map()); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// UnmarshalJSON reads an object (or null, for no fields).
func (f *Fields) UnmarshalJSON(data []byte) error {
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	*f = FieldsOf(m)
	return nil
}

// Candidate is a record selected as a possible defect.
type Candidate struct {
	Record
	Reason string `json:"reason"` // why the filter selected it: "level:error" or "give-up"
}

// Occurrence is a candidate with its defect identity.
type Occurrence struct {
	Candidate
	Fingerprint string `json:"fingerprint"`
	Template    string `json:"template"`
	// Aliases are the fingerprints older algorithm versions give the same
	// record, so state written by them (the-loop's included) keeps matching.
	Aliases []string `json:"aliases,omitempty"`
}

// Verdict is what dedup decided for a group.
type Verdict string

const (
	VerdictNew       Verdict = "new"       // never reported: diagnose and file
	VerdictKnown     Verdict = "known"     // already reported
	VerdictAbandoned Verdict = "abandoned" // gave up after maxRetries
	VerdictDeferred  Verdict = "deferred"  // over the daily cap: kept for a later scan
	VerdictSettled   Verdict = "settled"   // the machine settled it without a human
)

// Group is every occurrence of one fingerprint seen in this scan.
type Group struct {
	Fingerprint string       `json:"fingerprint"`
	Aliases     []string     `json:"aliases,omitempty"`
	Template    string       `json:"template"`
	Event       string       `json:"event"`
	Count       int          `json:"count"`      // all occurrences this scan
	Retries     int          `json:"retries"`    // occurrences with will_retry: true
	FirstSeen   time.Time    `json:"first_seen"` // earliest ts this scan
	LastSeen    time.Time    `json:"last_seen"`
	FirstLine   int64        `json:"first_line"`
	LastLine    int64        `json:"last_line"`
	Samples     []Occurrence `json:"samples"` // newest last, capped
	// Tally counts a few fields' distinct values over every occurrence
	// this scan read, not only the samples kept.
	Tally   Tally   `json:"tally,omitzero"`
	Verdict Verdict `json:"verdict"`
	Attempt int     `json:"attempt"` // attempts already made before this scan
	Reason  string  `json:"reason,omitempty"`
	// Finding is a diagnosis cached from an earlier scan (deferred by the
	// cap after the agent ran), so it is filed without running the agent again.
	Finding *Answer `json:"finding,omitempty"`
	// Backlog marks a group carried over from an earlier scan's deferral: its
	// records lie before the read cursor, so its dossier comes from state.
	Backlog       bool   `json:"backlog,omitempty"`
	CachedDossier string `json:"cached_dossier,omitempty"`
	DossierFile   string `json:"dossier_file,omitempty"` // the saved dossier, loaded only to file it
	// DossierSaved is when DossierFile was written.
	DossierSaved time.Time `json:"dossier_saved,omitzero"`
	// Healed counts this scan's occurrences whose operation later succeeded.
	Healed int `json:"healed,omitempty"`
	// Settle is set when the machine settled the group without a human.
	Settle *Settlement `json:"settle,omitempty"`
	// Wait is set when an outage or the operator's setup, not the defect,
	// keeps the group from being diagnosed or filed this scan: it is
	// deferred, nothing is charged, and no retry is counted.
	Wait *Wait `json:"wait,omitempty"`
}

// Tally is a group's count of distinct field values over all its
// occurrences (stages.TallyFields): what the evidence shows as
// "harness: claude ×33, cursor ×17".
type Tally struct {
	Occurrences int                    `json:"occurrences,omitempty"` // occurrences counted
	Fields      map[string]*FieldTally `json:"fields,omitempty"`
}

// FieldTally is one field's distinct values and how many occurrences had
// each; Other counts the occurrences whose value was not kept (too long,
// or past the bound on distinct values).
type FieldTally struct {
	Values map[string]int `json:"values"`
	Other  int            `json:"other,omitempty"`
}

// Wait is what a scan waits for: a dependency and why it is unusable.
type Wait struct {
	For    string `json:"for"` // WaitGitHub or WaitAgent
	Reason string `json:"reason"`
}

// What a scan can wait for.
const (
	WaitGitHub = "github"
	WaitAgent  = "agent"
)

// String is the wait as a reason: "waiting for GitHub: 503 ...".
func (w *Wait) String() string {
	name := map[string]string{WaitGitHub: "GitHub", WaitAgent: "the agent"}[w.For]
	if name == "" {
		name = w.For
	}
	return "waiting for " + name + ": " + w.Reason
}

// Settlement is a machine verdict with the evidence it rests on.
type Settlement struct {
	Verdict  Settled        `json:"verdict"`
	Reason   string         `json:"reason"`
	Evidence map[string]any `json:"evidence,omitempty"`
}

// Settled is the machine's verdict on a defect it keeps from a human. The
// state and the events store it as its string.
type Settled string

// The verdicts the machine settles on, each with the one place that decides it.
const (
	// SettledHealed: every retried failure later succeeded, and not often
	// enough to be flaky (stages.Triage).
	SettledHealed Settled = "healed"
	// SettledEnvironment: the operator's environment, not the project's
	// code, by the environment rules (stages.Triage) or by a confident
	// agent whose evidence verifies (stages.AgentSettlement).
	SettledEnvironment Settled = "environment"
	// SettledTransient: a confident agent's verified verdict
	// (stages.AgentSettlement).
	SettledTransient Settled = "transient"
	// SettledFixedUpstream: the target repo fixed it after the deployed
	// version (source.Checkout.FixedUpstream).
	SettledFixedUpstream Settled = "fixed-upstream"
)

// Dossier is a group with the scrubbed, allow-listed report of it that the
// agent reads and the issue quotes.
type Dossier struct {
	Group
	Markdown    string `json:"dossier"`
	Environment string `json:"environment"`
}

// Answer is the agent's structured diagnosis.
type Answer struct {
	Title        string   `json:"title"`
	Summary      string   `json:"summary"`
	RootCause    string   `json:"root_cause"`
	SuggestedFix string   `json:"suggested_fix"`
	Verdict      string   `json:"verdict,omitempty"`
	Confidence   *float64 `json:"confidence,omitempty"`
	Evidence     []string `json:"evidence,omitempty"`
}

// Finding is a dossier with the agent's answer, or the reason it failed.
type Finding struct {
	Dossier
	Answer  *Answer `json:"answer,omitempty"`
	Failure string  `json:"failure,omitempty"` // non-empty when the agent failed
	// Unusable marks a failure where the agent ran and answered, and the
	// answer for this dossier was unusable: the defect's own failure.
	Unusable bool `json:"unusable,omitempty"`
	// AgentRan is true when an agent ran for it this scan (not a cached
	// answer): it counts toward the diagnosis budget.
	AgentRan  bool          `json:"agent_ran,omitempty"`
	AgentTook time.Duration `json:"agent_took,omitempty"`
	// Cost is what the harness said the run cost, when it says (claude).
	Cost *Cost `json:"cost,omitempty"`
}

// Cost is one agent run's spend as its harness reported it.
type Cost struct {
	USD          float64 `json:"usd"`
	InputTokens  int64   `json:"input_tokens"` // cache reads and writes included
	OutputTokens int64   `json:"output_tokens"`
}

// Add counts a harness's report into c: what cannot have been spent
// (negative, not a number) counts as nothing.
func (c *Cost) Add(usd float64, in, out int64) {
	if usd > 0 && usd < 1e9 {
		c.USD += usd
	}
	c.InputTokens += max(in, 0)
	c.OutputTokens += max(out, 0)
}

// Report is a finding composed into an issue ready to post.
type Report struct {
	Finding
	Repo  string `json:"repo"`
	Title string `json:"title"`
	Body  string `json:"body"`
	Label string `json:"label"`
}

// Status is the final outcome of a group in one scan.
type Status string

const (
	StatusFiled     Status = "filed"     // a new issue was created
	StatusKnown     Status = "known"     // already reported (here or upstream)
	StatusDeferred  Status = "deferred"  // over a cap, or a rate limit: later
	StatusDryRun    Status = "dry-run"   // printed instead of posted
	StatusFailed    Status = "failed"    // agent or post failure: retried next scan
	StatusAbandoned Status = "abandoned" // failed maxRetries times
	StatusSettled   Status = "settled"   // settled by the machine, not filed
	StatusSkipped   Status = "skipped"   // abandoned before: nothing to do
)

// Outcome is what happened to one group; persist records it.
type Outcome struct {
	Report
	Status Status `json:"status"`
	URL    string `json:"url,omitempty"`
	Number int    `json:"number,omitempty"`
	Error  string `json:"error,omitempty"`
	// Recorded: the stage that decided it (post, filing) already committed
	// its state and events; persist adds only the rest (stages.Apply once).
	Recorded bool `json:"-"`
}
