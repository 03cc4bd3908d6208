package store

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
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
}

// Identify computes f's identity: device, inode, and a hash of its first
// bytes (up to the offset that will be resumed, so appends don't change it).
func Identify(f *os.File, path string, upTo int64) (Cursor, error) {
	fi, err := f.Stat()
	if err != nil {
		return Cursor{}, fmt.Errorf("event log %s: %w", path, err)
	}
	c := Cursor{Path: path}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		c.Device, c.Inode = uint64(sys.Dev), uint64(sys.Ino)
	}
	n := int64(headBytes)
	if upTo < n {
		n = upTo
	}
	if fi.Size() < n {
		n = fi.Size()
	}
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, 0); err != nil && err != io.EOF {
		return Cursor{}, fmt.Errorf("event log %s: %w", path, err)
	}
	sum := sha256.Sum256(buf)
	c.HeadHash, c.HeadLen = hex.EncodeToString(sum[:]), int(n)
	return c, nil
}

// Resume decides where to start reading f given the previous cursor: at the
// cursor when f is the same file and has not shrunk; from the beginning,
// with a warning, when it was truncated or replaced.
func Resume(f *os.File, path string, prev *Cursor) (Position, error) {
	fi, err := f.Stat()
	if err != nil {
		return Position{}, fmt.Errorf("event log %s: %w", path, err)
	}
	if prev == nil || prev.Offset == 0 {
		id, err := Identify(f, path, fi.Size())
		return Position{Cursor: id}, err
	}
	same, err := Identify(f, path, int64(prev.HeadLen))
	if err != nil {
		return Position{}, err
	}
	sameInode := same.Device == prev.Device && same.Inode == prev.Inode
	switch {
	case sameInode && fi.Size() < prev.Offset:
		id, err := Identify(f, path, fi.Size())
		return Position{Cursor: id, Warning: fmt.Sprintf("event log shrank from %d to %d bytes (truncated): reading it from the beginning", prev.Offset, fi.Size())}, err
	case !sameInode || same.HeadHash != prev.HeadHash:
		id, err := Identify(f, path, fi.Size())
		return Position{Cursor: id, Warning: "event log was replaced since the last scan: reading it from the beginning"}, err
	}
	// Same file: keep the identity hash growing up to headBytes as it fills.
	id, err := Identify(f, path, fi.Size())
	if err != nil {
		return Position{}, err
	}
	return Position{Offset: prev.Offset, Line: prev.Line, Cursor: id}, nil
}
