package supervise

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// childEnv makes this test binary, started as an agent, write what it sees
// of itself and its parent to the file it names, and exit.
const childEnv = "SUPERVISE_TEST_CHILD"

// The parent-death signal is per thread, set on the one that exec'd us:
// read there (the runtime runs init on the main thread).
func init() {
	if os.Getenv(childEnv) != "" {
		runtime.LockOSThread()
	}
}

func TestMain(m *testing.M) {
	Main(os.Args)
	if path := os.Getenv(childEnv); path != "" {
		os.Exit(childReport(path))
	}
	goleak.VerifyTestMain(m)
}

// childSaw is what the child reports.
type childSaw struct {
	OwnGroup          bool   `json:"own_group"`
	ParentDeathSignal int    `json:"parent_death_signal"`
	Parent            int    `json:"parent"`
	ParentEnv         string `json:"parent_env"`
	ParentCmdline     string `json:"parent_cmdline"`
}

func childReport(path string) int {
	var sig int32
	if err := unix.Prctl(unix.PR_GET_PDEATHSIG, uintptr(unsafe.Pointer(&sig)), 0, 0, 0); err != nil {
		sig = -1
	}
	ppid := os.Getppid()
	env, _ := os.ReadFile("/proc/" + strconv.Itoa(ppid) + "/environ")
	cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(ppid) + "/cmdline")
	b, _ := json.Marshal(childSaw{OwnGroup: syscall.Getpgrp() == os.Getpid(), ParentDeathSignal: int(sig),
		Parent: ppid, ParentEnv: string(env), ParentCmdline: string(cmdline)})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// runChild starts this test binary as an agent, supervised or as our own
// child, and returns what it saw.
func runChild(t *testing.T, supervised bool, env ...string) childSaw {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	out := root + "/saw.json"
	var stderr bytes.Buffer
	p := Proc{Path: exe, Argv: []string{exe}, Root: root, Dir: root, Env: append(env, childEnv+"="+out), Stdout: &stderr, Stderr: &stderr}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if supervised {
		err = Run(ctx, p)
	} else {
		err = runDirect(ctx, p)
	}
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.Bytes())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var saw childSaw
	if err := json.Unmarshal(b, &saw); err != nil {
		t.Fatal(err)
	}
	return saw
}

// Supervised or (without /proc) run as our own child, the agent leads a
// group of its own and has SIGKILL as its parent-death signal: if its
// parent is killed, so is it.
func TestAgentGetsSIGKILLWhenItsParentDies(t *testing.T) {
	for _, supervised := range []bool{true, false} {
		t.Run(map[bool]string{true: "supervised", false: "direct"}[supervised], func(t *testing.T) {
			if supervised && !supervisorUsable() {
				t.Skip("no /proc/self/exe: no supervisor")
			}
			saw := runChild(t, supervised)
			if !saw.OwnGroup || saw.ParentDeathSignal != int(syscall.SIGKILL) {
				t.Errorf("own group %v, parent-death signal %d; want true, %d", saw.OwnGroup, saw.ParentDeathSignal, syscall.SIGKILL)
			}
		})
	}
}

// The agent's parent is the supervisor, not the tool, and the supervisor
// holds no variable the agent is not given.
func TestAgentRunsUnderASupervisorWithTheAgentsEnvironment(t *testing.T) {
	if !supervisorUsable() {
		t.Skip("no /proc/self/exe: no supervisor")
	}
	t.Setenv("GH_TOKEN", "ghp_supervisor_must_not_hold_this")
	saw := runChild(t, true, "PATH="+os.Getenv("PATH"))
	if saw.Parent == os.Getpid() {
		t.Fatal("the agent is our own child: no supervisor")
	}
	if !strings.Contains(saw.ParentCmdline, supervisorArg) {
		t.Errorf("the agent's parent is %q, not a supervisor", saw.ParentCmdline)
	}
	if strings.Contains(saw.ParentEnv, "GH_TOKEN") || !strings.Contains(saw.ParentEnv, "PATH=") {
		t.Errorf("the supervisor's environment is %q: want the agent's (PATH), without GH_TOKEN", saw.ParentEnv)
	}
}
