package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// openAt opens the state of path in the store dsn, failing the test on error.
func openAt(t *testing.T, path, dsn string) *Store {
	t.Helper()
	s, err := OpenDSN(path, dsn, false)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// stateOf is s's state, to look at (not to change outside Update).
func stateOf(s *Store) *State {
	var st *State
	s.View(func(v *State) { st = v })
	return st
}

// captureNotices collects what the store says once (imports) for the test.
func captureNotices(t *testing.T) *bytes.Buffer {
	var b bytes.Buffer
	old := Notices
	Notices = &b
	t.Cleanup(func() { Notices = old })
	return &b
}

// The first open imports the-loop's state and the old ledger, leaves both
// files exactly as they were (bytes and mtime), says so once, and never
// imports again: a later change to the file is not read.
func TestTheJSONStateIsImportedOnceAndLeftUntouched(t *testing.T) {
	dialects(t, func(t *testing.T, dsn string) {
		dir := t.TempDir()
		path := filepath.Join(dir, "self-diagnosis.json")
		ledgerLine := `{"time":"2026-11-30T10:00:00Z","fingerprint":"v3:aaa","verdict":"environment","reason":"dns","tool_version":"0.1"}` + "\n"
		if err := os.WriteFile(path, []byte(theLoopState), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(LedgerPath(path), []byte(ledgerLine+"{torn"), 0o600); err != nil {
			t.Fatal(err)
		}
		old := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for _, p := range []string{path, LedgerPath(path)} {
			os.Chtimes(p, old, old)
		}
		said := captureNotices(t)
		for range 2 {
			s := openAt(t, path, dsn)
			if err := s.Update(func(st *State) error { st.Attempts["v3:new"]++; return nil }); err != nil {
				t.Fatal(err)
			}
			s.Close()
		}
		if n := strings.Count(said.String(), "imported the state "+path); n != 1 {
			t.Fatalf("said %d times that it imported the state, want once:\n%s", n, said)
		}
		if !strings.Contains(said.String(), "1 lines that were not ledger JSON skipped") {
			t.Errorf("the torn ledger line was not reported:\n%s", said)
		}
		for p, want := range map[string]string{path: theLoopState, LedgerPath(path): ledgerLine + "{torn"} {
			fi, _ := os.Stat(p)
			if b, _ := os.ReadFile(p); string(b) != want || !fi.ModTime().Equal(old) {
				t.Fatalf("%s was changed by the import (mtime %v)", p, fi.ModTime())
			}
		}
		// Written by the-loop after the import: not read.
		os.WriteFile(path, []byte(`{"attempts":{"v3:late":5}}`), 0o644)
		st, err := LoadDSN(path, dsn)
		if err != nil {
			t.Fatal(err)
		}
		if st.Reported.At("fedcba9876543210").Number != 9 || st.Attempts["2222222222222222"] != 2 || st.Attempts["v3:new"] != 2 ||
			len(st.Posted) != 2 || st.Attempts["v3:late"] != 0 {
			t.Fatalf("imported state: reported %v attempts %v posted %v", st.Reported.All(), st.Attempts, st.Posted)
		}
		s, err := OpenDSN(path, dsn, true)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if l, err := s.Ledger(time.Time{}); err != nil || len(l) != 1 || l[0].Reason != "dns" {
			t.Fatalf("imported ledger = %+v, %v", l, err)
		}
	})
}

// export --format the-loop writes what the-loop reads, and what a fresh
// store imports back to the same state.
func TestTheExportImportsBackToTheSameState(t *testing.T) {
	captureNotices(t)
	path := filepath.Join(t.TempDir(), "self-diagnosis.json")
	os.WriteFile(path, []byte(theLoopState), 0o644)
	s := openAt(t, path, "")
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	s.Update(func(st *State) error {
		st.Reported.Set("v3:abc", Reported{URL: "https://github.com/o/r/issues/3", Number: 3, At: at, Title: "t"})
		st.Issues.Set("v3:abc", IssueRef{Number: 3, State: "open", Occurrences: 4, Versions: []string{"1.0"}})
		st.Settled["v3:s"] = Settlement{Verdict: "environment", Reason: "r", At: at, Until: at.Add(time.Hour), Evidence: map[string]any{"line": 3.0}}
		st.Cursor = &Cursor{Path: "/log", Offset: 42, Line: 7}
		return nil
	})
	s.Close()
	first, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	exported, err := first.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "self-diagnosis.json")
	os.WriteFile(other, exported, 0o600)
	s2 := openAt(t, other, "")
	s2.Close()
	second, err := Load(other)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := second.MarshalJSON()
	if string(again) != string(exported) {
		t.Fatalf("the export did not import back as itself:\n%s\n%s", exported, again)
	}
}

// An Update writes only the rows it changed: none when nothing changed,
// one for one entry, whatever the state's size.
func TestAnUpdateWritesOnlyTheRowsItChanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	s := openAt(t, path, "")
	defer s.Close()
	s.Update(func(st *State) error {
		for i := range 2000 {
			fp := fmt.Sprintf("v3:%04d", i)
			st.Attempts[fp] = 1
			st.Reported.Set(fp, Reported{URL: "u", Number: i})
			st.Deferred[fp] = Deferred{Since: time.Now(), Event: "e", TheLoop: []string{"x"}}
		}
		return nil
	})
	pending := func() int {
		var b batch
		s.View(func(st *State) {
			if err := s.rows.diff(st, &b); err != nil {
				t.Fatal(err)
			}
		})
		return len(b.ops)
	}
	if n := pending(); n != 0 {
		t.Fatalf("%d rows to write after a commit with no change", n)
	}
	s.Mutate(func(st *State) {
		st.Attempts["v3:0007"]++
		d := st.Deferred["v3:0008"]
		d.Count++
		st.Deferred["v3:0008"] = d
		st.Reported.Delete("v3:0009")
	})
	if n := pending(); n != 3 {
		t.Fatalf("%d rows to write for three changed entries", n)
	}
}

// reported and issues are never loaded whole: a fresh store reads only the
// keys asked for, and remembers what it read (present or absent).
func TestReportedIsReadPerKeyNotAtOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	s := openAt(t, path, "")
	s.Update(func(st *State) error {
		for i := range 500 {
			st.Reported.Set(fmt.Sprintf("v3:%04d", i), Reported{Number: i})
		}
		return nil
	})
	s.Close()
	s = openAt(t, path, "")
	defer s.Close()
	st := stateOf(s)
	if n := len(st.Reported.m); n != 0 {
		t.Fatalf("%d reported entries loaded at open", n)
	}
	if fp, ok := st.IsReported("v3:nope", "v3:0042"); !ok || fp != "v3:0042" || st.Reported.At(fp).Number != 42 {
		t.Fatalf("IsReported = %q, %v", fp, ok)
	}
	if len(st.Reported.m) != 1 || !st.Reported.missing["v3:nope"] {
		t.Fatalf("read %d entries, missing %v", len(st.Reported.m), st.Reported.missing)
	}
	if st.Reported.Len() != 500 {
		t.Fatalf("All = %d entries", st.Reported.Len())
	}
}

// A lookup the database cannot answer never lets a defect through as new:
// it reads as reported, and the next write fails with the store's error.
func TestALookupTheDatabaseCannotAnswerFailsClosed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	s := openAt(t, path, "")
	defer s.Close()
	s.db.SQL.Close() // the database goes away mid-scan
	st := stateOf(s)
	if !st.Reported.Has("v3:new") {
		t.Fatal("an unanswered lookup read as not reported: the defect would be filed again")
	}
	err := s.Update(func(st *State) error { st.Attempts["v3:new"]++; return nil })
	var se *StoreError
	if err == nil || !strings.Contains(err.Error(), "reading reported") || !asStoreError(err, &se) {
		t.Fatalf("Update after a failed lookup = %v, want the store's error", err)
	}
}

func asStoreError(err error, target **StoreError) bool {
	for err != nil {
		if e, ok := err.(*StoreError); ok {
			*target = e
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

// logEventIDs counts each event_id's lines in the log.
func logEventIDs(t *testing.T, log string) map[string]int {
	t.Helper()
	b, _ := os.ReadFile(log)
	ids := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			if id, _ := m["event_id"].(string); id != "" {
				ids[id]++
			}
		}
	}
	return ids
}

// A decision's events commit with it and reach the log once each, however
// a flush was cut short: before it recorded where it would append, after
// it appended and before it marked them, or not at all.
func TestTheOutboxWritesEachEventOnceAcrossAFlushCutShort(t *testing.T) {
	dialects(t, func(t *testing.T, dsn string) {
		dir := t.TempDir()
		path, log := filepath.Join(dir, "state.json"), filepath.Join(dir, "events.jsonl")
		os.WriteFile(log, []byte(`{"event":"service.line"}`+"\n"), 0o644)
		s := openAt(t, path, dsn)
		s.SetEventLog(log)
		decide := func(n int) {
			err := s.Decide(func(st *State) (Record, error) {
				st.Attempts["v3:a"]++
				var rec Record
				for i := range n {
					rec.Events = append(rec.Events, Event{Type: "diagnosis.posted", Level: "info", At: time.Now(), Fields: map[string]any{"n": i}})
				}
				return rec, nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		decide(3)
		if err := s.FlushEvents(); err != nil {
			t.Fatal(err)
		}
		// Killed after the append, before the mark: the rows stay pending.
		if _, err := s.db.SQL.Exec(`UPDATE outbox SET flushed_ms = NULL`); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(log, append(mustRead(t, log), []byte(`{"event":"service.more"}`+"\n")...), 0o644)
		decide(2) // and a decision whose events were never flushed
		s.Close()
		s = openAt(t, path, dsn) // the next scan
		defer s.Close()
		if n, _ := s.PendingEvents(); n != 5 {
			t.Fatalf("%d events pending, want 5", n)
		}
		if err := s.FlushEvents(); err != nil {
			t.Fatal(err)
		}
		ids := logEventIDs(t, log)
		if len(ids) != 5 {
			t.Fatalf("%d distinct events in the log, want 5: %v", len(ids), ids)
		}
		for id, n := range ids {
			if n != 1 {
				t.Fatalf("event %s written %d times", id, n)
			}
		}
		if n, _ := s.PendingEvents(); n != 0 {
			t.Fatalf("%d events still pending after the flush", n)
		}
		if !strings.Contains(string(mustRead(t, log)), "service.more") {
			t.Fatal("the service's own lines were disturbed")
		}
	})
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Retention, once per scan: expired settlements and old dismissals go, the
// backlog that waited and went unseen for backlogDays is counted and dropped (its dossier file
// pruned), old ledger rows are deleted; reported stays.
func TestRetentionDropsWhatExpiredAndCountsTheOldBacklog(t *testing.T) {
	dialects(t, func(t *testing.T, dsn string) {
		path := filepath.Join(t.TempDir(), "state.json")
		s := openAt(t, path, dsn)
		defer s.Close()
		now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
		old := now.AddDate(0, 0, -40)
		file, err := s.SaveDossier("v3:old1", "# old\n")
		if err != nil {
			t.Fatal(err)
		}
		err = s.Decide(func(st *State) (Record, error) {
			st.Settled["v3:gone"] = Settlement{Verdict: "transient", At: old, Until: now.Add(-time.Hour)}
			st.Settled["v3:kept"] = Settlement{Verdict: "transient", At: now, Until: now.Add(time.Hour)}
			st.Dismissed["v3:ancient"] = Dismissal{At: now.AddDate(-2, 0, 0), Reason: "wontfix"}
			st.Dismissed["v3:recent"] = Dismissal{At: now, Reason: "wontfix"}
			st.Deferred["v3:old1"] = Deferred{Since: old, LastSeen: old, Waited: old, Event: "git.failed", Count: 3, DossierFile: file}
			st.Deferred["v3:old2"] = Deferred{Since: old.Add(-time.Hour), LastSeen: old, Waited: old, Event: "git.failed", Count: 2}
			st.Deferred["v3:fresh"] = Deferred{Since: old, LastSeen: now, Waited: old, Event: "git.failed"}
			st.Reported.Set("v3:filed", Reported{Number: 1, At: old.AddDate(-1, 0, 0)})
			return Record{Ledger: []LedgerEntry{{Time: now.AddDate(0, 0, -100), Fingerprint: "v3:x", Verdict: "transient"},
				{Time: now, Fingerprint: "v3:y", Verdict: "transient"}}}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Finish(DefaultRetention, now, func(*State) {}); err != nil {
			t.Fatal(err)
		}
		s.PruneDossiers()
		st, err := LoadDSN(path, dsn)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := st.Settled["v3:gone"]; ok || len(st.Settled) != 1 {
			t.Errorf("settled = %v", st.Settled)
		}
		if _, ok := st.Dismissed["v3:ancient"]; ok || len(st.Dismissed) != 1 {
			t.Errorf("dismissed = %v", st.Dismissed)
		}
		if _, ok := st.Deferred["v3:fresh"]; !ok || len(st.Deferred) != 1 {
			t.Errorf("deferred = %v", st.Deferred)
		}
		if !st.Reported.Has("v3:filed") {
			t.Error("reported was pruned")
		}
		if _, err := os.Stat(filepath.Join(s.DossierDir(), file)); !os.IsNotExist(err) {
			t.Errorf("the pruned defect's dossier is still there: %v", err)
		}
		sum, err := s.PrunedBacklog()
		if err != nil || len(sum) != 1 || sum[0].Defects != 2 || sum[0].Occurrences != 5 || !sum[0].First.Equal(old.Add(-time.Hour)) {
			t.Fatalf("backlog summary = %+v, %v", sum, err)
		}
		if l, _ := s.Ledger(time.Time{}); len(l) != 1 || l[0].Fingerprint != "v3:y" {
			t.Fatalf("ledger after retention = %+v", l)
		}
	})
}

// Shared rows are written in key order: deployments on one PostgreSQL that
// update the same issues then take their row locks in one order and cannot
// deadlock on each other (in map order, a fleet of eight did, in CI).
func TestSharedRowsAreWrittenInKeyOrder(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "state.json"), "")
	defer s.Close()
	s.Mutate(func(st *State) {
		for i := range 300 {
			fp := fmt.Sprintf("v3:%016x", uint64(i)*0x9e3779b97f4a7c15)
			st.Reported.Set(fp, Reported{URL: "u", Number: i})
			st.Issues.Set(fp, IssueRef{Number: i})
		}
	})
	var b batch
	s.View(func(st *State) {
		if err := s.rows.diff(st, &b); err != nil {
			t.Fatal(err)
		}
	})
	last := map[string]string{}
	written := map[string]int{}
	for _, o := range b.ops {
		table := tableOf(o.q)
		if table != "reported" && table != "issues" {
			continue
		}
		fp, _ := o.args[0].(string)
		if fp < last[table] {
			t.Fatalf("%s row %s written after %s: rows out of key order", table, fp, last[table])
		}
		last[table] = fp
		written[table]++
	}
	if written["reported"] != 300 || written["issues"] != 300 {
		t.Fatalf("rows written: %v, want 300 of each", written)
	}
}
