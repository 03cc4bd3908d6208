package supervise

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/the-loop/the-loop-diagnose/stages/agent/sandbox"
)

// Run starts the agent under a supervisor: this binary re-executed
// (/proc/self/exe, the very file we run even if it was replaced since) as
// `__agent-supervisor` (supervisor_linux.go, Main). The supervisor is a
// child subreaper, so every descendant of the agent that is orphaned,
// however it left the agent's group or session, becomes its child; it
// kills all of them when the agent exits, when we cancel it, and when we
// die (its stdin is a pipe only we hold open, and it gets SIGTERM as its
// parent-death signal), then removes the run's directory if we could not.
// Without /proc there is no supervisor (nor a way to find what it should
// kill), and the agent runs as our child as elsewhere, with a parent-death
// signal of its own.
//
// Run returns nil when the agent exited 0, an *ExitError when it exited
// otherwise, exec.ErrWaitDelay when it exited 0 but something held its
// output open, and the error exec gave when it could not be started.
func Run(ctx context.Context, p Proc) error {
	if !supervisorUsable() {
		return runDirect(ctx, p)
	}
	return runSupervised(ctx, p)
}

// supervisorExe is what the supervisor runs from.
const supervisorExe = "/proc/self/exe"

var supervisorUsable = sync.OnceValue(func() bool {
	_, errExe := os.Stat(supervisorExe)
	_, errStat := os.Stat("/proc/self/stat")
	return errExe == nil && errStat == nil
})

// dieWithUs gives the agent SIGKILL as its parent-death signal. The
// kernel sends it when the *thread* that forked the child exits, not the
// process (Go's syscall.SysProcAttr note; golang/go#27505): Go ends a
// thread whose goroutine exits while locked to it, so an unrelated locked
// goroutine that later ran on our forking thread could kill the agent
// early. Locking the thread from before the fork until the caller has
// waited for the child (unlock) keeps the thread ours for its whole life.
func dieWithUs(attr *syscall.SysProcAttr) (unlock func()) {
	attr.Pdeathsig = syscall.SIGKILL
	runtime.LockOSThread()
	return runtime.UnlockOSThread
}

// runSpec is what the supervisor reads from its stdin: one
// JSON line (JSON has no raw newline), then nothing until EOF.
type runSpec struct {
	Path string   `json:"path"`
	Argv []string `json:"argv"`
	Dir  string   `json:"dir"`
	Env  []string `json:"env"`
	// Root is removed by the supervisor when it stops the agent itself
	// (we died or cancelled it): a SIGKILLed tool cannot remove it.
	Root string `json:"root,omitempty"`
	// Policy, when set, confines the agent by the kernel: the supervisor
	// starts it through the confining helper (sandbox.Main).
	Policy *sandbox.Policy `json:"policy,omitempty"`
}

// runReport is the one JSON line the supervisor writes to fd 3
// before it exits.
type runReport struct {
	// Error: the agent could not be started (Errno its errno, if any).
	Error string `json:"error,omitempty"`
	Errno int    `json:"errno,omitempty"`
	// Status is how the agent ended, as os.ProcessState prints it, and
	// Code its exit code (-1 when a signal ended it).
	Status string `json:"status,omitempty"`
	Code   int    `json:"code"`
	// Stopped: the supervisor killed the agent because its parent went
	// away or asked it to stop.
	Stopped bool `json:"stopped,omitempty"`
}

func runSupervised(ctx context.Context, p Proc) error {
	line, err := json.Marshal(runSpec{Path: p.Path, Argv: p.Argv, Dir: p.Dir, Env: p.Env, Root: p.Root, Policy: p.Policy})
	if err != nil {
		return err
	}
	// control: the supervisor's stdin, held open by us alone (os.Pipe is
	// close-on-exec), so its EOF means we closed it or died.
	controlR, controlW, err := os.Pipe()
	if err != nil {
		return err
	}
	reportR, reportW, err := os.Pipe()
	if err != nil {
		controlR.Close()
		controlW.Close()
		return err
	}
	defer reportR.Close()
	var stopOnce sync.Once
	stop := func() { stopOnce.Do(func() { controlW.Close() }) }
	defer stop()

	cmd := exec.CommandContext(ctx, supervisorExe, supervisorArg)
	cmd.Args[0] = os.Args[0]
	// The supervisor holds no more than the agent gets, and pins no
	// directory of ours: the agent could read its parent's environment
	// and working directory under /proc.
	cmd.Env = p.Env
	cmd.Dir = "/"
	cmd.Stdin = controlR
	cmd.Stdout, cmd.Stderr = p.Stdout, p.Stderr // the agent inherits them
	cmd.ExtraFiles = []*os.File{reportW}
	// Its own group: a kill of our group (a terminal's ^C, a supervisor's
	// kill -9 of it) reaches the supervisor only as our death, which it
	// answers by killing the agent's descendants first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	cmd.Cancel = func() error {
		stop()
		err := cmd.Process.Signal(syscall.SIGTERM)
		if errors.Is(err, os.ErrProcessDone) {
			return os.ErrProcessDone
		}
		return err
	}
	cmd.WaitDelay = waitDelay

	// The parent-death signal is tied to the forking thread (dieWithUs).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err = cmd.Start()
	controlR.Close()
	reportW.Close()
	if err != nil {
		return fmt.Errorf("agent supervisor: %w", err)
	}
	reported := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(reportR, 64<<10))
		reported <- b
	}()
	// A write error means the supervisor is gone; Wait says how.
	_, _ = controlW.Write(append(line, '\n'))
	waitErr := cmd.Wait()
	stop()
	var raw []byte
	select {
	case raw = <-reported:
	case <-time.After(waitDelay):
		// Only the supervisor held the other end (the agent never does),
		// so it closed when the supervisor exited; bounded all the same.
		reportR.Close()
		raw = <-reported
	}

	var rep runReport
	if line := bytes.TrimSpace(raw); len(line) == 0 || json.Unmarshal(line, &rep) != nil {
		if waitErr == nil {
			waitErr = errors.New("exited without a report")
		}
		return fmt.Errorf("agent supervisor: %w", waitErr)
	}
	switch {
	case rep.Error != "" && rep.Errno != 0:
		return &os.PathError{Op: "fork/exec", Path: p.Path, Err: syscall.Errno(rep.Errno)}
	case rep.Error != "":
		return errors.New(rep.Error)
	case rep.Status == "":
		return fmt.Errorf("agent supervisor: no status for the agent (%v)", waitErr)
	case rep.Code != 0:
		return &ExitError{Status: rep.Status}
	case errors.Is(waitErr, exec.ErrWaitDelay):
		return waitErr // exited 0, output held open: the caller keeps the answer
	}
	return nil
}
