package agent

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A sweep removes only a directory of ours that is old and unlocked: not a
// young one, a live run's, one named otherwise, a symbolic link (nor what
// it points at), or a file.
func TestSweepAgentDirs(t *testing.T) {
	tmp := t.TempDir()
	old := time.Now().Add(-time.Hour)
	mk := func(name string, age time.Time) string {
		p := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Join(p, "work"), 0o700); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, age, age)
		return p
	}
	stale := mk(dirPrefix+"stale", old)
	young := mk(dirPrefix+"young", time.Now())
	// Older than the timeout but younger than the floor.
	recent := mk(dirPrefix+"recent", time.Now().Add(-sweepMinAge/2))
	locked := mk(dirPrefix+"locked", old)
	other := mk("other-stale", old)
	outside := mk("outside-target", old)
	os.WriteFile(filepath.Join(outside, "keep"), []byte("k"), 0o600)
	link := filepath.Join(tmp, dirPrefix+"link")
	os.Symlink(outside, link)
	file := filepath.Join(tmp, dirPrefix+"file")
	os.WriteFile(file, nil, 0o600)
	os.Chtimes(file, old, old)

	unlock := lockDir(locked)
	os.Chtimes(locked, old, old)
	removed := SweepDirs(tmp, time.Second)
	if len(removed) != 1 || removed[0] != stale {
		t.Errorf("removed %q, want only %s", removed, stale)
	}
	for _, p := range []string{young, recent, locked, other, link, file, filepath.Join(outside, "keep")} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed", p)
		}
	}
	// Once its run is gone, the locked one goes too.
	unlock()
	if removed := SweepDirs(tmp, time.Second); len(removed) != 1 || removed[0] != locked {
		t.Errorf("after unlock removed %q, want %s", removed, locked)
	}
}
