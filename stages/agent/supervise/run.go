// Package supervise starts an agent's process so that nothing it starts
// outlives its run: a process group of its own, killed whole when the run
// ends, and on Linux a supervisor (this binary re-executed) that is a child
// subreaper, kills whatever the agent left behind when the agent exits, when
// the run is cancelled and when we die, however we die.
//
// The supervisor and the kernel-confining helper (sandbox.Main) are this
// same binary started with a hidden first argument. Main recognises it:
// every binary that runs agents calls supervise.Main(os.Args) first thing
// in main (and every test package that runs agents, in TestMain). Nothing
// happens at import: importing this package changes no process's start-up.
package supervise

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/the-loop/the-loop-diagnose/stages/agent/sandbox"
)

// waitDelay bounds the wait for stdout/stderr to close after the process
// is killed, in case something outside the group holds them.
const waitDelay = 2 * time.Second

// Proc is one agent process to start: Path is Argv[0] resolved.
type Proc struct {
	Path      string
	Argv      []string
	Root, Dir string // Root: the run's temporary directory; Dir: the agent's working directory inside it
	Env       []string
	Policy    *sandbox.Policy // nil: not confined by the kernel
	Stdout    io.Writer
	Stderr    io.Writer
}

// ExitError is an agent that exited with a status other than 0, as
// os.ProcessState prints it ("exit status 3", "signal: killed").
type ExitError struct{ Status string }

func (e *ExitError) Error() string { return "agent " + e.Status }

// runDirect starts the agent as our own child in a process group of
// its own, and kills the group once the agent exits or ctx is done:
// children that stay in its group die with it, as do (on Linux, by the
// parent-death signal) the agent itself if we are killed. What left its
// group outlives it: Run prefers a supervisor where it can run one.
func runDirect(ctx context.Context, p Proc) error {
	cmd := exec.CommandContext(ctx, p.Path, p.Argv[1:]...)
	cmd.Args[0] = p.Argv[0]
	cmd.Dir = p.Dir
	cmd.Env = p.Env // an explicit list: exec adds no PWD to it
	cmd.Stdin = nil // /dev/null: a one-shot agent must not wait for input
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	unlock := dieWithUs(cmd.SysProcAttr)
	defer unlock()
	cmd.Cancel = func() error {
		// The group id is the child's pid (Setpgid); a negative pid
		// signals every process in the group.
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return err
	}
	cmd.WaitDelay = waitDelay
	cmd.Stdout = p.Stdout
	cmd.Stderr = p.Stderr

	err := cmd.Run()
	// Reap the rest of the group even when the leader exited on its own: a
	// background child must not outlive its one-shot run.
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return &ExitError{Status: exitErr.ProcessState.String()}
	}
	return err
}
