package store

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// headBytes is how much of the file's start identifies it: enough to tell a
// replaced file from the same one even when an inode number is reused.
const headBytes = 4096

// Position is where a scan starts reading, with the identity to persist.
type Position struct {
	Offset  int64
	Line    int64
	Cursor  Cursor // identity of the open file (offset filled in after the scan)
	Warning string // why the scan restarts from the beginning, if it does
	// Rotated is the file the cursor was in, renamed within the log's
	// directory since the last scan and still holding unread bytes: read it
	// from Rotated.Offset to its end before reading the live file from Offset.
	Rotated *Rotated
	// Between are files rotated away after Rotated (the log rotated more
	// than once between two scans), oldest first: read whole, after it.
	Between []Rotated
}

// Rotated is a rotated-away log file to finish before the live one.
type Rotated struct {
	Path   string // where the old file lives now, e.g. events.jsonl.1
	Offset int64  // the previous cursor: where to resume in it
	Line   int64
	Size   int64  // its size when found: read up to here
	Cursor Cursor // its identity (Path is the live log's, so a resumed cursor finds it again)
}

// Identify computes f's identity: device, inode, and a hash of its first
// bytes (up to the offset that will be resumed, so appends don't change it).
func Identify(f *os.File, path string, upTo int64) (Cursor, error) {
	fi, err := f.Stat()
	if err != nil {
		return Cursor{}, fmt.Errorf("event log %s: %w", path, err)
	}
	c := Cursor{Path: path}
	c.Device, c.Inode = fileID(fi)
	n := min(headBytes, upTo, fi.Size())
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, 0); err != nil && err != io.EOF {
		return Cursor{}, fmt.Errorf("event log %s: %w", path, err)
	}
	sum := sha256.Sum256(buf)
	c.HeadHash, c.HeadLen = hex.EncodeToString(sum[:]), int(n)
	return c, nil
}

func fileID(fi os.FileInfo) (device, inode uint64) {
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(sys.Dev), uint64(sys.Ino)
	}
	return 0, 0
}

// Resume decides where to start reading f given the previous cursor: at the
// cursor when f is the same file and has not shrunk; when the bytes the
// cursor was in moved elsewhere in the log's directory (renamed by a
// rotation, or copied by copytruncate), first the rest of them, then f from
// the beginning; from the beginning, with a warning, only when they are
// nowhere to be found.
func Resume(f *os.File, path string, prev *Cursor) (Position, error) {
	fi, err := f.Stat()
	if err != nil {
		return Position{}, fmt.Errorf("event log %s: %w", path, err)
	}
	fresh := func(warning string) (Position, error) {
		id, err := Identify(f, path, fi.Size())
		return Position{Cursor: id, Warning: warning}, err
	}
	if prev == nil || prev.Offset == 0 {
		return fresh("")
	}
	same, err := Identify(f, path, int64(prev.HeadLen))
	if err != nil {
		return Position{}, err
	}
	sameInode := same.Device == prev.Device && same.Inode == prev.Inode
	if sameInode && fi.Size() >= prev.Offset && same.HeadHash == prev.HeadHash {
		// Same file: keep the identity hash growing up to headBytes as it fills.
		id, err := Identify(f, path, fi.Size())
		if err != nil {
			return Position{}, err
		}
		return Position{Offset: prev.Offset, Line: prev.Line, Cursor: id}, nil
	}
	var old *Rotated
	var warning string
	if sameInode {
		// Truncated in place, and perhaps written past the cursor again
		// since (then only the first bytes tell): logrotate's copytruncate
		// copied the old content to a sibling first.
		what := fmt.Sprintf("shrank from %d to %d bytes (truncated)", prev.Offset, fi.Size())
		if fi.Size() >= prev.Offset {
			what = "was replaced in place (its first bytes changed)"
		}
		warning = lostWarning(path, what)
	} else if old, warning, err = findRotated(path, prev); err != nil {
		return Position{}, err
	}
	if old == nil {
		// Not renamed: copied (copytruncate, or copy then recreate)?
		copied, err := findCopied(path, prev, fi)
		if err != nil {
			return Position{}, err
		}
		if copied != nil {
			old, warning = copied, ""
		}
	}
	pos, err := fresh(warning)
	pos.Rotated = old
	if err == nil && old != nil {
		pos.Between, err = rotatedSince(path, old, fi)
	}
	return pos, err
}

// replacedElsewhere is what happened when the file the cursor was in is no
// longer the log and no file in its directory is it.
const replacedElsewhere = "was replaced since the last scan (the file the cursor was in is no longer in its directory)"

// lostWarning says the old bytes past the cursor are nowhere to be found.
func lostWarning(path, what string) string {
	return fmt.Sprintf("event log %s %s and no rotated copy holds what the last scan read: reading it from the beginning; lines written since the last scan may have been missed", path, what)
}

// findRotated looks in path's directory for the file the cursor was in (the
// same device and inode, the same first bytes): a rotation renamed it, e.g.
// to events.jsonl.1, and created a new log. Without one, the old file is gone
// (deleted, compressed, moved elsewhere) and what was not read of it is lost:
// the warning says so.
func findRotated(path string, prev *Cursor) (*Rotated, string, error) {
	replaced := lostWarning(path, replacedElsewhere)
	dir := filepath.Dir(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, "", fmt.Errorf("event log directory %s: %w", dir, err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // renamed or removed while we looked
		}
		if dev, ino := fileID(info); dev != prev.Device || ino != prev.Inode {
			continue
		}
		old := filepath.Join(dir, e.Name())
		f, err := os.Open(old)
		if err != nil {
			return nil, "", fmt.Errorf("rotated event log %s: %w", old, err)
		}
		defer f.Close()
		id, err := Identify(f, path, int64(prev.HeadLen))
		if err != nil {
			return nil, "", err
		}
		size := info.Size()
		if st, err := f.Stat(); err == nil {
			size = st.Size()
		}
		if size < prev.Offset {
			return nil, lostWarning(path, fmt.Sprintf("was rotated to %s, which then shrank below the cursor (%d < %d bytes),", old, size, prev.Offset)), nil
		}
		// Identify the open file, not the name: it may have been renamed again.
		if id.Device != prev.Device || id.Inode != prev.Inode || id.HeadHash != prev.HeadHash {
			return nil, replaced, nil
		}
		id.Offset, id.Line = prev.Offset, prev.Line
		return &Rotated{Path: old, Offset: prev.Offset, Line: prev.Line, Size: size, Cursor: id}, "", nil
	}
	return nil, replaced, nil
}

// compressedSuffixes mark rotated logs this tool cannot read.
var compressedSuffixes = []string{".gz", ".bz2", ".xz", ".zst", ".lz4", ".z"}

// rotatedSiblings are the files beside the log named like it
// (events.jsonl.1, events.jsonl-20261201), neither compressed nor the log
// itself: where a rotation or copytruncate leaves the old bytes.
func rotatedSiblings(path string) ([]os.FileInfo, error) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("event log directory %s: %w", dir, err)
	}
	var out []os.FileInfo
	for _, e := range entries {
		name, lower := e.Name(), strings.ToLower(e.Name())
		compressed := slices.ContainsFunc(compressedSuffixes, func(s string) bool { return strings.HasSuffix(lower, s) })
		if !e.Type().IsRegular() || !strings.HasPrefix(name, base) || name == base || compressed {
			continue
		}
		if info, err := e.Info(); err == nil { // else renamed or removed while we looked
			out = append(out, info)
		}
	}
	return out, nil
}

// rotatedSince lists the log's other rotated files written after the one the
// cursor was in (modified later, not the live file), oldest first: a log
// rotated twice between scans leaves one in between.
func rotatedSince(path string, rot *Rotated, live os.FileInfo) ([]Rotated, error) {
	old, err := os.Stat(rot.Path)
	if err != nil {
		return nil, fmt.Errorf("rotated event log %s: %w", rot.Path, err)
	}
	siblings, err := rotatedSiblings(path)
	if err != nil {
		return nil, err
	}
	siblings = slices.DeleteFunc(siblings, func(info os.FileInfo) bool {
		return os.SameFile(info, old) || os.SameFile(info, live) || !info.ModTime().After(old.ModTime())
	})
	slices.SortFunc(siblings, func(a, b os.FileInfo) int { return a.ModTime().Compare(b.ModTime()) })
	var out []Rotated
	for _, info := range siblings {
		full := filepath.Join(filepath.Dir(path), info.Name())
		f, err := os.Open(full)
		if err != nil {
			return nil, fmt.Errorf("rotated event log %s: %w", full, err)
		}
		id, err := Identify(f, path, info.Size())
		f.Close()
		if err != nil {
			return nil, err
		}
		out = append(out, Rotated{Path: full, Size: info.Size(), Cursor: id})
	}
	return out, nil
}

// findCopied looks for a copy of the log as it was at the cursor (same
// first bytes, at least as long) among its siblings: what copytruncate
// leaves before it truncates the log in place.
func findCopied(path string, prev *Cursor, live os.FileInfo) (*Rotated, error) {
	siblings, err := rotatedSiblings(path)
	if err != nil {
		return nil, err
	}
	for _, info := range siblings {
		if os.SameFile(info, live) || info.Size() < prev.Offset {
			continue
		}
		full := filepath.Join(filepath.Dir(path), info.Name())
		f, err := os.Open(full)
		if err != nil {
			continue
		}
		id, err := Identify(f, path, int64(prev.HeadLen))
		f.Close()
		if err != nil || id.HeadHash != prev.HeadHash {
			continue
		}
		id.Offset, id.Line = prev.Offset, prev.Line
		return &Rotated{Path: full, Offset: prev.Offset, Line: prev.Line, Size: info.Size(), Cursor: id}, nil
	}
	return nil, nil
}
