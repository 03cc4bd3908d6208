// Package store keeps the tool's durable state: a database (SQLite beside
// the state path, or a fleet's PostgreSQL) written one row per change and
// one transaction per decision, importing and exporting the-loop's
// self-diagnosis.json; and the diagnosis.* events, appended to the event log
// through an outbox.
package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/the-loop/the-loop-diagnose/fingerprint"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"
)

// Reported is a defect already filed (by this tool or by the-loop). It is
// written in the-loop's shape, {"url", "ts", "event"} with ts in the-loop's
// millisecond format, plus this tool's keys, so that the-loop's own scan,
// re-enabled, reads it.
type Reported struct {
	URL    string    `json:"url"`
	Number int       `json:"number,omitempty"`
	At     time.Time `json:"-"` // "ts"; "at" in older releases' files
	Event  string    `json:"event,omitempty"`
	Title  string    `json:"title,omitempty"`
	// AliasOf names the canonical fingerprint of an entry kept under
	// the-loop's own (v1) fingerprint, for the-loop's scan: nothing this
	// tool needs aliases to match.
	AliasOf string `json:"alias_of,omitempty"`
}

// Abandoned is a fingerprint given up on after maxRetries failures, in
// the-loop's shape: {"ts", "event", "reason": "agent failed 3 times"}.
type Abandoned struct {
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"-"` // "ts"; "at" in older releases' files
	Event  string    `json:"event,omitempty"`
	Stage  string    `json:"stage,omitempty"` // agent | post: which failed
	Error  string    `json:"error,omitempty"` // the last failure (scrubbed)
	// Pending is the backlog entry it had (its dossier, its finding), kept
	// so that `retry` can bring the defect back without its records.
	Pending *Deferred `json:"pending,omitempty"`
	AliasOf string    `json:"alias_of,omitempty"` // see Reported.AliasOf
}

// TheLoopTime is the-loop's timestamp format (selfdiagnosis._iso):
// milliseconds, UTC, "Z"; truncated, as strftime("%f")[:-3] is.
const TheLoopTime = "2006-01-02T15:04:05.000Z"

func theLoopTS(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(TheLoopTime)
}

// parseTS reads "ts" (the-loop's, or RFC 3339), else an older release's "at".
func parseTS(ts string, at time.Time) time.Time {
	if ts != "" {
		if t, err := time.Parse(time.RFC3339Nano, ts); err == nil {
			return t
		}
	}
	return at
}

func (r Reported) theLoopCopy() bool  { return r.AliasOf != "" }
func (a Abandoned) theLoopCopy() bool { return a.AliasOf != "" }

type reportedFields Reported

type timedJSON struct {
	TS string    `json:"ts,omitempty"`
	At time.Time `json:"at,omitzero"` // read only
}

func (r Reported) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		reportedFields
		TS string `json:"ts,omitempty"`
	}{reportedFields(r), theLoopTS(r.At)})
}

func (r *Reported) UnmarshalJSON(b []byte) error {
	aux := struct {
		*reportedFields
		timedJSON
	}{reportedFields: (*reportedFields)(r)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	r.At = parseTS(aux.TS, aux.timedJSON.At)
	return nil
}

type abandonedFields Abandoned

func (a Abandoned) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		abandonedFields
		TS string `json:"ts,omitempty"`
	}{abandonedFields(a), theLoopTS(a.At)})
}

func (a *Abandoned) UnmarshalJSON(b []byte) error {
	aux := struct {
		*abandonedFields
		timedJSON
	}{abandonedFields: (*abandonedFields)(a)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	a.At = parseTS(aux.TS, aux.timedJSON.At)
	return nil
}

// Intent is written durably before an issue is created, so a crash between
// "created" and "saved" is reconciled by a marker lookup, never re-filed.
type Intent struct {
	At    time.Time `json:"at"`
	Title string    `json:"title,omitempty"`
	// InDoubt: the create was sent and its outcome is unknown (a timeout,
	// a lost connection, a 5xx); a rate limit is a refusal, never a doubt.
	// No create is sent again until a lookup, given time for GitHub's
	// listing to show a slow create, finds nothing.
	InDoubt bool `json:"in_doubt,omitempty"`
}

// IssueRef caches what a marker lookup learned about a fingerprint's issue.
type IssueRef struct {
	Number          int       `json:"number"`
	URL             string    `json:"url"`
	State           string    `json:"state"`                  // open | closed
	StateReason     string    `json:"state_reason,omitempty"` // completed | not_planned | reopened
	CommentID       int64     `json:"comment_id,omitempty"`   // the one occurrence comment we keep editing
	CommentEditedAt time.Time `json:"comment_edited_at,omitzero"`
	Occurrences     int       `json:"occurrences,omitempty"`
	FirstSeen       time.Time `json:"first_seen,omitzero"`
	LastSeen        time.Time `json:"last_seen,omitzero"`
	Versions        []string  `json:"versions,omitempty"`
	CheckedAt       time.Time `json:"checked_at,omitzero"`
}

// ForeignMarker is an issue whose author is not trusted but whose body
// carries a fingerprint marker, as the post stage last saw it.
type ForeignMarker struct {
	Number      int       `json:"number"`
	URL         string    `json:"url,omitempty"`
	Login       string    `json:"login"`
	Fingerprint string    `json:"fingerprint"`
	At          time.Time `json:"at"`
}

// Dismissal records a maintainer's decision not to fix (closed as not
// planned, or labelled wontfix/invalid/duplicate): never filed again.
type Dismissal struct {
	At     time.Time `json:"at"`
	Reason string    `json:"reason"`
	URL    string    `json:"url,omitempty"`
}

// Deferred is a defect kept for a later scan (over a cap or a rate limit),
// with its diagnosis when the agent already ran, so it is not run again.
type Deferred struct {
	Since    time.Time `json:"since"` // first seen
	LastSeen time.Time `json:"last_seen,omitzero"`
	// Waited is when it began waiting in the backlog, by the tool's clock
	// (not its records'): the backlog's retention counts from here.
	Waited   time.Time `json:"waited,omitzero"`
	Event    string    `json:"event,omitempty"`
	Template string    `json:"template,omitempty"`
	Count    int       `json:"count,omitempty"`
	Dossier  string    `json:"dossier,omitempty"` // scrubbed: its records lie behind the cursor (inline: dry runs, older states)
	// DossierFile names the dossier saved beside the state (SaveDossier).
	DossierFile string `json:"dossier_file,omitempty"`
	// DossierSaved is when DossierFile was written: a defect recurring in
	// every scan rewrites it at most hourly.
	DossierSaved time.Time       `json:"dossier_saved,omitzero"`
	Finding      json.RawMessage `json:"finding,omitempty"` // the agent's answer, when it already ran
	// Waiting says what the defect waits for when an outage or the
	// operator's setup, not the defect, kept it back ("GitHub: 503 ...").
	Waiting string `json:"waiting,omitempty"`
	// Reason is why it was deferred otherwise (a cap, a budget).
	Reason string `json:"reason,omitempty"`
	// TheLoop are the fingerprints the-loop gives its records (v1), kept
	// while its records lie behind the cursor: filing or abandoning the
	// defect later records it under them too, for the-loop's scan.
	TheLoop []string `json:"the_loop,omitempty"`
}

// Outage is a dependency the scans are waiting for (GitHub, the agent):
// since when, why, how many scans in a row found it down, the last one.
type Outage struct {
	Since  time.Time `json:"since"`
	Reason string    `json:"reason"`
	Scans  int       `json:"scans"`
	Last   time.Time `json:"last"`
}

// Settlement is a machine verdict that kept a defect from a human.
type Settlement struct {
	Verdict  string         `json:"verdict"` // a pipeline.Settled, kept as its string
	Reason   string         `json:"reason"`
	Evidence map[string]any `json:"evidence,omitempty"`
	At       time.Time      `json:"at"`
	Until    time.Time      `json:"until"`
	Count    int            `json:"count,omitempty"` // times settled in a row with the same verdict
}

// Cursor is how far the event log has been read, and which file that was.
type Cursor struct {
	Path     string `json:"path"`
	Offset   int64  `json:"offset"`
	Line     int64  `json:"line"`
	Device   uint64 `json:"device"`
	Inode    uint64 `json:"inode"`
	HeadHash string `json:"head_hash"` // sha256 of the file's first bytes
	HeadLen  int    `json:"head_len"`
}

// State is the whole state file. The first four keys are the-loop's own;
// unknown keys are kept and written back untouched.
type State struct {
	Reported  *Keyed[Reported]   `json:"reported"`
	Abandoned FlexMap[Abandoned] `json:"abandoned"`
	Attempts  map[string]int     `json:"attempts"`
	Posted    []time.Time        `json:"posted"`

	Intents   map[string]Intent    `json:"intents,omitempty"`
	Issues    *Keyed[IssueRef]     `json:"issues,omitempty"`
	Dismissed map[string]Dismissal `json:"dismissed,omitempty"`
	Deferred  map[string]Deferred  `json:"deferred,omitempty"`
	Failures  map[string]string    `json:"last_failure,omitempty"`
	// FirstFailed is when each defect's first defect-specific failure in a
	// row happened: abandoning needs maxRetries of them spanning a day.
	FirstFailed map[string]time.Time `json:"first_failed,omitempty"`
	// Charged are the agent runs charged to the budget (Diagnosed) before
	// they started, by fingerprint, until the scan's outcome settles them.
	Charged map[string]time.Time `json:"charged,omitempty"`
	// Costs are the agent runs' spend of the last 24 h (the daily cost
	// budget); CostTotal sums every run's since the state began.
	Costs     []CostEntry `json:"costs,omitempty"`
	CostTotal CostTotal   `json:"cost_total,omitzero"`
	// Answers are agents' answers kept the moment they came, until the
	// defect is filed: a diagnosis is paid for once.
	Answers map[string]KeptAnswer `json:"answers,omitempty"`
	// Outages are the dependencies being waited for, by name ("github",
	// "agent").
	Outages map[string]Outage `json:"outages,omitempty"`
	Cursor  *Cursor           `json:"cursor,omitempty"`

	// Settled defects were settled by the machine without a human, until
	// their settlement expires or their evidence changes.
	Settled map[string]Settlement `json:"settled,omitempty"`
	// Heals are when each defect last healed (a retried failure that later
	// succeeded), to tell a transient from a flaky defect.
	Heals map[string][]time.Time `json:"heals,omitempty"`
	// Diagnosed are the times agents ran, for the daily diagnosis budget.
	Diagnosed []time.Time `json:"diagnosed,omitempty"`
	// Deployment is this deployment's random id, generated once: it keys
	// its own entry in tallies shared with a fleet on GitHub, so it must
	// never be derived from anything identifying (it is public).
	Deployment string `json:"deployment,omitempty"`
	// TemplateMemory is what the fingerprinter learned of the log's
	// templates: which words vary, and which family each fingerprint joined.
	TemplateMemory *fingerprint.MemoryState `json:"template_memory,omitempty"`
	// Incidents are the recent failures a bare give-up may end (the
	// fingerprint stage's incident index), so a cron run links a give-up to
	// the failure the previous run read. Correlation values are digests.
	Incidents    []IncidentFailure `json:"incidents,omitempty"`
	IncidentKeys []string          `json:"incident_keys,omitempty"`
	// ForeignMarkers are issues by someone the post stage does not trust
	// that carry a fingerprint marker: ignored for every decision, kept (the
	// newest few) so status can warn about them.
	ForeignMarkers []ForeignMarker `json:"foreign_markers,omitempty"`
	// IssueLogin is the author GitHub gave an issue this deployment
	// created: who the token files as when GET /user is not allowed (a
	// GitHub App), so the next scan still recognises its own issues.
	IssueLogin string `json:"issue_login,omitempty"`
	// GitHubResume is when GitHub, rate limiting a request, asked to be
	// left alone until: the scans before it send nothing.
	GitHubResume time.Time `json:"github_resume,omitzero"`

	extra map[string]json.RawMessage
	// olderReported answers HoldsOlderVersions for Reported with one query
	// (a state in a database); nil ranges over the entries.
	olderReported func() bool
}

// NewState returns an empty state with every map ready to use.
func NewState() *State {
	s := &State{}
	s.init()
	return s
}

func (s *State) init() {
	if s.Reported == nil {
		s.Reported = NewKeyed[Reported]()
	}
	if s.Abandoned == nil {
		s.Abandoned = FlexMap[Abandoned]{}
	}
	if s.Attempts == nil {
		s.Attempts = map[string]int{}
	}
	if s.Intents == nil {
		s.Intents = map[string]Intent{}
	}
	if s.Issues == nil {
		s.Issues = NewKeyed[IssueRef]()
	}
	if s.Dismissed == nil {
		s.Dismissed = map[string]Dismissal{}
	}
	if s.Deferred == nil {
		s.Deferred = map[string]Deferred{}
	}
	if s.Failures == nil {
		s.Failures = map[string]string{}
	}
	if s.FirstFailed == nil {
		s.FirstFailed = map[string]time.Time{}
	}
	if s.Outages == nil {
		s.Outages = map[string]Outage{}
	}
	if s.Charged == nil {
		s.Charged = map[string]time.Time{}
	}
	if s.Answers == nil {
		s.Answers = map[string]KeptAnswer{}
	}
	if s.Posted == nil {
		s.Posted = []time.Time{}
	}
	if s.Settled == nil {
		s.Settled = map[string]Settlement{}
	}
	if s.Heals == nil {
		s.Heals = map[string][]time.Time{}
	}
}

// knownKeys are the keys State's own fields use, read from their json
// tags: any other key of a loaded file is kept as it was (extra). Derived,
// not listed, so a new field can never be both a field and an extra key
// (written twice, the stale copy last).
var knownKeys = func() map[string]bool {
	keys := map[string]bool{}
	t := reflect.TypeFor[State]()
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			keys[name] = true
		}
	}
	return keys
}()

// stateFields has State's JSON shape without its methods, so decoding it does
// not recurse into State.UnmarshalJSON.
type stateFields State

// UnmarshalJSON accepts the-loop's file: `posted` may hold RFC 3339 strings
// or epoch seconds, reported/abandoned may be lists or maps of any value.
// Keys it does not know are kept for MarshalJSON.
func (s *State) UnmarshalJSON(b []byte) error {
	aux := struct {
		*stateFields
		Posted []flexTime `json:"posted"` // shadows State.Posted
	}{stateFields: (*stateFields)(s)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	s.Posted = nil
	for _, t := range aux.Posted {
		s.Posted = append(s.Posted, time.Time(t))
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		return err
	}
	s.extra = map[string]json.RawMessage{}
	for k, v := range keys {
		if !knownKeys[k] {
			s.extra[k] = v
		}
	}
	s.init()
	return nil
}

// MarshalJSON writes the known keys plus any unknown keys read earlier,
// appended after them (sorted, so the output is stable). posted is written
// as the-loop writes it (TheLoopTime), which the-loop's datetime.fromisoformat
// reads on any Python 3 (3.10 and older take 3 or 6 fraction digits only).
func (s *State) MarshalJSON() ([]byte, error) {
	posted := make([]string, len(s.Posted))
	for i, t := range s.Posted {
		posted[i] = t.UTC().Format(TheLoopTime)
	}
	b, err := json.Marshal(struct {
		*stateFields
		Posted []string `json:"posted"` // shadows State.Posted
	}{(*stateFields)(s), posted})
	if err != nil || len(s.extra) == 0 {
		return b, err
	}
	keys := make([]string, 0, len(s.extra))
	for k := range s.extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b = b[:len(b)-1] // the closing brace; the object always holds the-loop's four keys
	for _, k := range keys {
		name, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		b = append(append(append(append(b, ','), name...), ':'), s.extra[k]...)
	}
	return append(b, '}'), nil
}

// PostedSince counts posts at or after t (the rolling daily window).
func (s *State) PostedSince(t time.Time) int { return CountSince(s.Posted, t) }

// PrunePosted drops post, diagnosis and heal times older than t; the
// rolling windows never need them.
func (s *State) PrunePosted(t time.Time) {
	s.Posted = since(s.Posted, t)
	s.Diagnosed = since(s.Diagnosed, t)
	s.Costs = slices.DeleteFunc(s.Costs, func(e CostEntry) bool { return e.At.Before(t) })
	for fp, at := range s.Charged { // a run charged by a scan that died
		if at.Before(t) {
			delete(s.Charged, fp)
		}
	}
	for fp, times := range s.Heals {
		if kept := since(times, t); len(kept) > 0 {
			s.Heals[fp] = kept
		} else {
			delete(s.Heals, fp)
		}
	}
}

// CountSince counts the times at or after t.
func CountSince(times []time.Time, t time.Time) int {
	n := 0
	for _, p := range times {
		if !p.Before(t) {
			n++
		}
	}
	return n
}

func since(times []time.Time, t time.Time) []time.Time {
	kept := times[:0]
	for _, p := range times {
		if !p.Before(t) {
			kept = append(kept, p)
		}
	}
	return kept
}

// HoldsOlderVersions reports whether any fingerprint in the state is not
// the current version's: the-loop's own (no prefix) or an older release's
// ("v2:…"), which only an alias can match.
func (s *State) HoldsOlderVersions() bool {
	return s.reportedOlder() ||
		anyEntry(s.Abandoned, func(fp string, a Abandoned) bool { return a.AliasOf == "" && olderVersion(fp) }) || anyKey(s.Attempts, olderVersion) ||
		anyKey(s.Deferred, olderVersion) || anyKey(s.Dismissed, olderVersion) || anyKey(s.Settled, olderVersion) ||
		anyKey(s.Intents, olderVersion)
}

func (s *State) reportedOlder() bool {
	if s.olderReported != nil {
		return s.olderReported()
	}
	return anyEntry(s.Reported.All(), func(fp string, r Reported) bool { return r.AliasOf == "" && olderVersion(fp) })
}

func olderVersion(fp string) bool {
	return !strings.HasPrefix(fp, fingerprint.Version+":") && !fingerprint.IsPattern(fp)
}

func anyEntry[V any](m map[string]V, pred func(string, V) bool) bool {
	for k, v := range m {
		if pred(k, v) {
			return true
		}
	}
	return false
}

func anyKey[V any](m map[string]V, pred func(string) bool) bool {
	for k := range m {
		if pred(k) {
			return true
		}
	}
	return false
}

// IsReported reports whether any of the fingerprints was filed or dismissed.
func (s *State) IsReported(fps ...string) (string, bool) {
	for _, fp := range fps {
		if s.Reported.Has(fp) {
			return fp, true
		}
	}
	return "", false
}

// IsAbandoned reports whether any of the fingerprints was abandoned.
func (s *State) IsAbandoned(fps ...string) (string, bool) {
	for _, fp := range fps {
		if _, ok := s.Abandoned[fp]; ok {
			return fp, true
		}
	}
	return "", false
}

// Fingerprints lists every key of m in a stable order, but for the entries
// kept only for the-loop under its own fingerprint (AliasOf): they stand
// for a defect listed under its own key.
func Fingerprints[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k, v := range m {
		if c, ok := any(v).(interface{ theLoopCopy() bool }); ok && c.theLoopCopy() {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// FlexMap decodes a JSON object of fingerprint → entry, where an entry may be
// an object, a bare string (a URL or a reason), a number or true; and also a
// JSON list of fingerprints. the-loop wrote more than one of these shapes.
type FlexMap[V any] map[string]V

func (m *FlexMap[V]) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	out := FlexMap[V]{}
	if bytes.Equal(b, []byte("null")) {
		*m = out
		return nil
	}
	if len(b) > 0 && b[0] == '[' {
		var list []string
		if err := json.Unmarshal(b, &list); err != nil {
			return err
		}
		var zero V
		for _, fp := range list {
			out[fp] = zero
		}
		*m = out
		return nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	for fp, v := range raw {
		var entry V
		if err := json.Unmarshal(v, &entry); err != nil {
			entry = fromScalar[V](v)
		}
		out[fp] = entry
	}
	*m = out
	return nil
}

// fromScalar maps the-loop's scalar entries onto our structs: a string is a
// URL for Reported and a reason for Abandoned.
func fromScalar[V any](v json.RawMessage) V {
	var s string
	_ = json.Unmarshal(v, &s)
	var entry V
	switch e := any(&entry).(type) {
	case *Reported:
		e.URL = s
	case *Abandoned:
		e.Reason = s
	}
	return entry
}

type flexTime time.Time

func (t *flexTime) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		parsed, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return err
		}
		*t = flexTime(parsed)
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("want an RFC 3339 string or epoch seconds, got %s", b)
	}
	sec := int64(f)
	*t = flexTime(time.Unix(sec, int64((f-float64(sec))*1e9)).UTC())
	return nil
}

// IncidentFailure is one failure of the incident index, as the state keeps
// it: when, the digests of its correlation and agreement values (by the
// index's key order; "" when absent), the defect identity it had, and
// whether a give-up already ended its incident.
type IncidentFailure struct {
	At          time.Time `json:"at"`
	Values      []string  `json:"v"`
	Fingerprint string    `json:"fp"`
	Template    string    `json:"t,omitempty"`
	Aliases     []string  `json:"a,omitempty"`
	Ended       bool      `json:"ended,omitempty"`
}

// CostEntry is one agent run's spend, as its harness reported it.
type CostEntry struct {
	At           time.Time `json:"at"`
	Fingerprint  string    `json:"fp"`
	USD          float64   `json:"usd"`
	InputTokens  int64     `json:"in,omitempty"`
	OutputTokens int64     `json:"out,omitempty"`
}

// CostTotal sums runs' spend.
type CostTotal struct {
	Runs         int     `json:"runs"`
	USD          float64 `json:"usd"`
	InputTokens  int64   `json:"in"`
	OutputTokens int64   `json:"out"`
}

// CostSince sums the spend of the runs at or after t.
func (s *State) CostSince(t time.Time) CostTotal {
	var c CostTotal
	for _, e := range s.Costs {
		if !e.At.Before(t) {
			c.Runs++
			c.USD += e.USD
			c.InputTokens += e.InputTokens
			c.OutputTokens += e.OutputTokens
		}
	}
	return c
}

// KeptAnswer is an agent's answer for a defect, reused only for the same
// harness, model and prompt version (Key).
type KeptAnswer struct {
	Key    string          `json:"key"`
	Answer json.RawMessage `json:"answer"`
	At     time.Time       `json:"at"`
}
