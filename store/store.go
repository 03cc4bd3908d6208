package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/gofrs/flock"
)

// ErrLocked means another scan holds the state lock: skip this scan.
var ErrLocked = errors.New("another scan holds the state lock")

// Store is the state file plus its lock. All methods are safe for concurrent
// use by the stages of one scan.
type Store struct {
	path     string
	lock     *flock.Flock
	readOnly bool // dry run: state is read, never written

	mu    sync.Mutex
	state *State
}

// Open takes the exclusive, non-blocking lock beside path (path + ".lock") and
// loads the state. A held lock returns ErrLocked. readOnly (dry run) still
// locks nothing and writes nothing.
func Open(path string, readOnly bool) (*Store, error) {
	s := &Store{path: path, readOnly: readOnly}
	if !readOnly {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("state %s: %w", path, err)
		}
		s.lock = flock.New(path + ".lock")
		ok, err := s.lock.TryLock()
		if err != nil {
			return nil, fmt.Errorf("state lock %s.lock: %w", path, err)
		}
		if !ok {
			return nil, ErrLocked
		}
	}
	st, err := Load(path)
	if err != nil {
		s.Close()
		return nil, err
	}
	s.state = st
	return s, nil
}

// OpenMemory is a store that never touches disk (tests, replay).
func OpenMemory() *Store {
	return &Store{readOnly: true, state: NewState()}
}

// Load reads a state file; a missing file is an empty state. A malformed
// file is an error naming it: it is never silently replaced.
func Load(path string) (*State, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return NewState(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("state %s: %w", path, err)
	}
	st := NewState()
	if len(b) == 0 {
		return st, nil
	}
	if err := json.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("state %s is not valid state JSON (%v): fix or move it aside", path, err)
	}
	return st, nil
}

// Path is the state file's path.
func (s *Store) Path() string { return s.path }

// ReadOnly reports whether writes are discarded (dry run).
func (s *Store) ReadOnly() bool { return s.readOnly }

// View calls fn with the state under the mutex; fn must not keep references.
func (s *Store) View(fn func(*State)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s.state)
}

// Update applies fn and then writes the state atomically, so what fn changed
// is durable when Update returns. If fn fails nothing is written, but fn's
// partial changes stay in memory: fn should fail before it changes anything.
func (s *Store) Update(fn func(*State) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := fn(s.state); err != nil {
		return err
	}
	if s.readOnly {
		return nil
	}
	return writeAtomic(s.path, s.state)
}

// PruneDossiers removes dossier files no backlog entry refers to. Call it
// only when no dossier is being saved (at the end of a scan): a file saved
// but not yet referenced would look unused.
func (s *Store) PruneDossiers() {
	if s.readOnly {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneDossiers(s.state)
}

// Mutate applies fn in memory only; the next Update (or the scan's final
// one) makes it durable. For changes a crash may lose because the scan that
// made them is re-run from the old cursor.
func (s *Store) Mutate(fn func(*State)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s.state)
}

// Close releases the lock.
func (s *Store) Close() error {
	if s.lock == nil {
		return nil
	}
	return s.lock.Unlock()
}

// writeAtomic writes v as JSON to a temp file in the same directory, fsyncs
// it, renames it over path and fsyncs the directory: a crash leaves either
// the old or the new file, never a torn one.
func writeAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("state %s: encode: %w", path, err)
	}
	return writeFileAtomic(path, append(b, '\n'))
}

// writeFileAtomic is writeAtomic for bytes already encoded.
func writeFileAtomic(path string, b []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("state %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("state %s: write: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("state %s: fsync: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("state %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("state %s: rename: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
