package store

import (
	"bytes"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sync/atomic"
	"time"
)

// The outbox: a decision's diagnosis.* events are rows inserted in the
// decision's own transaction, so a crash never keeps the decision without
// its events or the reverse. Each row records the event log's size at the
// decision (log_offset): its line, when appended, lies past it. FlushEvents
// appends them to the event log after the commit, each line carrying its
// row's event_id, fsyncs, and marks the rows flushed. A flush cut short
// between the append and the mark leaves rows pending: the next flush reads
// the log from their offset and appends only the events whose id it does
// not find there. So an event is never lost and never written twice (but
// for a log rotated in the very moment between, whose new file holds no
// trace of what went to the old one).

var idSeq atomic.Uint64

// newID is a row id that sorts by creation within a process (the outbox's
// order), unique across processes.
func newID(now time.Time) string {
	var r [6]byte
	_, _ = rand.Read(r[:])
	return fmt.Sprintf("%013d-%08d-%s", now.UnixMilli(), idSeq.Add(1)%1e8, hex.EncodeToString(r[:]))
}

// record adds rec's outbox and ledger rows to b.
func (s *Store) record(rec Record, b *batch) error {
	now := time.Now()
	if s.logPath != "" && len(rec.Events) > 0 {
		offset := int64(0)
		if fi, err := os.Stat(s.logPath); err == nil {
			offset = fi.Size()
		}
		for _, e := range rec.Events {
			id := newID(now)
			line, err := encodeEvent(e, id)
			if err != nil {
				return err
			}
			b.add(`INSERT INTO outbox (id, scope, created_ms, log_path, body, log_offset) VALUES (?, ?, ?, ?, ?, ?)`,
				id, s.rows.scope, now.UnixMilli(), s.logPath, string(line), offset)
		}
	}
	for _, l := range rec.Ledger {
		if err := addLedger(b, s.rows.scope, newID(now), l); err != nil {
			return err
		}
	}
	return nil
}

func addLedger(b *batch, scope, id string, l LedgerEntry) error {
	var ev any // NULL without evidence
	if l.Evidence != nil {
		e, err := json.Marshal(l.Evidence)
		if err != nil {
			return fmt.Errorf("ledger %s: evidence: %w", l.Fingerprint, err)
		}
		ev = string(e)
	}
	b.add(`INSERT INTO ledger (id, scope, at_ms, fingerprint, verdict, reason, evidence, tool_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		id, scope, ms(l.Time), l.Fingerprint, l.Verdict, l.Reason, ev, l.ToolVersion)
	return nil
}

type pendingEvent struct {
	id, path, body string
	offset         sql.NullInt64
}

// FlushEvents appends the outbox's pending events to their event logs (this
// decision's and whatever a crashed scan left) and marks them flushed.
func (s *Store) FlushEvents() error {
	if s.readOnly || s.db == nil {
		return nil
	}
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	q, err := s.db.SQL.QueryContext(s.ctx, s.db.Rebind(`SELECT id, log_path, body, log_offset FROM outbox WHERE scope = ? AND flushed_ms IS NULL ORDER BY id`), s.rows.scope)
	if err != nil {
		return &StoreError{s.db.Name(), fmt.Errorf("reading the outbox: %w", err)}
	}
	var pending []pendingEvent
	var paths []string
	for q.Next() {
		var p pendingEvent
		if err := q.Scan(&p.id, &p.path, &p.body, &p.offset); err != nil {
			q.Close()
			return &StoreError{s.db.Name(), err}
		}
		if !slices.Contains(paths, p.path) {
			paths = append(paths, p.path)
		}
		pending = append(pending, p)
	}
	q.Close()
	if err := q.Err(); err != nil {
		return &StoreError{s.db.Name(), err}
	}
	for _, path := range paths {
		var evs []pendingEvent
		for _, p := range pending {
			if p.path == path {
				evs = append(evs, p)
			}
		}
		if err := s.flushTo(path, evs); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) flushTo(path string, evs []pendingEvent) error {
	size := int64(0)
	if fi, err := os.Stat(path); err == nil {
		size = fi.Size()
	}
	from := size
	for _, e := range evs {
		if !e.offset.Valid { // a row of no decision's offset: search all
			from = 0
		} else if e.offset.Int64 < from {
			from = e.offset.Int64
		}
	}
	written, err := idsWritten(path, from, size)
	if err != nil {
		return err
	}
	// The lines not yet there, then the mark.
	var lines [][]byte
	for _, e := range evs {
		if !written[e.id] {
			lines = append(lines, []byte(e.body))
		}
	}
	if len(lines) > 0 {
		if err := appendLines(path, lines); err != nil {
			return err
		}
	}
	var done batch
	now := time.Now().UnixMilli()
	for _, e := range evs {
		done.add(`UPDATE outbox SET flushed_ms = ? WHERE id = ?`, now, e.id)
	}
	return s.execBatch(&done)
}

func (s *Store) execBatch(b *batch) error {
	if len(b.ops) == 0 {
		return nil
	}
	return s.write(b, nil)
}

var eventIDPattern = regexp.MustCompile(`"event_id":"([0-9a-f-]+)"`)

// maxIDScan bounds how much of the log a flush reads back for the ids it
// already wrote: what a crashed append wrote lies just past its offset.
const maxIDScan = 64 << 20

// idsWritten are the event_ids in the log at path from offset from. A log
// smaller than from was truncated or rotated: its start is read instead.
func idsWritten(path string, from, size int64) (map[string]bool, error) {
	ids := map[string]bool{}
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return ids, nil
	}
	if err != nil {
		return nil, fmt.Errorf("event log %s: %w", path, err)
	}
	defer f.Close()
	if from > size {
		from = 0
	}
	b, err := io.ReadAll(io.LimitReader(io.NewSectionReader(f, from, size-from), maxIDScan))
	if err != nil {
		return nil, fmt.Errorf("event log %s: %w", path, err)
	}
	if !bytes.Contains(b, []byte(`"event_id"`)) {
		return ids, nil
	}
	for _, m := range eventIDPattern.FindAllSubmatch(b, -1) {
		ids[string(m[1])] = true
	}
	return ids, nil
}

// PendingEvents counts the outbox's events not yet in the log.
func (s *Store) PendingEvents() (int, error) {
	if s.db == nil {
		return 0, nil
	}
	var n int
	err := s.db.SQL.QueryRowContext(s.ctx, s.db.Rebind(`SELECT COUNT(*) FROM outbox WHERE scope = ? AND flushed_ms IS NULL`), s.rows.scope).Scan(&n)
	return n, err
}
