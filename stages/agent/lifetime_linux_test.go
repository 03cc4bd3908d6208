package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// waitPids reads the pids the fake's sleep and setsid modes write.
func waitPids(t *testing.T, path string, n int) []int {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var pids []int
		for _, f := range strings.Fields(string(b)) {
			p, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("pid file %q: %v", b, err)
			}
			pids = append(pids, p)
		}
		if len(pids) >= n {
			return pids
		}
	}
	t.Fatal("the fake never wrote its pids")
	return nil
}

// Cancelling a run (a second ^C, a watcher stopping) kills the agent and
// a daemon it started in a session of its own, as a timeout does.
func TestAgentCancelKillsADaemonThatLeftTheGroup(t *testing.T) {
	useFake(t, "setsid")
	pidFile := filepath.Join(t.TempDir(), "pids")
	t.Setenv("FAKE_AGENT_PIDFILE", pidFile)
	r, err := New(Config{Harness: "claude", Binary: fakeBinary, Env: fakeEnv, ReadWrite: fakeWritable()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := r.Diagnose(ctx, testDossier("fp", "d"))
		done <- err
	}()
	pids := waitPids(t, pidFile, 2)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("run error = %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not return after cancel")
	}
	for _, p := range pids {
		if !processGone(p) {
			_ = syscall.Kill(p, syscall.SIGKILL)
			t.Errorf("process %d (agent %d, daemon %d) outlived the cancel", p, pids[0], pids[1])
		}
	}
}

// An agent that cannot be started (an argument over Linux's 128 KiB, a
// file that is not executable) is reported as exec reports it, through
// the supervisor.
func TestAgentStartErrorsThroughTheSupervisor(t *testing.T) {
	notExec := filepath.Join(t.TempDir(), "agent")
	os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o600)
	f := runAgent(t, Config{Harness: "command", Command: []string{notExec}}, testDossier("fp", "d"))[0]
	if want := "agent could not run"; !strings.Contains(f.Failure, want) || !strings.Contains(f.Failure, "permission denied") {
		t.Errorf("failure = %q, want %q … permission denied", f.Failure, want)
	}
	f = runAgent(t, Config{Harness: "command", Command: []string{fakeBinary, strings.Repeat("x", 200<<10)}}, testDossier("fp", "d"))[0]
	if !strings.Contains(f.Failure, "argument list too long") {
		t.Errorf("failure = %q, want exec's E2BIG", f.Failure)
	}
}
