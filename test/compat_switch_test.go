package test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	fakegh "github.com/the-loop/the-loop-diagnose/fakes/github"
)

// The tests here run the tool on a deployment the-loop ran (its
// cli-config.yaml found by itself, state under state.root, the-loop's
// installed package on PATH) and assert what the-loop does there: what a
// deployment switching over must not lose (issue 36).

// switchOpts shapes a switched deployment beyond theLoopOpts.
type switchOpts struct {
	theLoopOpts
	extra    string   // more selfDiagnosis YAML lines
	agentEnv []string // more agentEnv names than FAKE_AGENT_MODE
	env      []string // more environment
}

// newSwitchedDeployment is a the-loop deployment under state.root
// "state" with the config in ./.the-loop/cli-config.yaml.
func newSwitchedDeployment(t *testing.T, gh *fakegh.Server, o switchOpts) *deployment {
	t.Helper()
	if o.root == "" {
		o.root = "state"
	}
	d := newTheLoopDeployment(t, gh, o.theLoopOpts)
	path := filepath.Join(d.dir, d.config)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(b), "agentEnv: [FAKE_AGENT_MODE]",
		"agentEnv: ["+strings.Join(append([]string{"FAKE_AGENT_MODE"}, o.agentEnv...), ", ")+"]", 1)
	writeFile(t, path, cfg+o.extra)
	d.env = append(d.env, o.env...)
	return d
}

// 7. While a scan holds the state lock the lock file holds its PID, as
// the-loop's lock does: a person can `cat` it, and a scan that finds the
// lock held names the holder. Released, the file is removed.
func TestSwitchedLockFileHoldsTheHoldersPID(t *testing.T) {
	gh := newGitHub(t)
	d := newSwitchedDeployment(t, gh, switchOpts{agentEnv: []string{"FAKE_AGENT_DELAY"}, env: []string{"FAKE_AGENT_DELAY=3s"}})
	d.appendLog(failure(t0, "worker.crashed", "worker crashed on nil config"))
	lock := d.state + ".lock"

	holder := d.command("run", "--now", t0.Add(time.Hour).Format(time.RFC3339))
	var done = make(chan result, 1)
	go func() { done <- d.runCmd(holder, nil) }()
	var seen string
	if !eventually(func() bool {
		b, _ := os.ReadFile(lock)
		seen = string(b)
		return seen != ""
	}) {
		t.Fatal("the lock file never held anything while the scan ran")
	}
	if want := strconv.Itoa(holder.Process.Pid) + "\n"; seen != want {
		t.Fatalf("lock file holds %q, want the holder's PID %q", seen, want)
	}
	second := d.run("run", "--now", t0.Add(time.Hour).Format(time.RFC3339))
	if second.code != 0 || !strings.Contains(second.stderr, "skipping") ||
		!strings.Contains(second.stderr, "(pid "+strconv.Itoa(holder.Process.Pid)+")") {
		t.Errorf("a second scan: exit %d, stderr %q: want a skip naming the holder's PID", second.code, second.stderr)
	}
	if res := <-done; res.code != 0 {
		t.Fatalf("the holding scan: exit %d\n%s", res.code, res.stderr)
	}
	if b, err := os.ReadFile(lock); !os.IsNotExist(err) {
		t.Errorf("after the scan the lock file holds %q (%v), want it removed as the-loop removes it", b, err)
	}
	if gh.CountCreates() != 1 {
		t.Errorf("%d issues filed, want 1", gh.CountCreates())
	}
}
