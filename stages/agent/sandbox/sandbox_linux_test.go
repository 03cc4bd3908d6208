package sandbox

import (
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	// The test binary is its own confining helper, as the tool is.
	if len(os.Args) == 3 && os.Args[1] == HelperArg {
		os.Exit(Main(os.Args[2]))
	}
	os.Exit(m.Run())
}

// confinedCat runs `cat path` through the helper under p and returns its
// output and error.
func confinedCat(t *testing.T, p Policy, path string) (string, error) {
	t.Helper()
	arg, _ := json.Marshal(Spec{Path: "/bin/cat", Argv: []string{"cat", path}, Dir: "/", Policy: p})
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(exe, HelperArg, string(arg)).CombinedOutput()
	return string(out), err
}

// Which layer keeps an agent out of the tool's /proc entries on these
// machines: Landlock's file-system rule, which grants no /proc but the
// process's own entry. Granted /proc whole, a confined process as root
// read its parent's environ here (kernel 6.18): the ptrace scope alone is
// not relied on (logged). Marking the tool non-dumpable keeps out a
// reader of the same user without the capability to trace, not root
// (logged).
func TestLandlockKeepsTheParentsProcEntriesOut(t *testing.T) {
	if ok, detail := Available(); !ok {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI machines have Landlock: %s", detail)
		}
		t.Skip(detail)
	}
	os.Setenv("SANDBOX_TEST_SECRET", "s3cret-in-our-environ") // not in /proc: set after start
	system := []string{"/usr", "/lib", "/lib64", "/bin"}
	ppid := "/proc/" + strconv.Itoa(os.Getpid())

	// The policy the tool gives: no /proc but the agent's own entry.
	if out, err := confinedCat(t, Policy{ReadOnly: system}, ppid+"/environ"); err == nil {
		t.Errorf("confined, the agent read its parent's environ: %q", out)
	}
	if out, err := confinedCat(t, Policy{ReadOnly: system}, "/proc/self/status"); err != nil || !strings.Contains(out, "Name:\tcat") {
		t.Errorf("confined, the agent cannot read its own /proc entry: %v %q", err, out)
	}
	// /proc granted whole: what the ptrace scope alone leaves.
	withProc := Policy{ReadOnly: append(system, "/proc")}
	_, err := confinedCat(t, withProc, ppid+"/environ")
	t.Logf("euid %d, confined with /proc granted: reading the parent's environ: err=%v", os.Geteuid(), err)
	// Unconfined, as a control: the same read succeeds (the test can fail).
	if out, err := exec.Command("/bin/cat", ppid+"/environ").CombinedOutput(); err != nil {
		t.Fatalf("unconfined, the parent's environ is unreadable here, so the checks above prove nothing: %v %q", err, out)
	}
	// Non-dumpable: root reads it all the same (CAP_SYS_PTRACE).
	if err := Harden(); err != nil {
		t.Fatal(err)
	}
	_, err = exec.Command("/bin/cat", ppid+"/environ").CombinedOutput()
	t.Logf("euid %d, tool non-dumpable: an unconfined child reading its environ: err=%v", os.Geteuid(), err)
	if os.Geteuid() == 0 && err != nil {
		t.Logf("root could not read a non-dumpable process's environ: this machine withholds CAP_SYS_PTRACE")
	}
}
