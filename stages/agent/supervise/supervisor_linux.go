package supervise

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/the-loop/the-loop-diagnose/stages/agent/sandbox"
)

// supervisorArg is the hidden first argument that makes a binary the
// agent's supervisor (runSupervised): Main takes it, called first thing in
// main, before flags are parsed or a config read, so the tool and the test
// binaries that run agents supervise alike.
const supervisorArg = "__agent-supervisor"

// reportFD is the report pipe (exec.Cmd.ExtraFiles[0]).
const reportFD = 3

// reapTimeout bounds the final kill-and-reap: a descendant that
// ignores SIGKILL (stuck in the kernel, or set-uid and not ours to
// signal) is left rather than holding the run forever.
const reapTimeout = 5 * time.Second

// Main makes this process the agent's supervisor or its confining helper
// (sandbox.Main) when args (os.Args) hold the hidden argument runSupervised
// or the supervisor starts it with, and exits when that role ends; for any
// other args it returns at once. Call it first thing in main, and in the
// TestMain of a test package that runs agents: the supervisor is the
// running binary re-executed.
func Main(args []string) {
	if len(args) == 3 && args[1] == sandbox.HelperArg {
		syscall.Exit(sandbox.Main(args[2]))
	}
	if len(args) == 2 && args[1] == supervisorArg {
		// syscall.Exit, not os.Exit: nothing is buffered, and os.Exit's
		// hooks would cost a race-detector build (the tests') a 1 s sleep
		// per agent run.
		syscall.Exit(serve())
	}
}

// serve runs one agent as runSupervised asked on stdin and
// reports how it ended on fd 3. It returns the supervisor's exit code.
func serve() int {
	// The agent's parent-death signal fires when the thread that forked it
	// exits (dieWithUs): this one, locked, lives as long as we do.
	runtime.LockOSThread()
	syscall.CloseOnExec(reportFD) // never the agent's
	out := os.NewFile(reportFD, "report")
	report := func(r runReport) int {
		b, _ := json.Marshal(r)
		if _, err := out.Write(append(b, '\n')); err != nil {
			return 1
		}
		return 0
	}
	// Orphaned descendants of the agent (a daemon that called setsid and
	// whose parent exited) are reparented to us, not to init, so they can
	// be found and killed. A kernel without it (before 3.4) leaves us the
	// agent's group only.
	_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	stopSig := make(chan os.Signal, 1)
	signal.Notify(stopSig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)

	in := bufio.NewReader(os.Stdin)
	line, err := in.ReadBytes('\n')
	var spec runSpec
	if err == nil {
		err = json.Unmarshal(line, &spec)
	}
	if err == nil && len(spec.Argv) == 0 {
		err = errors.New("empty argv")
	}
	if err != nil {
		return max(1, report(runReport{Error: "agent supervisor: reading what to run: " + err.Error()}))
	}
	parentGone := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, in)
		close(parentGone)
	}()

	devNull, err := os.Open(os.DevNull)
	if err != nil {
		return report(runReport{Error: "agent supervisor: " + err.Error()})
	}
	pid, err := forkExec(spec, devNull.Fd())
	devNull.Close()
	if err != nil {
		r := runReport{Error: "fork/exec " + spec.Path + ": " + err.Error()}
		var errno syscall.Errno
		if errors.As(err, &errno) {
			r.Errno = int(errno)
		}
		return report(r)
	}

	// Wait for the agent to exit without reaping it: while it is a zombie
	// its pid, and so its group id, cannot be anyone else's.
	exited := make(chan struct{})
	go func() {
		var info unix.Siginfo
		for unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
		}
		close(exited)
	}()
	stopped := false
	select {
	case <-exited:
	case <-parentGone:
		stopped = true
	case <-stopSig:
		stopped = true
	}
	ws, reaped := killDescendants(pid)
	if stopped && spec.Root != "" {
		_ = os.RemoveAll(spec.Root)
	}
	r := runReport{Stopped: stopped, Code: -1}
	if reaped {
		r.Status, r.Code = waitStatusText(ws), ws.ExitStatus()
	}
	return report(r)
}

// forkExec starts the agent as spec says: directly, or, with a
// policy, through the confining helper (this binary again, sandbox.Main),
// which confines itself and then execs the agent in its place: the agent
// is our child either way, with the same pid, group and parent-death
// signal.
func forkExec(spec runSpec, stdin uintptr) (int, error) {
	attr := &syscall.ProcAttr{
		Dir:   spec.Dir,
		Env:   spec.Env,
		Files: []uintptr{stdin, 1, 2},
		Sys:   &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	if spec.Policy == nil {
		return syscall.ForkExec(spec.Path, spec.Argv, attr)
	}
	arg, err := json.Marshal(sandbox.Spec{Path: spec.Path, Argv: spec.Argv, Dir: spec.Dir, Policy: *spec.Policy})
	if err != nil {
		return 0, err
	}
	return syscall.ForkExec(supervisorExe, []string{spec.Argv[0], sandbox.HelperArg, string(arg)}, attr)
}

// killDescendants kills the agent's group, then each child of ours
// until none is left: as a subreaper, every descendant whose parent dies
// becomes our child, so no child left means no descendant left. Only
// children are signalled, and only before they are reaped, so a pid is
// never one recycled for someone else. It returns the agent's wait status.
func killDescendants(agent int) (ws syscall.WaitStatus, reaped bool) {
	_ = syscall.Kill(-agent, syscall.SIGKILL)
	deadline := time.Now().Add(reapTimeout)
	for {
		for _, c := range children() {
			_ = syscall.Kill(c, syscall.SIGKILL)
		}
		for {
			var st syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &st, syscall.WNOHANG, nil)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil { // ECHILD: nothing of ours is left
				return ws, reaped
			}
			if pid == 0 {
				break // children left, none exited yet
			}
			if pid == agent {
				ws, reaped = st, true
			}
		}
		if time.Now().After(deadline) {
			return ws, reaped
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// children lists our children (zombies included) from /proc.
func children() []int {
	self := os.Getpid()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses,
		// so the fields are read after the last ')'.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) >= 2 {
			if ppid, err := strconv.Atoi(f[1]); err == nil && ppid == self {
				out = append(out, pid)
			}
		}
	}
	return out
}

// waitStatusText is ws as os.ProcessState.String prints it.
func waitStatusText(ws syscall.WaitStatus) string {
	switch {
	case ws.Exited():
		return "exit status " + strconv.Itoa(ws.ExitStatus())
	case ws.Signaled():
		s := "signal: " + ws.Signal().String()
		if ws.CoreDump() {
			s += " (core dumped)"
		}
		return s
	}
	return "wait status " + strconv.Itoa(int(ws))
}
