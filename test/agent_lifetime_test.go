//go:build linux

package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// procStart is a process's start time in clock ticks (/proc/PID/stat field
// 22): with the pid, it names one process, never a later one given the
// same pid. ok is false when there is no such process or it is a zombie.
func procStart(pid int) (start string, ppid int, ok bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, false
	}
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return "", 0, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return "", 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	return f[19], ppid, true
}

// watched are processes a test expects to be killed, by identity.
type watched map[int]string

func watch(t *testing.T, pids ...int) watched {
	t.Helper()
	w := watched{}
	for _, p := range pids {
		start, _, ok := procStart(p)
		if !ok {
			t.Fatalf("process %d is not running", p)
		}
		w[p] = start
	}
	// Whatever the outcome, the test leaves none of them behind.
	t.Cleanup(func() {
		for p := range w.alive() {
			syscall.Kill(p, syscall.SIGKILL)
		}
	})
	return w
}

func (w watched) alive() map[int]bool {
	out := map[int]bool{}
	for p, start := range w {
		if s, _, ok := procStart(p); ok && s == start {
			out[p] = true
		}
	}
	return out
}

// left polls for up to 5 s for every watched process to be gone and
// returns those still running.
func (w watched) left() map[int]bool {
	within(5*time.Second, 20*time.Millisecond, func() bool { return len(w.alive()) == 0 })
	return w.alive()
}

// waitPids reads the fake agent's pid file once it holds n pids.
func waitPids(t *testing.T, path string, n int) []int {
	t.Helper()
	var pids []int
	ok := eventually(func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pids = nil
		for _, f := range strings.Fields(string(b)) {
			p, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("pid file %q: %v", b, err)
			}
			pids = append(pids, p)
		}
		return len(pids) >= n
	})
	if !ok {
		t.Fatalf("the fake agent never wrote %d pids to %s", n, path)
	}
	return pids
}

// agentDirs lists the agent run directories in tmp.
func agentDirs(t *testing.T, tmp string) []string {
	t.Helper()
	entries, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "the-loop-diagnose-agent-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// lifetimeDeployment is a deployment whose agent runs in mode with a pid
// file and a TMPDIR of the test's own, so the tool's temporary
// directories (and its sweep) are confined to it.
func lifetimeDeployment(t *testing.T, mode string) (d *deployment, pidFile, tmp string) {
	t.Helper()
	gh := newGitHub(t)
	tmp = t.TempDir()
	pidFile = filepath.Join(t.TempDir(), "agent.pids")
	d = newDeployment(t, gh, deployOpts{agentMode: mode, env: []string{"FAKE_AGENT_PIDFILE=" + pidFile, "TMPDIR=" + tmp}})
	d.appendLog(failure(t0, "dispatch.failed", "handler panicked: index out of range [3] with length 3"))
	return d, pidFile, tmp
}

// A SIGKILL of the tool while its agent runs leaves nothing running: not
// the agent, not a daemon it started in a session of its own, not the
// supervisor; and not the run's temporary directory. The next scan
// diagnoses the defect and files it.
func TestSIGKILLOfTheToolLeavesNoAgentProcessOrDirectory(t *testing.T) {
	t.Parallel()
	for mode, n := range map[string]int{"sleep": 1, "setsid": 2} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			d, pidFile, tmp := lifetimeDeployment(t, mode)
			cmd := d.command("run")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pids := waitPids(t, pidFile, n)
			w := watch(t, pids...)
			// The agent's parent, when it is not the tool: its supervisor.
			supervisor := 0
			if _, ppid, _ := procStart(pids[0]); ppid != cmd.Process.Pid {
				supervisor = ppid
				w[ppid], _, _ = procStart(ppid)
			}
			if dirs := agentDirs(t, tmp); len(dirs) != 1 {
				t.Fatalf("agent directories while it runs: %v", dirs)
			}

			cmd.Process.Kill() // the tool alone, not its group
			cmd.Wait()
			left := w.left()
			t.Logf("processes left after SIGKILL of the tool: %d of %d (agent, its daemon, supervisor %d)", len(left), len(w), supervisor)
			if len(left) != 0 {
				t.Fatalf("still running after SIGKILL of the tool: %v (agent %d, daemon %v, supervisor %d)", left, pids[0], pids[1:], supervisor)
			}
			if !eventually(func() bool { return len(agentDirs(t, tmp)) == 0 }) {
				t.Errorf("the run's directory outlived it: %v", agentDirs(t, tmp))
			}

			d.env = append(d.env, "FAKE_AGENT_MODE=raw")
			if res := d.run("run"); res.code != 0 || d.gh.CountCreates() != 1 {
				t.Fatalf("rerun: exit %d, %d issues\n%s", res.code, d.gh.CountCreates(), res.stderr)
			}
		})
	}
}

// A timeout kills the agent, its group and a daemon that left the group.
func TestAgentTimeoutKillsADaemonThatLeftItsGroup(t *testing.T) {
	t.Parallel()
	d, pidFile, tmp := lifetimeDeployment(t, "setsid")
	cfg, _ := os.ReadFile(d.config)
	// Long enough for the agent to have started its daemon before the
	// timeout, on a machine busy with the tests running beside this one.
	os.WriteFile(d.config, []byte(strings.Replace(string(cfg), "timeoutSeconds: 20", "timeoutSeconds: 5", 1)), 0o644)
	res := d.run("run")
	if res.code != 1 || !strings.Contains(res.stderr, "agent timed out after 5s") {
		t.Fatalf("exit %d, want 1 with a timeout\n%s", res.code, res.stderr)
	}
	// The run is over: what is still alive of what it started is left.
	pids := waitPids(t, pidFile, 2)
	w := watched{}
	for _, p := range pids {
		if start, _, ok := procStart(p); ok {
			w[p] = start
		}
	}
	t.Cleanup(func() {
		for p := range w.alive() {
			syscall.Kill(p, syscall.SIGKILL)
		}
	})
	t.Logf("processes left after the timeout: %d of 2 (agent, daemon)", len(w.alive()))
	if len(w.alive()) != 0 {
		t.Fatalf("outlived the timeout: %v (agent %d, daemon %d)", w.alive(), pids[0], pids[1])
	}
	if dirs := agentDirs(t, tmp); len(dirs) != 0 {
		t.Errorf("directories left: %v", dirs)
	}
}

// An agent that answers and exits 0 but leaves a daemon behind: the
// answer is filed and the daemon is killed, not left to init.
func TestAnAgentsDaemonDiesWhenTheAgentExits(t *testing.T) {
	t.Parallel()
	d, pidFile, tmp := lifetimeDeployment(t, "setsid-answer")
	start := time.Now()
	res := d.run("run")
	took := time.Since(start)
	if res.code != 0 || d.gh.CountCreates() != 1 {
		t.Fatalf("exit %d, %d issues\n%s", res.code, d.gh.CountCreates(), res.stderr)
	}
	pids := waitPids(t, pidFile, 2)
	w := watched{}
	if s, _, ok := procStart(pids[1]); ok {
		w[pids[1]] = s
	}
	t.Cleanup(func() {
		for p := range w.alive() {
			syscall.Kill(p, syscall.SIGKILL)
		}
	})
	if len(w.alive()) != 0 {
		t.Fatalf("the daemon %d outlived its agent's run", pids[1])
	}
	if dirs := agentDirs(t, tmp); len(dirs) != 0 {
		t.Errorf("directories left: %v", dirs)
	}
	t.Logf("run took %s with a lingering daemon", took.Round(time.Millisecond))
}
