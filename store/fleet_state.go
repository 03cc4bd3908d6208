package store

import (
	"context"
	"database/sql"
	"strings"
)

// What the fleet's stages need of the Store: a fresh look at what other
// deployments wrote to the shared rows since this scan opened its state,
// and a write that shares its transaction with a fleet reservation.

// rowForgetter drops a shared entry the database no longer holds.
type rowForgetter interface {
	forgetRow(st *State, fp string)
}

// forgetRow drops fp from the state and the shadow when the state holds
// what was committed (nothing of this scan's own is lost).
func (c *mapColl[V]) forgetRow(st *State, fp string) {
	cur, ok := c.field(st)[fp]
	old, had := c.shadow()[fp]
	if ok && had && c.eq(cur, old) {
		delete(c.field(st), fp)
		delete(c.shadow(), fp)
	}
}

// forget drops a remembered absence, so the next Get asks the database.
func (k *Keyed[V]) forget(fp string) {
	if k.missing != nil {
		delete(k.missing, fp)
	}
}

// RefreshShared re-reads, for fps (a defect's fingerprint and aliases),
// the rows the fleet shares — reported, issues and the shared entries (the
// diagnosis cache, intents, attempts, abandonments, dismissals) — as other
// deployments have written them since the state was opened. A claim
// granted is followed by this: the defect may have been filed, or
// diagnosed, by the holder that released it. reported says one of fps is
// filed. A store without a database has nothing to refresh.
func (s *Store) RefreshShared(ctx context.Context, fps ...string) (reported bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rows == nil || len(fps) == 0 {
		return false, nil
	}
	for _, fp := range fps {
		s.state.Reported.forget(fp)
		s.state.Issues.forget(fp)
		if _, ok := s.state.Reported.Get(fp); ok {
			reported = true
		}
	}
	if s.failure != nil {
		return reported, s.failure
	}
	byKind := map[string]collection{}
	for _, c := range s.rows.colls {
		if c.shared() {
			byKind[c.kind()] = c
		}
	}
	args := make([]any, len(fps))
	for i, fp := range fps {
		args[i] = fp
	}
	q, err := s.db.SQL.QueryContext(ctx, s.db.Rebind(`SELECT kind, fingerprint, body FROM entries WHERE scope = '' AND fingerprint IN (?`+
		strings.Repeat(", ?", len(fps)-1)+`)`), args...)
	if err != nil {
		return reported, &StoreError{s.db.Name(), err}
	}
	defer q.Close()
	found := map[string]map[string]bool{}
	for q.Next() {
		var kind, fp, body string
		if err := q.Scan(&kind, &fp, &body); err != nil {
			return reported, &StoreError{s.db.Name(), err}
		}
		c, ok := byKind[kind]
		if !ok {
			continue // a newer version's kind
		}
		if err := c.decode(s.state, fp, []byte(body)); err != nil {
			return reported, &StoreError{s.db.Name(), err}
		}
		if found[kind] == nil {
			found[kind] = map[string]bool{}
		}
		found[kind][fp] = true
	}
	if err := q.Err(); err != nil {
		return reported, &StoreError{s.db.Name(), err}
	}
	for kind, c := range byKind {
		f, ok := c.(rowForgetter)
		if !ok {
			continue
		}
		for _, fp := range fps {
			if !found[kind][fp] {
				f.forgetRow(s.state, fp) // another deployment deleted it (filed: its intent is done)
			}
		}
	}
	return reported, nil
}

// UpdateWith is Update whose transaction also runs extra (a fleet
// reservation): both commit or neither does. When either fails, undo
// takes fn's change back out of memory, so no later Update writes it.
func (s *Store) UpdateWith(fn func(*State) error, extra func(*sql.Tx) error, undo func(*State)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dirty = true
	if err := fn(s.state); err != nil {
		return err
	}
	if s.readOnly || s.db == nil {
		return nil
	}
	err := s.commit(Record{}, extra)
	if err != nil && undo != nil {
		undo(s.state)
	}
	return err
}
