package store

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// openCached opens path through c and returns the store with the state it holds.
func openCached(t *testing.T, c *Cache, path string) (*Store, *State) {
	t.Helper()
	s, err := c.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var st *State
	s.View(func(state *State) { st = state })
	return s, st
}

func TestACachedStateIsReusedOnlyWhileNoOneElseWroteTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	var c Cache
	s, _ := openCached(t, &c, path)
	if err := s.Update(func(st *State) error { st.Attempts["v2:a"] = 1; return nil }); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, first := openCached(t, &c, path)
	s.Close()
	s, again := openCached(t, &c, path)
	s.Close()
	if first != again || first.Attempts["v2:a"] != 1 {
		t.Fatal("the state this process wrote was read and parsed again although the file is unchanged")
	}

	// Another writer (the-loop, a cron run) replaces the file.
	replaced := `{"attempts": {"v2:a": 2}, "the_loop_key": 1}`
	if err := os.WriteFile(path+".new", []byte(replaced), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	s, st := openCached(t, &c, path)
	s.Close()
	if st.Attempts["v2:a"] != 2 {
		t.Fatalf("a file replaced behind the cache's back was not read again: attempts %v", st.Attempts)
	}

	// Or writes it in place, same size: the ctime and mtime move. The
	// pause outlasts the file system's timestamp granularity.
	time.Sleep(20 * time.Millisecond)
	inPlace := `{"attempts": {"v2:a": 3}, "the_loop_key": 1}`
	if err := os.WriteFile(path, []byte(inPlace), 0o600); err != nil {
		t.Fatal(err)
	}
	s, st = openCached(t, &c, path)
	s.Close()
	if st.Attempts["v2:a"] != 3 {
		t.Fatalf("a file rewritten in place was not read again: attempts %v", st.Attempts)
	}
}

func TestAStateWithChangesNeverWrittenIsReadAgain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	var c Cache
	s, _ := openCached(t, &c, path)
	if err := s.Update(func(st *State) error { st.Attempts["v2:a"] = 1; return nil }); err != nil {
		t.Fatal(err)
	}
	// A scan that fails after changing its state in memory: the next one
	// must start from the file, as a new process would.
	s.Mutate(func(st *State) { st.Attempts["v2:a"] = 99 })
	s.Close()
	s, st := openCached(t, &c, path)
	s.Close()
	if st.Attempts["v2:a"] != 1 {
		t.Fatalf("attempts = %v: a failed scan's unwritten changes leaked into the next scan", st.Attempts)
	}
}

// A checkpoint leaves the state ahead of the file for the next scan of the
// same process; Update writes it; another writer's file wins over it.
func TestACheckpointedStateStaysAheadOfTheFileUntilWritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	var c Cache
	s, _ := openCached(t, &c, path)
	if err := s.Update(func(st *State) error { st.Attempts["v2:a"] = 1; return nil }); err != nil {
		t.Fatal(err)
	}
	if age, ok := s.WrittenAgo(); !ok || age > time.Minute {
		t.Fatalf("WrittenAgo = %v, %v just after a write", age, ok)
	}
	s.Checkpoint(func(st *State) { st.Attempts["v2:a"] = 2 })
	if !s.Ahead() {
		t.Fatal("a checkpointed store is not ahead of its file")
	}
	s.Close()
	onDisk, err := Load(path)
	if err != nil || onDisk.Attempts["v2:a"] != 1 {
		t.Fatalf("a checkpoint wrote the file: %v %v", onDisk.Attempts, err)
	}

	s, st := openCached(t, &c, path)
	if st.Attempts["v2:a"] != 2 || !s.Ahead() {
		t.Fatalf("the next scan lost the checkpoint: %v", st.Attempts)
	}
	if err := s.Update(func(*State) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if s.Ahead() {
		t.Fatal("still ahead after a write")
	}
	s.Checkpoint(func(st *State) { st.Attempts["v2:a"] = 3 })
	s.Close()
	// Another writer replaces the file: its state wins, the checkpoint is
	// dropped (its lines are read again from that state's cursor).
	if err := os.WriteFile(path+".new", []byte(`{"attempts": {"v2:a": 7}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	s, st = openCached(t, &c, path)
	defer s.Close()
	if st.Attempts["v2:a"] != 7 || s.Ahead() {
		t.Fatalf("after another writer: attempts %v, ahead %v; want the file's 7", st.Attempts, s.Ahead())
	}
	if _, ok := (&Store{}).WrittenAgo(); ok {
		t.Fatal("a store without a cache claims its changes can wait")
	}
}
