package pipeline

import "time"

// Record is one well-formed line of the event log.
type Record struct {
	Line   int64          `json:"line"`   // 1-based line number in the file
	Offset int64          `json:"offset"` // byte offset of the line's first byte
	End    int64          `json:"end"`    // byte offset just after the line (a safe cursor)
	Fields map[string]any `json:"fields"` // the decoded JSON object
	// Raw is the line not decoded yet (the reader left decoding to the
	// decode stage, off its own goroutine); "" once Fields is set. A string:
	// the decoded fields share its bytes instead of copying them again.
	Raw string `json:"-"`
}

// Str returns a string field, or "" when absent or not a string.
func (r Record) Str(key string) string {
	s, _ := r.Fields[key].(string)
	return s
}

// Bool returns a boolean field and whether it was present as a boolean.
func (r Record) Bool(key string) (value, ok bool) {
	value, ok = r.Fields[key].(bool)
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
	Verdict     Verdict      `json:"verdict"`
	Attempt     int          `json:"attempt"` // attempts already made before this scan
	Reason      string       `json:"reason,omitempty"`
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
}

// Settlement is a machine verdict with the evidence it rests on.
type Settlement struct {
	Verdict  string         `json:"verdict"` // healed | environment | fixed-upstream | transient | agent-environment
	Reason   string         `json:"reason"`
	Evidence map[string]any `json:"evidence,omitempty"`
}

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
	// AgentRan is true when an agent ran for it this scan (not a cached
	// answer): it counts toward the diagnosis budget.
	AgentRan  bool          `json:"agent_ran,omitempty"`
	AgentTook time.Duration `json:"agent_took,omitempty"`
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
}
