package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/the-loop/the-loop-diagnose/store/pgtest"
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
	// An older release's lock file stayed behind (this one removes its own on
	// release, as the-loop's does): the sign that b.json's scans ran here.
	if err := os.WriteFile(b+".lock", nil, 0o600); err != nil {
		t.Fatal(err)
	}

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

// On PostgreSQL each state path has its own deployment key, named after it
// (a.scope); the older one-per-directory key is taken over by the state
// path whose state it imported, and refused to another that used it.
func TestEachStatePathHasItsOwnDeploymentKeyOnPostgres(t *testing.T) {
	dsn := pgtest.Start(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	s := openOrFail(t, a, dsn)
	reportOne(t, s, "v3:a-defect")
	s.Close()
	if !exists(filepath.Join(dir, "a.scope")) || exists(filepath.Join(dir, ScopeFile)) {
		t.Fatal("a.json's key is not a.scope")
	}
	// As an older release left it: the directory's one key, which b.json's
	// scans used too.
	if err := os.Rename(filepath.Join(dir, "a.scope"), filepath.Join(dir, ScopeFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b+".lock", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var se *SharedStoreError
	if _, err := OpenDSN(b, dsn, false); !errors.As(err, &se) || !strings.Contains(err.Error(), "a.json") {
		t.Fatalf("b.json on the shared key: %v, want it refused naming a.json", err)
	}
	s = openOrFail(t, a, dsn)
	s.Close()
	if !exists(filepath.Join(dir, "a.scope")) || exists(filepath.Join(dir, ScopeFile)) {
		t.Fatal("a.json did not take its key over")
	}
	if st, err := LoadDSN(a, dsn); err != nil || !st.Reported.Has("v3:a-defect") {
		t.Fatalf("a.json lost its state in the takeover: %v", err)
	}
	// Told to start afresh, b.json has a key of its own (what it shares
	// with a.json on one database is the fleet's: reported, the cap).
	os.Remove(b + ".lock")
	s = openOrFail(t, b, dsn)
	s.Close()
	ka := readScope(filepath.Join(dir, "a.scope"))
	kb := readScope(filepath.Join(dir, "b.scope"))
	if ka == "" || kb == "" || ka == kb {
		t.Fatalf("keys a %q, b %q: want two", ka, kb)
	}
}
