package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// config restricts every file-system right and the IPC scopes (signals
// and abstract Unix sockets outside the domain) the kernel knows, and
// nothing of the network: the agent must reach its model provider.
// Best effort: an older kernel enforces the rights it has.
var config = landlock.Config{HandledAccessFS: landlock.V11.HandledAccessFS, Scoped: landlock.V11.Scoped}.BestEffort()

var abiVersion = sync.OnceValues(func() (int, error) { return llsyscall.LandlockGetABIVersion() })

// Available reports whether the kernel confines the agent (Landlock) and
// says how, or why not and what still holds. For `status` and `doctor`.
func Available() (ok bool, detail string) {
	v, err := abiVersion()
	if err != nil || v < 1 {
		return false, fmt.Sprintf("the kernel has no Landlock (%v): the agent is confined by its CLI's own rules only", err)
	}
	return true, "Landlock ABI " + strconv.Itoa(v) + ": the agent and all it starts reach only its run directory, its CLI's own files and the system's libraries"
}

// Harden marks the calling process non-dumpable: its /proc/<pid> entries
// (environ, mem) become root's, and no process of the same user may
// ptrace it. It protects a tool that is not root from an agent without
// Landlock; root reads them anyway (DESIGN.md "The agent meets the
// kernel"). exec resets it, so it covers the tool itself only.
func Harden() error { return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }

// Main is the confining helper: it applies spec (the JSON argument) to
// itself and execs the agent. It returns only on failure, with the exit
// status: 127 when the agent could not be exec'ed, 126 when the
// confinement could not be applied (a failure here never runs the agent
// unconfined; only a kernel without Landlock runs it without).
func Main(arg string) int {
	var spec Spec
	if err := json.Unmarshal([]byte(arg), &spec); err != nil || len(spec.Argv) == 0 {
		fmt.Fprintf(os.Stderr, "agent confinement: bad spec: %v\n", err)
		return 126
	}
	// Landlock and no_new_privs are per thread: this one, kept until exec
	// (never unlocked, so no other goroutine runs on it).
	runtime.LockOSThread()
	if err := confine(spec); err != nil {
		fmt.Fprintf(os.Stderr, "agent confinement: %v\n", err)
		return 126
	}
	err := syscall.Exec(spec.Path, spec.Argv, os.Environ())
	fmt.Fprintf(os.Stderr, "agent confinement: exec %s: %v\n", spec.Path, err)
	return 127
}

func confine(spec Spec) error {
	if err := os.Chdir(spec.Dir); err != nil {
		return err
	}
	p := spec.Policy
	// The process's own /proc entry (its pid survives exec): a runtime
	// reads its own status, limits and maps there. Nobody else's.
	if self, err := filepath.EvalSymlinks("/proc/self"); err == nil {
		p.ReadOnly = append(p.ReadOnly, self)
	}
	fd, flags, err := config.NewRulesetFD(Rules(p)...)
	if err != nil {
		return fmt.Errorf("landlock ruleset: %w", err)
	}
	if fd < 0 {
		return nil // no Landlock: the tool said so once
	}
	defer unix.Close(fd)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if err := llsyscall.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return nil
}

// Rules turns p into Landlock rules: directories get the directory
// rights, files the file rights; a path missing here is skipped.
func Rules(p Policy) []landlock.Rule {
	var rules []landlock.Rule
	add := func(paths []string, dirs func(...string) landlock.FSRule, files func(...string) landlock.FSRule) {
		for _, path := range paths {
			fi, err := os.Stat(path)
			switch {
			case err != nil:
			case fi.IsDir():
				rules = append(rules, dirs(path))
			default:
				rules = append(rules, files(path))
			}
		}
	}
	add(p.ReadOnly, landlock.RODirs, landlock.ROFiles)
	// refer: a CLI writes a file beside its state, then renames it in.
	rw := func(paths ...string) landlock.FSRule { return landlock.RWDirs(paths...).WithRefer() }
	add(p.ReadWrite, rw, landlock.RWFiles)
	return rules
}
