package store

import (
	"database/sql"
	"time"
)

// Retention is what the state keeps of its past. Each scan applies it once,
// in its last transaction; every delete is by an indexed date or of an
// entry already in memory.
type Retention struct {
	// BacklogDays: a deferred defect that has waited in the backlog this
	// long by the tool's clock (Deferred.Waited), and whose records are as
	// old, leaves the backlog (its dossier file with it), counted in
	// backlog_summary; if it comes back it is a new sighting with fresh
	// records. The age of its records alone never prunes it: a first scan
	// of a log with months of history, or the scans after an outage, find
	// old records that have not waited at all.
	BacklogDays int
	// PerDay is the daily issue cap the backlog drains at (0: unknown).
	// The wait allowed grows to the days the cap needs for the whole
	// backlog: the cap defers, it never drops.
	PerDay int
	// LedgerDays: settlements older than this leave the ledger table.
	LedgerDays int
	// DismissedDays: a maintainer's dismissal older than this is dropped.
	// Safe: the defect stays reported, and its closed issue, found again
	// by its marker, records the dismissal anew.
	DismissedDays int
}

// DefaultRetention: a month of backlog (a cap of a few issues a day drains
// any real backlog well within it, so what is older waits for nothing but
// a budget that never came), a quarter of ledger (a settlement's evidence
// matters while the defect may recur), a year of dismissals.
var DefaultRetention = Retention{BacklogDays: 30, LedgerDays: 90, DismissedDays: 365}

// outboxKeep is how long flushed events stay in the outbox (for a look at
// what was appended where).
const outboxKeep = 7 * 24 * time.Hour

// Retain drops in st what the retention no longer keeps, and returns the
// statements the scan's last transaction adds (the indexed deletes and the
// backlog's counts).
func (s *Store) retain(st *State, r Retention, now time.Time) func(*sql.Tx) error {
	for fp, v := range st.Settled {
		if !v.Until.IsZero() && v.Until.Before(now) {
			delete(st.Settled, fp)
		}
	}
	if r.DismissedDays > 0 {
		cut := now.AddDate(0, 0, -r.DismissedDays)
		for fp, d := range st.Dismissed {
			if d.At.Before(cut) {
				delete(st.Dismissed, fp)
			}
		}
	}
	var b batch
	if r.BacklogDays > 0 {
		days := r.BacklogDays
		if r.PerDay > 0 {
			days = max(days, (len(st.Deferred)+r.PerDay-1)/r.PerDay+1)
		}
		cut := now.AddDate(0, 0, -days)
		type tally struct {
			defects, occurrences int
			first, last          time.Time
		}
		counts := map[string]*tally{}
		for fp, d := range st.Deferred {
			if d.Waited.IsZero() {
				// Kept by a release before the tool's clock was: it
				// starts waiting now.
				d.Waited = now
				st.Deferred[fp] = d
			}
			last := d.LastSeen
			if last.IsZero() {
				last = d.Since
			}
			if !d.Waited.Before(cut) || !last.Before(cut) || st.Intents[fp] != (Intent{}) {
				continue // not waited long, seen lately, or a create under way
			}
			t := counts[d.Event]
			if t == nil {
				t = &tally{first: d.Since, last: last}
				counts[d.Event] = t
			}
			t.defects++
			t.occurrences += max(d.Count, 1)
			if d.Since.Before(t.first) {
				t.first = d.Since
			}
			if last.After(t.last) {
				t.last = last
			}
			delete(st.Deferred, fp)
			delete(st.Answers, fp)
		}
		for event, t := range counts {
			b.add(`INSERT INTO backlog_summary (scope, event, defects, occurrences, first_ms, last_ms) VALUES (?, ?, ?, ?, ?, ?)
				ON CONFLICT (scope, event) DO UPDATE SET defects = backlog_summary.defects + excluded.defects,
				occurrences = backlog_summary.occurrences + excluded.occurrences,
				first_ms = CASE WHEN excluded.first_ms < backlog_summary.first_ms THEN excluded.first_ms ELSE backlog_summary.first_ms END,
				last_ms = CASE WHEN excluded.last_ms > backlog_summary.last_ms THEN excluded.last_ms ELSE backlog_summary.last_ms END`,
				s.Scope(), event, t.defects, t.occurrences, ms(t.first), ms(t.last))
		}
	}
	if r.LedgerDays > 0 {
		b.add(`DELETE FROM ledger WHERE scope = ? AND at_ms < ?`, s.Scope(), now.AddDate(0, 0, -r.LedgerDays).UnixMilli())
	}
	b.add(`DELETE FROM outbox WHERE scope = ? AND flushed_ms < ?`, s.Scope(), now.Add(-outboxKeep).UnixMilli())
	return func(tx *sql.Tx) error { return b.exec(s.db, tx) }
}

// Finish is the scan's last transaction: fn's changes (the cursor, after
// every outcome) with the retention applied. A read-only store applies
// nothing.
func (s *Store) Finish(r Retention, now time.Time, fn func(*State)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dirty = true
	fn(s.state)
	if s.readOnly || s.db == nil {
		return nil
	}
	return s.commit(Record{}, s.retain(s.state, r, now))
}

// BacklogSummary is the backlog that retention pruned, by event type.
type BacklogSummary struct {
	Event       string    `json:"event"`
	Defects     int       `json:"defects"`
	Occurrences int       `json:"occurrences"`
	First       time.Time `json:"first"`
	Last        time.Time `json:"last"`
}

// PrunedBacklog reads the backlog_summary rows of this deployment.
func (s *Store) PrunedBacklog() ([]BacklogSummary, error) {
	if s.db == nil {
		return nil, nil
	}
	q, err := s.db.SQL.QueryContext(s.ctx, s.db.Rebind(`SELECT event, defects, occurrences, first_ms, last_ms FROM backlog_summary WHERE scope = ? ORDER BY event`), s.Scope())
	if err != nil {
		return nil, &StoreError{s.db.Name(), err}
	}
	defer q.Close()
	var out []BacklogSummary
	for q.Next() {
		var b BacklogSummary
		var first, last int64
		if err := q.Scan(&b.Event, &b.Defects, &b.Occurrences, &first, &last); err != nil {
			return nil, &StoreError{s.db.Name(), err}
		}
		b.First, b.Last = fromMS(first), fromMS(last)
		out = append(out, b)
	}
	return out, q.Err()
}
