package store

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// The state lock is the-loop's RunLock (runlock.py), so either tool's scan
// excludes the other's on one state: an exclusive flock on state.json.lock
// that, once held, holds the holder's PID and a newline (`cat` it to see
// who holds it); released, the file is removed and then closed. Removing a
// flock'd file opens a race, a second opener locking the orphaned inode,
// which acquire closes as the-loop does: a lock whose inode is no longer
// the path's is dropped and the path opened again.

// stateLock is one held state lock.
type stateLock struct {
	path string
	f    *os.File
	// keep leaves the file behind on release: a state path refused for a
	// shared store keeps the mark that refused it (SharedStoreError), or
	// its next scan would start afresh on its own.
	keep bool
}

// acquireLock takes the lock at path: ErrLocked when another process holds
// it. The file is opened without following a link (O_NOFOLLOW): a planted
// one would make us create or lock a file elsewhere; that is ELOOP.
func acquireLock(path string) (*stateLock, error) {
	// Each retry means another holder completed a release; five bound it
	// as the-loop bounds it.
	for range 5 {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, ErrLocked
			}
			return nil, err
		}
		if sameFile(f, path) {
			// Written only once held, so no reader sees the PID of a
			// process that lost the race.
			l := &stateLock{path: path, f: f}
			if err := l.writePID(); err != nil {
				f.Close()
				return nil, err
			}
			return l, nil
		}
		f.Close() // a stale inode: its holder removed it as we opened it
	}
	return nil, ErrLocked
}

func (l *stateLock) writePID() error {
	if err := l.f.Truncate(0); err != nil {
		return err
	}
	if _, err := l.f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		return err
	}
	return l.f.Sync()
}

// release removes the file, while still holding it so no one else can
// have locked it, and then closes it, which drops the flock.
func (l *stateLock) release() error {
	if !l.keep && sameFile(l.f, l.path) {
		os.Remove(l.path) // best effort: a file left behind is unlocked
	}
	return l.f.Close()
}

// sameFile reports whether the open f is the file path names now.
func sameFile(f *os.File, path string) bool {
	held, err := f.Stat()
	if err != nil {
		return false
	}
	now, err := os.Lstat(path)
	return err == nil && os.SameFile(held, now)
}

// LockHolder is the PID written in the lock beside statePath, or 0 when
// there is no lock file or it holds no PID. Like the-loop's holder() it says
// who wrote the file; a scan's ErrLocked says someone holds it.
func LockHolder(statePath string) int {
	f, err := os.OpenFile(statePath+".lock", os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return 0
	}
	defer f.Close()
	buf := make([]byte, 32)
	n, _ := f.Read(buf)
	pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// LockHolderNote is " (pid N)" naming the lock's holder, for a message
// saying the lock is held, or "" when its file names none.
func LockHolderNote(statePath string) string {
	if pid := LockHolder(statePath); pid > 0 {
		return fmt.Sprintf(" (pid %d)", pid)
	}
	return ""
}
