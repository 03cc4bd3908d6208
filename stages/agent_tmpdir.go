package stages

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

// agentDirPrefix names every run's temporary directory (os.MkdirTemp adds
// a random suffix): SweepAgentDirs removes only what carries it.
const agentDirPrefix = "the-loop-diagnose-agent-"

// agentSweepMinAge is the youngest directory a sweep removes, whatever the
// timeout: the lock (agentLockDir) is what tells a live run, and this
// covers the instant before a run takes it and the runs of versions that
// took none.
const agentSweepMinAge = 5 * time.Minute

// agentLockDir holds an advisory lock on a run's directory until unlock:
// the kernel drops it when we die, however we die, so a sweep that gets
// it knows no live run owns the directory. The descriptor is close-on-exec
// (the agent never holds it). Where the file system has no flock, the
// directory is simply not locked and the sweep goes by age alone.
func agentLockDir(root string) (unlock func()) {
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

// SweepAgentDirs removes the temporary directories of agent runs that
// died without removing them (this tool SIGKILLed, together with its
// supervisor, or the host lost power): in dir (os.TempDir() when ""),
// directories named agentDirPrefix*, owned by our uid, unchanged for
// maxAge (the agent timeout: no live run is older; at least
// agentSweepMinAge) and not locked by a live run. A symbolic link is
// never followed, even one swapped in while we look: the name is opened
// O_NOFOLLOW, and RemoveAll removes a link, not what it points at. It
// returns the directories it removed.
func SweepAgentDirs(dir string, maxAge time.Duration) []string {
	if dir == "" {
		dir = os.TempDir()
	}
	maxAge = max(maxAge, agentSweepMinAge)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), agentDirPrefix) || e.Type() != fs.ModeDir {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if agentSweepOne(path, maxAge) {
			removed = append(removed, path)
		}
	}
	return removed
}

func agentSweepOne(path string, maxAge time.Duration) bool {
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

// agentSweep throttles the sweep agentRunProcess makes before a run: the
// first run of a process (a cron scan) sweeps, and a watcher again once
// the age it sweeps by has passed.
var agentSweep struct {
	sync.Mutex
	last time.Time
}

func agentSweepStale(timeout time.Duration) []string {
	agentSweep.Lock()
	defer agentSweep.Unlock()
	if !agentSweep.last.IsZero() && time.Since(agentSweep.last) < max(timeout, agentSweepMinAge) {
		return nil
	}
	agentSweep.last = time.Now()
	return SweepAgentDirs("", timeout)
}
