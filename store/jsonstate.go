package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// The JSON state file: what the-loop (and this tool before its database)
// kept at the state path. It is read once, to import it, and written only
// by `state export`.

// loadJSON reads a JSON state file; a missing file is an empty state.
func loadJSON(path string) (*State, error) {
	st, _, err := readJSON(path)
	return st, err
}

// readJSON is loadJSON that also returns the bytes it parsed (nil for a
// missing file), for the import's record of what it imported.
func readJSON(path string) (*State, []byte, error) {
	f, err := openPrivate("state path", path, stateFix, os.O_RDONLY)
	if errors.Is(err, os.ErrNotExist) {
		return NewState(), nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, nil, fmt.Errorf("state %s: %w", path, err)
	}
	// Only a missing file is a fresh start. An empty or cut-off one is what
	// a full disk or a crash mid-copy leaves: taking it as empty state would
	// rerun every agent and reset the daily cap, so a person decides.
	if len(bytes.TrimSpace(b)) == 0 {
		problem := "is empty (0 bytes)"
		if len(b) > 0 {
			problem = "holds only white space"
		}
		return nil, nil, &CorruptStateError{Path: path, Problem: problem}
	}
	st := NewState()
	if err := json.Unmarshal(b, st); err != nil {
		return nil, nil, &CorruptStateError{Path: path, Problem: fmt.Sprintf("is not valid state JSON (%v)", err)}
	}
	return st, b, nil
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

// WriteFile writes b to path atomically (state export -o).
func WriteFile(path string, b []byte) error { return writeFileAtomic(path, b) }

// writeFileAtomic writes b to a temp file in path's directory, fsyncs it,
// renames it over path and fsyncs the directory: a crash leaves either the
// old or the new file, never a torn one.
func writeFileAtomic(path string, b []byte) error {
	dir := filepath.Dir(path)
	// The rename below would replace a link at path with our file, leaving
	// the operator's link silently gone: refused instead. The temp file is
	// created 0600 with O_EXCL, which never follows a link.
	if err := refuseSymlink("state path", path, stateFix); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	defer tmp.Close()
	if _, err := tmp.Write(b); err != nil {
		return fmt.Errorf("%s: write: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("%s: fsync: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("%s: rename: %w", path, err)
	}
	// The rename is done: a directory that cannot be synced does not undo it.
	_ = syncDir(dir)
	return tmp.Close()
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
