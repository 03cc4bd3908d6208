package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/gofrs/flock"
	"golang.org/x/sync/errgroup"
)

// ErrLocked means another scan holds the state lock: skip this scan.
var ErrLocked = errors.New("another scan holds the state lock")

// Store is the state file plus its lock. All methods are safe for concurrent
// use by the stages of one scan.
type Store struct {
	path     string
	lock     *flock.Flock
	readOnly bool   // dry run: state is read, never written
	cache    *Cache // a long-running process's state, reused between scans; may be nil

	mu    sync.Mutex
	state *State
	// dirty is set while the state in memory holds changes not on disk
	// (Mutate, an Update whose fn or write failed): such a state must not
	// be reused by the next scan in place of the file.
	dirty bool
	// unsynced are dossier files written this scan and not yet fsynced;
	// the next state write makes them durable first (dossiers.go).
	unsynced map[string]bool
	// referencedAtOpen are the dossier files the state named when it was
	// opened; pruneNeeded says a file may have become unused since.
	referencedAtOpen map[string]bool
	pruneNeeded      bool
}

// Open takes the exclusive, non-blocking lock beside path (path + ".lock") and
// loads the state. A held lock returns ErrLocked. readOnly (dry run) still
// locks nothing and writes nothing.
func Open(path string, readOnly bool) (*Store, error) {
	return open(path, readOnly, nil)
}

func open(path string, readOnly bool, cache *Cache) (*Store, error) {
	s := &Store{path: path, readOnly: readOnly, cache: cache, unsynced: map[string]bool{}}
	if !readOnly {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("state %s: %w", path, err)
		}
		if err := refuseSymlink("state path", path, stateFix); err != nil {
			return nil, err
		}
		// The lock file is opened without following a link (O_NOFOLLOW):
		// a planted one would make us create or lock a file elsewhere.
		s.lock = flock.New(path+".lock", flock.SetFlag(os.O_CREATE|os.O_RDONLY|syscall.O_NOFOLLOW))
		ok, err := s.lock.TryLock()
		if errors.Is(err, syscall.ELOOP) {
			return nil, &SymlinkError{"state lock", path + ".lock", lockFix}
		}
		if err != nil {
			return nil, fmt.Errorf("state lock %s.lock: %w", path, err)
		}
		if !ok {
			return nil, ErrLocked
		}
	}
	// Only under the lock: no scan of ours writes the file while we look.
	if st, ok := cache.reuse(path); ok {
		s.state = st
	} else {
		st, id, err := load(path)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.state = st
		cache.remember(path, id, st)
		s.pruneNeeded = true // whatever a crash left behind
	}
	s.referencedAtOpen = referencedDossiers(s.state)
	return s, nil
}

// OpenMemory is a store that never touches disk (tests, replay).
func OpenMemory() *Store {
	return &Store{readOnly: true, state: NewState()}
}

// Load reads a state file; a missing file is an empty state. An empty,
// blank or malformed file is a *CorruptStateError naming it: it is never
// silently replaced.
func Load(path string) (*State, error) {
	st, _, err := load(path)
	return st, err
}

// load is Load that also returns the identity of the file it read, taken
// before reading: a change made while it reads alters the identity, so the
// state is never reused for a file it does not reflect.
func load(path string) (*State, fileIdentity, error) {
	f, err := openPrivate("state path", path, stateFix, os.O_RDONLY)
	if errors.Is(err, os.ErrNotExist) {
		return NewState(), fileIdentity{}, nil
	}
	if err != nil {
		return nil, fileIdentity{}, err
	}
	defer f.Close()
	var id fileIdentity
	if fi, err := f.Stat(); err == nil {
		id = identify(fi)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fileIdentity{}, fmt.Errorf("state %s: %w", path, err)
	}
	// Only a missing file is a fresh start. An empty or cut-off one is what
	// a full disk or a crash mid-copy leaves: taking it as empty state would
	// rerun every agent and reset the daily cap, so a person decides.
	if len(bytes.TrimSpace(b)) == 0 {
		problem := "is empty (0 bytes)"
		if len(b) > 0 {
			problem = "holds only white space"
		}
		return nil, fileIdentity{}, &CorruptStateError{Path: path, Problem: problem}
	}
	st := NewState()
	if err := json.Unmarshal(b, st); err != nil {
		return nil, fileIdentity{}, &CorruptStateError{Path: path, Problem: fmt.Sprintf("is not valid state JSON (%v)", err)}
	}
	return st, id, nil
}

// CorruptStateError says the state file exists but holds no state: it is
// never silently replaced, since what it held (filed defects, retry counts,
// the daily window, the cursor) would be forgotten.
type CorruptStateError struct {
	Path, Problem string
}

func (e *CorruptStateError) Error() string {
	return fmt.Sprintf("state file %s %s: restore it from a backup, or delete it to start afresh (the event log is then read again from its beginning)", e.Path, e.Problem)
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
		s.dirty = true
		return err
	}
	if s.readOnly {
		return nil
	}
	return s.write()
}

// write makes the state durable, with every dossier file it may name. The
// caller holds s.mu.
func (s *Store) write() error {
	id, err := writeAtomic(s.path, s.state, s.syncDossiers)
	if err != nil {
		s.dirty = true
		s.cache.forget()
		return err
	}
	s.dirty = false
	s.cache.remember(s.path, id, s.state)
	return nil
}

// Write makes what the state holds in memory durable (changes made with
// Mutate or Checkpoint), as an Update that changes nothing more.
func (s *Store) Write() error {
	return s.Update(func(*State) error { return nil })
}

// PruneDossiers removes dossier files no backlog entry refers to. Call it
// only when no dossier is being saved (at the end of a scan): a file saved
// but not yet referenced would look unused. It lists the directory only when
// a file can have become unused since the store was opened.
func (s *Store) PruneDossiers() {
	if s.readOnly {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.pruneNeeded && !lostAny(s.referencedAtOpen, referencedDossiers(s.state)) {
		return
	}
	s.pruneDossiers(s.state)
	s.pruneNeeded = false
	s.referencedAtOpen = referencedDossiers(s.state)
}

// Mutate applies fn in memory only; the next Update (or the scan's final
// one) makes it durable. For changes a crash may lose because the scan that
// made them is re-run from the old cursor.
func (s *Store) Mutate(fn func(*State)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dirty = true
	fn(s.state)
}

// Checkpoint applies fn in memory and declares the state consistent without
// writing it: a watcher's scan that found nothing costly to redo (only
// recurrences) moves its cursor this way, and the state stays with the
// Cache for the next scan. A crash before the next write re-reads those
// lines from the cursor on disk and reaches the same state: nothing is lost.
// A store without a Cache would drop it at Close: use Update there.
func (s *Store) Checkpoint(fn func(*State)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s.state)
	s.dirty = false
	if s.cache != nil && s.cache.state == s.state {
		s.cache.ahead = true
	}
}

// Ahead reports whether the state holds checkpointed changes not yet written.
func (s *Store) Ahead() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cache != nil && s.cache.state == s.state && s.cache.ahead
}

// WrittenAgo is how long ago the state file this store holds was written (its
// mtime when this process last read or wrote it); ok is false when the store
// keeps no state between scans (no Cache, or no file identity on this system),
// so a change cannot wait for a later write.
func (s *Store) WrittenAgo() (time.Duration, bool) {
	if s.cache == nil || s.readOnly || !s.cache.id.known() || s.cache.state != s.state {
		return 0, false
	}
	return time.Since(s.cache.id.modified()), true
}

// Unsynced reports whether dossier files were written that only the next
// state write makes durable.
func (s *Store) Unsynced() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.unsynced) > 0
}

// Close releases the lock. A state left with changes it never wrote is not
// kept for the next scan: that one reads the file again.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.dirty {
		s.cache.forget()
	}
	s.mu.Unlock()
	if s.lock == nil {
		return nil
	}
	return s.lock.Unlock()
}

// writeAtomic writes st as JSON to a temp file in the same directory, fsyncs
// it (together with alongside, which must make durable what the file will
// refer to), renames it over path and fsyncs the directory: a crash leaves
// either the old or the new file, never a torn one, and never a new one
// naming a file that is not on disk. It returns the new file's identity.
// The JSON is compact: indenting it cost more than the rest of an
// incremental scan's encoding (`status` shows the state to people).
func writeAtomic(path string, st *State, alongside func() error) (fileIdentity, error) {
	b, err := st.MarshalJSON()
	if err != nil {
		return fileIdentity{}, fmt.Errorf("state %s: encode: %w", path, err)
	}
	return writeFileAtomic(path, append(b, '\n'), alongside)
}

// writeFileAtomic is writeAtomic for bytes already encoded. The temp file's
// fsync and alongside run concurrently: ext4 commits concurrent fsyncs in one
// journal transaction.
func writeFileAtomic(path string, b []byte, alongside func() error) (fileIdentity, error) {
	dir := filepath.Dir(path)
	// The rename below would replace a link at path with our file, leaving
	// the operator's link silently gone: refused instead. The temp file is
	// created 0600 with O_EXCL, which never follows a link.
	if err := refuseSymlink("state path", path, stateFix); err != nil {
		return fileIdentity{}, err
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return fileIdentity{}, fmt.Errorf("state %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	defer tmp.Close()
	if _, err := tmp.Write(b); err != nil {
		return fileIdentity{}, fmt.Errorf("state %s: write: %w", path, err)
	}
	var g errgroup.Group
	g.Go(func() error {
		if err := tmp.Sync(); err != nil {
			return fmt.Errorf("state %s: fsync: %w", path, err)
		}
		return nil
	})
	if alongside != nil {
		g.Go(alongside)
	}
	if err := g.Wait(); err != nil {
		return fileIdentity{}, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fileIdentity{}, fmt.Errorf("state %s: rename: %w", path, err)
	}
	// The rename is done: a directory that cannot be synced does not undo it.
	_ = syncDir(dir)
	// The renamed file's identity, from the descriptor: a writer that
	// replaced path since cannot be mistaken for us.
	var id fileIdentity
	if fi, err := tmp.Stat(); err == nil {
		id = identify(fi)
	}
	if err := tmp.Close(); err != nil {
		return fileIdentity{}, fmt.Errorf("state %s: %w", path, err)
	}
	return id, nil
}

// syncDir makes a directory's entries (a rename, a new file) durable. Some
// file systems cannot fsync a directory; their renames are durable anyway.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return nil
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}
