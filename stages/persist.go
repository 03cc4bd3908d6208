package stages

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/the-loop/the-loop-diagnose/fingerprint"
	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/stages/budget"
	"github.com/the-loop/the-loop-diagnose/stages/incident"
	"github.com/the-loop/the-loop-diagnose/store"
)

// Summary counts a scan's outcomes by status.
type Summary struct {
	Lines, Corrupt int64 // lines read this scan, and how many were corrupt
	Candidates     int64 // failure records the filter selected

	mu       sync.Mutex
	ByStatus map[pipeline.Status]int
	Failures []string // "fingerprint: reason", for the one-line summary
	Settled  []string // "fingerprint: reason", told to the operator
	// Waited are the dependencies this scan found down (what for → why);
	// worked, the ones it used successfully. FinishScan turns them into
	// the state's outages.
	Waited map[string]string
	worked map[string]bool
}

func (s *Summary) add(o pipeline.Outcome) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ByStatus == nil {
		s.ByStatus = map[pipeline.Status]int{}
	}
	s.ByStatus[o.Status]++
	if w := o.Wait; w != nil {
		if s.Waited == nil {
			s.Waited = map[string]string{}
		}
		if _, ok := s.Waited[w.For]; !ok {
			s.Waited[w.For] = w.Reason
		}
	}
	if s.worked == nil {
		s.worked = map[string]bool{}
	}
	if o.AgentRan && o.Failure == "" {
		s.worked[pipeline.WaitAgent] = true
	}
	if o.Status == pipeline.StatusFiled || o.Status == pipeline.StatusKnown && o.URL != "" {
		s.worked[pipeline.WaitGitHub] = true
	}
	switch o.Status {
	case pipeline.StatusFailed, pipeline.StatusAbandoned:
		s.Failures = append(s.Failures, o.Fingerprint+": "+o.Error)
	case pipeline.StatusSettled:
		if o.Settle != nil {
			s.Settled = append(s.Settled, fmt.Sprintf("%s (%s): %s: %s", o.Fingerprint, o.Event, o.Settle.Verdict, o.Settle.Reason))
		}
	}
}

// Count returns how many outcomes had status st.
func (s *Summary) Count(st pipeline.Status) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ByStatus[st]
}

// Waiting is what the scan waited for, one "GitHub: reason" per dependency.
func (s *Summary) Waiting() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, what := range slices.Sorted(maps.Keys(s.Waited)) {
		out = append(out, (&pipeline.Wait{For: what, Reason: s.Waited[what]}).String())
	}
	return out
}

// Failed reports whether any defect failed this scan (a non-zero exit).
func (s *Summary) Failed() bool {
	return s.Count(pipeline.StatusFailed)+s.Count(pipeline.StatusAbandoned) > 0
}

// String is the one-line summary printed on stderr after a scan.
func (s *Summary) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var parts []string
	for st, n := range s.ByStatus {
		parts = append(parts, fmt.Sprintf("%s %d", st, n))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "no failures found"
	}
	return strings.Join(parts, ", ")
}

// dossierRefresh is how old a waiting defect's saved dossier may grow
// before a recurrence rewrites it.
const dossierRefresh = time.Hour

// dossierFresh says a dossier saved at saved is recent enough to stand for
// a recurrence's records.
func dossierFresh(saved, now time.Time) bool {
	return !saved.IsZero() && now.Sub(saved) < dossierRefresh
}

// PersistConfig configures the persist sink.
type PersistConfig struct {
	Store       *store.Store
	Now         func() time.Time
	MaxRetries  int
	SettleFor   time.Duration // how long a machine settlement holds
	ToolVersion string
	Summary     *Summary
	// Scrub cleans what an outcome carries into the state, the ledger and
	// the events (failure reasons, settlement reasons and evidence); nil
	// keeps them as they are.
	Scrub func(string) string
}

// NewPersist returns the sink that records each outcome in the state (one
// its stage committed itself, a filing, is only counted). An outcome that
// cost something or must be told (an agent run, an issue, a
// failure, a settlement, any diagnosis.* event) is one transaction: its
// state, its ledger line and its events (the outbox) commit together, so a
// crash keeps all of them or none. One that only saw a defect again (known,
// still waiting) changes the state in memory, written by the next
// transaction or the scan's last: a crash re-reads its records from the old
// cursor and decides them again, the same way, so nothing is lost, and a
// backlog of hundreds of waiting defects does not cost hundreds of commits.
func NewPersist(cfg PersistConfig) func(context.Context, pipeline.Outcome) error {
	return func(_ context.Context, o pipeline.Outcome) error {
		now := cfg.Now()
		o = scrubOutcome(o, cfg.Scrub)
		// A defect going to the backlog with fresh records saves its
		// dossier to a file first, so the state only names it.
		dossierFile, savedAt := "", now
		if (o.Status == pipeline.StatusDeferred || o.Status == pipeline.StatusFailed) && !o.Backlog && o.Markdown != "" {
			// A defect recurring while it waits (every scan of a watcher)
			// keeps a dossier under an hour old: its samples are fresh
			// enough, and rewriting it each scan cost a file and an fsync.
			cfg.Store.View(func(st *store.State) {
				if d, ok := st.Deferred[o.Fingerprint]; ok && d.DossierFile != "" && dossierFresh(d.DossierSaved, now) {
					dossierFile, savedAt = d.DossierFile, d.DossierSaved
				}
			})
			if dossierFile == "" {
				var err error
				if dossierFile, err = cfg.Store.SaveDossier(o.Fingerprint, o.Markdown); err != nil {
					return err
				}
			}
		}
		decide := func(st *store.State) store.Record {
			if o.Settle != nil {
				// The same verdict still in force is no new settlement: no
				// second event or ledger line every scan.
				if prev, ok := st.Settled[o.Fingerprint]; ok && now.Before(prev.Until) && prev.Verdict == string(o.Settle.Verdict) {
					o.Settle = nil
				}
			}
			var rec store.Record
			if o.Recorded { // its stage committed it whole (post's filed)
				return rec
			}
			rec.Events = Apply(st, o, now, cfg.MaxRetries)
			recordSettlementAndSpend(st, o, now, cfg.SettleFor)
			if d, ok := st.Deferred[o.Fingerprint]; ok && dossierFile != "" {
				d.DossierFile, d.Dossier, d.DossierSaved = dossierFile, "", savedAt
				st.Deferred[o.Fingerprint] = d
			}
			if o.Settle != nil {
				rec.Ledger = []store.LedgerEntry{{Time: now, Fingerprint: o.Fingerprint,
					Verdict: string(o.Settle.Verdict), Reason: o.Settle.Reason, Evidence: o.Settle.Evidence, ToolVersion: cfg.ToolVersion}}
			}
			return rec
		}
		var err error
		if !o.Recorded && (o.AgentRan || o.Settle != nil || (o.Status != pipeline.StatusKnown && o.Status != pipeline.StatusDeferred)) {
			err = cfg.Store.Decide(func(st *store.State) (store.Record, error) { return decide(st), nil })
		} else {
			var rec store.Record
			cfg.Store.Mutate(func(st *store.State) { rec = decide(st) })
			if len(rec.Events) > 0 || len(rec.Ledger) > 0 {
				// A first deferral's event: committed with its decision.
				err = cfg.Store.Decide(func(*store.State) (store.Record, error) { return rec, nil })
			}
		}
		cfg.Summary.add(o)
		return err
	}
}

// scrubOutcome scrubs the texts of o that persist writes. The agent stage
// already scrubbed the agent's; this is the last gate before the disk, for
// every producer of a reason (post's GitHub errors included).
func scrubOutcome(o pipeline.Outcome, scrub func(string) string) pipeline.Outcome {
	if scrub == nil {
		return o
	}
	o.Error = scrub(o.Error)
	if o.Settle != nil {
		s := *o.Settle
		s.Reason = scrub(s.Reason)
		s.Evidence = scrubEvidence(s.Evidence, scrub)
		o.Settle = &s
	}
	return o
}

// scrubEvidence returns a copy of ev with its texts scrubbed; numbers and
// lists of numbers (line numbers, counts) are kept.
func scrubEvidence(ev map[string]any, scrub func(string) string) map[string]any {
	if ev == nil {
		return nil
	}
	out := make(map[string]any, len(ev))
	for k, v := range ev {
		switch v := v.(type) {
		case string:
			out[k] = scrub(v)
		case []string:
			c := make([]string, len(v))
			for i, s := range v {
				c[i] = scrub(s)
			}
			out[k] = c
		default:
			out[k] = v
		}
	}
	return out
}

// Apply records one outcome in the state and returns the events to append.
// It is the pure core of persist.
func Apply(st *store.State, o pipeline.Outcome, now time.Time, maxRetries int) []store.Event {
	fp := o.Fingerprint
	// trigger is the-loop's name for the event type that raised the defect.
	base := map[string]any{"fingerprint": fp, "trigger": o.Event, "event_type": o.Event, "count": o.Count}
	ev := func(typ, level string, extra map[string]any) store.Event {
		f := map[string]any{}
		for k, v := range base {
			f[k] = v
		}
		for k, v := range extra {
			f[k] = v
		}
		return store.Event{Type: typ, Level: level, At: now, Fields: f}
	}
	events := detected(st, o, ev)
	return append(events, applyStatus(st, o, now, maxRetries, ev)...)
}

// detected announces a defect on its first attempt (an agent run or a
// post: filed or failed, with no failure counted yet), as the-loop does:
// a deferral is not an attempt, and the-loop emits no diagnosis.detected
// for it; the attempt a later scan makes announces it then.
func detected(st *store.State, o pipeline.Outcome, ev func(string, string, map[string]any) store.Event) []store.Event {
	switch {
	case st.Attempts[o.Fingerprint] > 0:
		return nil
	case o.Status == pipeline.StatusFiled, o.Status == pipeline.StatusFailed:
		return []store.Event{ev("diagnosis.detected", "info", map[string]any{"template": o.Template})}
	}
	return nil
}

// failedStage is the-loop's stage of a failure: "agent" when no usable
// answer came back, "post" when the answer was there and filing failed.
func failedStage(o pipeline.Outcome) string {
	if o.Failure == "" && o.Answer != nil {
		return "post"
	}
	return "agent"
}

// maxTheLoopKeys bounds the v1 entries kept per defect for the-loop.
const maxTheLoopKeys = 32

// theLoopKeys are the fingerprints the-loop itself gives the defect's
// records (v1, computed from this scan's samples, else the group's v1
// aliases): a reported or abandoned entry is also kept under each, so
// that the-loop's own scan, re-enabled, does not file the defect again.
func theLoopKeys(st *store.State, o pipeline.Outcome) []string {
	var keys []string
	add := func(k string) {
		if k != "" && k != o.Fingerprint && len(keys) < maxTheLoopKeys && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	for _, s := range o.Samples {
		if s.Fields != nil {
			add(fingerprint.LegacyOf(fingerprint.Input{Event: s.Str("event"), Error: s.Str("error"), Fields: s.Fields}))
		}
	}
	for _, a := range o.Aliases {
		if fingerprint.IsLegacy(a) {
			add(a)
		}
	}
	for _, k := range st.Deferred[o.Fingerprint].TheLoop {
		add(k)
	}
	return keys
}

// reportFor the-loop: the entry under each of its keys, unless one it
// wrote itself is there.
func reportForTheLoop(st *store.State, o pipeline.Outcome, r store.Reported) {
	r.AliasOf, r.Title = o.Fingerprint, ""
	for _, k := range theLoopKeys(st, o) {
		if prev, ok := st.Reported.Get(k); !ok || prev.AliasOf != "" {
			st.Reported.Set(k, r)
		}
	}
}

func applyStatus(st *store.State, o pipeline.Outcome, now time.Time, maxRetries int, ev func(string, string, map[string]any) store.Event) []store.Event {
	fp := o.Fingerprint
	switch o.Status {
	case pipeline.StatusFiled:
		st.Reported.Set(fp, store.Reported{URL: o.URL, Number: o.Number, At: now, Event: o.Event, Title: o.Title})
		reportForTheLoop(st, o, st.Reported.At(fp))
		st.Posted = append(st.Posted, now)
		clearPending(st, fp)
		return []store.Event{ev("diagnosis.posted", "info", map[string]any{"url": o.URL, "number": o.Number})}
	case pipeline.StatusKnown:
		if !st.Reported.Has(fp) && o.URL != "" {
			st.Reported.Set(fp, store.Reported{URL: o.URL, Number: o.Number, At: now, Event: o.Event})
		}
		if r, ok := st.Reported.Get(fp); ok && r.URL != "" {
			reportForTheLoop(st, o, r)
		}
		clearPending(st, fp)
	case pipeline.StatusSettled:
		delete(st.Deferred, fp)
		delete(st.Answers, fp)
		if o.Settle != nil {
			level := "info"
			if o.Settle.Verdict == pipeline.SettledEnvironment {
				level = "warning" // the operator's to fix
			}
			return []store.Event{ev("diagnosis.settled", level, map[string]any{
				"verdict": o.Settle.Verdict, "reason": o.Settle.Reason, "evidence": o.Settle.Evidence})}
		}
	case pipeline.StatusDeferred:
		already := keepForLater(st, o, now)
		d := st.Deferred[fp]
		d.Waiting, d.Reason = "", o.Reason
		if o.Wait != nil {
			d.Waiting, d.Reason = o.Wait.String(), ""
		}
		st.Deferred[fp] = d
		if !already {
			return []store.Event{ev("diagnosis.deferred", "info", map[string]any{"reason": o.Reason})}
		}
	case pipeline.StatusFailed:
		st.Attempts[fp]++
		st.Failures[fp] = o.Error
		if st.FirstFailed[fp].IsZero() {
			st.FirstFailed[fp] = now
		}
		stage := failedStage(o)
		// the-loop's fields: stage (agent | post) and attempt (this one's
		// number); attempts is this tool's older name for the latter.
		failed := map[string]any{"error": o.Error, "stage": stage, "attempt": st.Attempts[fp], "attempts": st.Attempts[fp]}
		if RetriesExhausted(st, fp, now, maxRetries, stage) {
			keepForLater(st, o, now)
			pending := st.Deferred[fp]
			// the-loop's shape: its reason names the stage and the count.
			a := store.Abandoned{Reason: fmt.Sprintf("%s failed %d times", stage, st.Attempts[fp]),
				At: now, Event: o.Event, Stage: stage, Error: o.Error}
			for _, k := range theLoopKeys(st, o) {
				if _, ok := st.Abandoned[k]; !ok {
					alias := a
					alias.AliasOf = fp
					st.Abandoned[k] = alias
				}
			}
			a.Pending = &pending
			st.Abandoned[fp] = a
			delete(st.Deferred, fp)
			failed["abandoned"] = true
			return []store.Event{ev("diagnosis.failed", "warning", failed)}
		}
		// Its records may lie behind the cursor by the next scan: keep the
		// defect in the backlog so the retry happens.
		keepForLater(st, o, now)
		return []store.Event{ev("diagnosis.failed", "warning", failed)}
	}
	return nil
}

// recordSettlementAndSpend keeps what the next scans decide with: a new
// settlement (until it expires), or the end of one a human now has; each
// heal (to tell transient from flaky); and the agent run's charge, refund
// and cost (budget.Account).
func recordSettlementAndSpend(st *store.State, o pipeline.Outcome, now time.Time, settleFor time.Duration) {
	if o.Settle != nil {
		prev := st.Settled[o.Fingerprint]
		count := 1
		if prev.Verdict == string(o.Settle.Verdict) {
			count = prev.Count + 1
		}
		st.Settled[o.Fingerprint] = store.Settlement{Verdict: string(o.Settle.Verdict), Reason: o.Settle.Reason,
			Evidence: o.Settle.Evidence, At: now, Until: now.Add(settleFor), Count: count}
	} else if o.Status != pipeline.StatusSettled {
		delete(st.Settled, o.Fingerprint) // went on to a human: the old settlement no longer holds
	}
	for i := 0; i < o.Healed; i++ {
		st.Heals[o.Fingerprint] = append(st.Heals[o.Fingerprint], now)
	}
	budget.Account(st, o, now)
}

// keepForLater puts a defect in the backlog with what a later scan needs to
// file it without its records: the scrubbed dossier and, when the agent ran,
// its answer. It reports whether the defect was already there.
func keepForLater(st *store.State, o pipeline.Outcome, now time.Time) (already bool) {
	d, already := st.Deferred[o.Fingerprint]
	if d.Since.IsZero() {
		d.Since = o.FirstSeen
		if d.Since.IsZero() {
			d.Since = now
		}
	}
	if d.Waited.IsZero() {
		d.Waited = now
	}
	d.LastSeen, d.Event, d.Template = o.LastSeen, o.Event, o.Template
	if o.Count > d.Count {
		d.Count = o.Count
	}
	if o.Markdown != "" && d.DossierFile == "" {
		d.Dossier = o.Markdown
	}
	if o.Answer != nil && o.Failure == "" {
		d.Finding, _ = json.Marshal(o.Answer)
	}
	d.TheLoop = theLoopKeys(st, o)
	st.Deferred[o.Fingerprint] = d
	return already
}

func clearPending(st *store.State, fp string) {
	delete(st.Deferred, fp)
	delete(st.Intents, fp)
	delete(st.Attempts, fp)
	delete(st.Failures, fp)
	delete(st.FirstFailed, fp)
	delete(st.Answers, fp)
}

// AbandonAfter is the least time a defect's post failures must span before
// it is abandoned: maxRetries rejections within minutes are more likely one
// bad hour of GitHub's than a defect it will never take.
const AbandonAfter = 24 * time.Hour

// RetriesExhausted is the one rule for abandoning a defect: maxRetries
// failures of its own (never an outage's or the setup's, which wait
// uncounted). A failure at stage "agent" (a run whose answer was no
// finding) counts at once, as the-loop counts it: each one was a paid run,
// so maxRetries caps the runs. A failure at "post" retries the kept answer
// at no cost, so it abandons only once the failures span AbandonAfter.
func RetriesExhausted(st *store.State, fp string, now time.Time, maxRetries int, stage string) bool {
	if maxRetries <= 0 || st.Attempts[fp] < maxRetries {
		return false
	}
	if stage == "agent" {
		return true
	}
	first, ok := st.FirstFailed[fp]
	// A state from before FirstFailed was kept: its count alone decides.
	return !ok || now.Sub(first) >= AbandonAfter
}

// FinishScan is the scan's last transaction: the cursor advances (only
// now, after every outcome is committed), the incident index and outages
// are kept, the retention is applied; then the outbox's events, this
// scan's and any a crashed scan left, are appended to the event log.
// Re-reading a crashed scan's lines from the old cursor re-decides them:
// what was committed is found committed (a filed defect is known), so no
// decision is made twice.
func FinishScan(s *store.Store, cursor *store.Cursor, incidents *incident.Index, sum *Summary, now time.Time, keep store.Retention) error {
	err := s.Finish(keep, now, func(st *store.State) {
		budget.Prune(st, now)
		if cursor != nil {
			st.Cursor = cursor
		}
		if incidents != nil {
			incidents.SaveTo(st)
		}
		noteOutages(st, sum, now)
	})
	if err != nil {
		return err
	}
	s.PruneDossiers()
	return s.FlushEvents()
}
