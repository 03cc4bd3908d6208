//go:build linux

package test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// When the supervisor dies with the tool (both SIGKILLed before it could
// clean up), the agent still dies (its parent-death signal), and the
// directory it leaves is removed by the next scan once it is older than
// the agent timeout; a sweep spares a live run's (locked) directory, a
// young one, a symbolic link and anything not named as ours.
func TestTheNextScanSweepsWhatADeadRunLeft(t *testing.T) {
	t.Parallel()
	d, pidFile, tmp := lifetimeDeployment(t, "sleep")
	cmd := d.command("run")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	agent := waitPids(t, pidFile, 1)[0]
	_, supervisor, _ := procStart(agent)
	w := watch(t, agent, supervisor)
	// Stopped first, so it cannot clean up between the two kills.
	syscall.Kill(supervisor, syscall.SIGSTOP)
	cmd.Process.Kill()
	cmd.Wait()
	syscall.Kill(supervisor, syscall.SIGKILL)
	if left := w.left(); len(left) != 0 {
		t.Fatalf("the agent %d outlived its supervisor %d: %v", agent, supervisor, left)
	}
	leftover := agentDirs(t, tmp)
	if len(leftover) != 1 {
		t.Fatalf("want the dead run's directory left, got %v", leftover)
	}

	old := time.Now().Add(-2 * time.Hour)
	mk := func(name string) string {
		p := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Join(p, "work"), 0o700); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(p, "work", "dossier.md"), []byte("x"), 0o600)
		return p
	}
	young := mk("the-loop-diagnose-agent-young")
	locked := mk("the-loop-diagnose-agent-locked")
	notOurs := mk("someone-elses-agent-dir")
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "keep"), []byte("keep"), 0o600)
	link := filepath.Join(tmp, "the-loop-diagnose-agent-link")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(tmp, leftover[0]), locked, notOurs, outside} {
		os.Chtimes(p, old, old)
	}
	lfd, err := syscall.Open(locked, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(lfd)
	if err := syscall.Flock(lfd, syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}

	d.env = append(d.env, "FAKE_AGENT_MODE=raw")
	if res := d.run("run"); res.code != 0 || d.gh.CountCreates() != 1 {
		t.Fatalf("rerun: exit %d, %d issues\n%s", res.code, d.gh.CountCreates(), res.stderr)
	}
	if _, err := os.Lstat(filepath.Join(tmp, leftover[0])); err == nil {
		t.Errorf("the dead run's directory %s was not swept", leftover[0])
	}
	for _, p := range []string{young, locked, notOurs, link, filepath.Join(outside, "keep")} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was swept: %v", p, err)
		}
	}
}
