package agent

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// dirPrefix names every run's temporary directory (os.MkdirTemp adds
// a random suffix): SweepDirs removes only what carries it.
const dirPrefix = "the-loop-diagnose-agent-"

// sweepMinAge is the youngest directory a sweep removes, whatever the
// timeout: the lock (lockDir) is what tells a live run, and this
// covers the instant before a run takes it and the runs of versions that
// took none.
const sweepMinAge = 5 * time.Minute

// lockDir holds an advisory lock on a run's directory until unlock:
// the kernel drops it when we die, however we die, so a sweep that gets
// it knows no live run owns the directory. The descriptor is close-on-exec
// (the agent never holds it). Where the file system has no flock, the
// directory is simply not locked and the sweep goes by age alone.
func lockDir(root string) (unlock func()) {
	fd, err := syscall.Open(root, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return func() {}
	}
	if err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		syscall.Close(fd)
		return func() {}
	}
	return func() { syscall.Close(fd) }
}

// SweepDirs removes the temporary directories of agent runs that
// died without removing them (this tool SIGKILLed, together with its
// supervisor, or the host lost power): in dir (os.TempDir() when ""),
// directories named dirPrefix*, owned by our uid, unchanged for
// maxAge (the agent timeout: no live run is older; at least
// sweepMinAge) and not locked by a live run. A symbolic link is
// never followed, even one swapped in while we look: the name is opened
// O_NOFOLLOW, and RemoveAll removes a link, not what it points at. It
// returns the directories it removed.
func SweepDirs(dir string, maxAge time.Duration) []string {
	if dir == "" {
		dir = os.TempDir()
	}
	maxAge = max(maxAge, sweepMinAge)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), dirPrefix) || e.Type() != fs.ModeDir {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if sweepOne(path, maxAge) {
			removed = append(removed, path)
		}
	}
	return removed
}

func sweepOne(path string, maxAge time.Duration) bool {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || time.Since(fi.ModTime()) < maxAge {
		return false
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
		return false
	}
	if err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); errors.Is(err, syscall.EWOULDBLOCK) {
		return false // a live run's
	}
	return os.RemoveAll(path) == nil
}

// sweepState throttles the sweep runProcess makes before a run: the
// first run of a process (a cron scan) sweeps, and a watcher again once
// the age it sweeps by has passed.
var sweepState struct {
	sync.Mutex
	last time.Time
}

func sweepStale(timeout time.Duration) []string {
	sweepState.Lock()
	defer sweepState.Unlock()
	if !sweepState.last.IsZero() && time.Since(sweepState.last) < max(timeout, sweepMinAge) {
		return nil
	}
	sweepState.last = time.Now()
	return SweepDirs("", timeout)
}
