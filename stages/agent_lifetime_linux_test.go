package stages

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// agentWaitPids reads the pids the fake's sleep and setsid modes write.
func agentWaitPids(t *testing.T, path string, n int) []int {
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
	agentUseFake(t, "setsid")
	pidFile := filepath.Join(t.TempDir(), "pids")
	t.Setenv("FAKE_AGENT_PIDFILE", pidFile)
	st, err := NewAgent(AgentConfig{Harness: "claude", Binary: agentFakeBinary, Env: agentFakeEnv, ReadWrite: agentFakeWritable()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := pipeline.Collect(ctx, st, agentTestDossier("fp", "d"))
		done <- err
	}()
	pids := agentWaitPids(t, pidFile, 2)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("stage error = %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the stage did not return after cancel")
	}
	for _, p := range pids {
		if !agentProcessGone(p) {
			_ = syscall.Kill(p, syscall.SIGKILL)
			t.Errorf("process %d (agent %d, daemon %d) outlived the cancel", p, pids[0], pids[1])
		}
	}
}

// The agent's parent is the supervisor, not the tool, and the supervisor
// holds no variable the agent is not given.
func TestAgentRunsUnderASupervisorWithTheAgentsEnvironment(t *testing.T) {
	if !agentSupervisorUsable() {
		t.Skip("no /proc/self/exe")
	}
	t.Setenv("GH_TOKEN", "ghp_supervisor_must_not_hold_this")
	agentUseFake(t, "sleep")
	pidFile := filepath.Join(t.TempDir(), "pids")
	t.Setenv("FAKE_AGENT_PIDFILE", pidFile)
	done := make(chan []pipeline.Finding, 1)
	go func() {
		done <- agentRun(t, AgentConfig{Harness: "claude", Binary: agentFakeBinary, Timeout: 2 * time.Second}, agentTestDossier("fp", "d"))
	}()
	agent := agentWaitPids(t, pidFile, 1)[0]
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(agent) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	ppid, _ := strconv.Atoi(strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))[1])
	if ppid == os.Getpid() {
		t.Fatal("the agent is our own child: no supervisor")
	}
	env, err := os.ReadFile("/proc/" + strconv.Itoa(ppid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(env), "GH_TOKEN") {
		t.Error("the supervisor holds GH_TOKEN")
	}
	cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(ppid) + "/cmdline")
	if !strings.Contains(string(cmdline), agentSupervisorArg) {
		t.Errorf("the agent's parent is %q, not a supervisor", cmdline)
	}
	if f := (<-done)[0]; f.Failure != "agent timed out after 2s" {
		t.Errorf("failure = %q", f.Failure)
	}
	if !agentProcessGone(agent) {
		_ = syscall.Kill(agent, syscall.SIGKILL)
		t.Error("the agent outlived its timeout")
	}
}

// An agent that cannot be started (an argument over Linux's 128 KiB, a
// file that is not executable) is reported as exec reports it, through
// the supervisor.
func TestAgentStartErrorsThroughTheSupervisor(t *testing.T) {
	notExec := filepath.Join(t.TempDir(), "agent")
	os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o600)
	f := agentRun(t, AgentConfig{Harness: "command", Command: []string{notExec}}, agentTestDossier("fp", "d"))[0]
	if want := "agent could not run"; !strings.Contains(f.Failure, want) || !strings.Contains(f.Failure, "permission denied") {
		t.Errorf("failure = %q, want %q … permission denied", f.Failure, want)
	}
	f = agentRun(t, AgentConfig{Harness: "command", Command: []string{agentFakeBinary, strings.Repeat("x", 200<<10)}}, agentTestDossier("fp", "d"))[0]
	if !strings.Contains(f.Failure, "argument list too long") {
		t.Errorf("failure = %q, want exec's E2BIG", f.Failure)
	}
}

// Supervised or (without /proc) run as our own child, the agent leads a
// group of its own and has SIGKILL as its parent-death signal: if its
// parent is killed, so is it.
func TestAgentGetsSIGKILLWhenItsParentDies(t *testing.T) {
	for _, supervised := range []bool{true, false} {
		t.Run(map[bool]string{true: "supervised", false: "direct"}[supervised], func(t *testing.T) {
			if !supervised {
				usable := agentSupervisorUsable
				agentSupervisorUsable = func() bool { return false }
				t.Cleanup(func() { agentSupervisorUsable = usable })
			}
			record := agentUseFake(t, "raw")
			f := agentRun(t, AgentConfig{Harness: "command", Command: []string{agentFakeBinary}}, agentTestDossier("fp", "d"))[0]
			if f.Answer == nil {
				t.Fatalf("no answer: %s", f.Failure)
			}
			b, err := os.ReadFile(record)
			if err != nil {
				t.Fatal(err)
			}
			var rec struct {
				OwnGroup          bool `json:"own_group"`
				ParentDeathSignal int  `json:"parent_death_signal"`
			}
			if err := json.Unmarshal(b, &rec); err != nil {
				t.Fatal(err)
			}
			if !rec.OwnGroup || rec.ParentDeathSignal != int(syscall.SIGKILL) {
				t.Errorf("own group %v, parent-death signal %d; want true, %d", rec.OwnGroup, rec.ParentDeathSignal, syscall.SIGKILL)
			}
		})
	}
}
