package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func reportOne(t *testing.T, s *Store, fp string) {
	t.Helper()
	if err := s.Decide(func(st *State) (Record, error) {
		st.Reported.Set(fp, Reported{Number: 1, At: time.Now()})
		return Record{}, nil
	}); err != nil {
		t.Fatal(err)
	}
}

func openOrFail(t *testing.T, path, dsn string) *Store {
	t.Helper()
	s, err := OpenDSN(path, dsn, false)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Two state paths in one directory have a database each, named after
// them; the-loop's own self-diagnosis.json keeps the-loop-diagnose.db.
func TestEachStatePathHasItsOwnDatabase(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	if got := DefaultDSN(a); got != filepath.Join(dir, "a.db") {
		t.Fatalf("a.json's database is %s", got)
	}
	if got := DefaultDSN(filepath.Join(dir, DefaultStateName)); got != filepath.Join(dir, DBName) {
		t.Fatalf("the default state path's database is %s, want %s", got, DBName)
	}
	s := openOrFail(t, a, "")
	reportOne(t, s, "v3:a-only")
	s.Close()
	s = openOrFail(t, b, "")
	s.Close()
	st, err := Load(b)
	if err != nil {
		t.Fatal(err)
	}
	if st.Reported.Has("v3:a-only") {
		t.Fatal("b.json sees a.json's defect")
	}
	if exists(filepath.Join(dir, DBName)) {
		t.Fatal("a shared database was created")
	}
}

// A database of the older one-per-directory name is taken over by the
// state path it belongs to; a state path whose scans shared it with
// another is refused, saying what to do, and starts afresh once told to.
func TestASharedDatabaseIsTakenOverOrRefused(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	shared := filepath.Join(dir, DBName)
	// As an older release left it: a.json imported first, b.json's scans
	// used it too.
	s := openOrFail(t, a, shared)
	reportOne(t, s, "v3:a-defect")
	s.Close()
	s = openOrFail(t, b, shared)
	s.Close()

	_, err := OpenDSN(b, "", false)
	var se *SharedStoreError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "a.json") || !strings.Contains(err.Error(), "b.json.lock") {
		t.Fatalf("b.json on the shared database: %v, want it refused naming a.json and the fix", err)
	}
	if _, err := Load(b); !errors.As(err, &se) {
		t.Fatalf("a read of b.json: %v, want it refused too", err)
	}

	// a.json's state is a.json's: taken over, renamed to a.db.
	if st, err := Load(a); err != nil || !st.Reported.Has("v3:a-defect") {
		t.Fatalf("a read of a.json before the takeover: %v", err)
	}
	s = openOrFail(t, a, "")
	s.Close()
	if exists(shared) || !exists(filepath.Join(dir, "a.db")) {
		t.Fatalf("the shared database was not renamed a.db")
	}
	if st, err := Load(a); err != nil || !st.Reported.Has("v3:a-defect") {
		t.Fatalf("a.json lost its state in the takeover: %v", err)
	}

	// Told to start afresh, b.json does, alone.
	if err := os.Remove(b + ".lock"); err != nil {
		t.Fatal(err)
	}
	s = openOrFail(t, b, "")
	s.Close()
	if st, err := Load(b); err != nil || st.Reported.Has("v3:a-defect") {
		t.Fatalf("b.json afresh: %v, or it sees a.json's defect", err)
	}
}
