package source

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// gitRepo makes a clone-like repository: v1.4.0 without the fix, then a
// regression test naming issue 42, tagged v1.5.0.
func gitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: the fixed-upstream check needs it")
	}
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(path, text string) {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(path)), 0o755)
		os.WriteFile(filepath.Join(dir, path), []byte(text), 0o644)
	}
	run("init", "-q")
	write("tests/test_queue.py", "def test_queue():\n    # unrelated: 4201 items, issue 4200, case 1420\n    pass\n")
	run("add", ".")
	run("commit", "-qm", "initial")
	run("tag", "v1.4.0")
	write("tests/regression/test_issue_42.py", "# Regression test for #42: nil map in scheduler\ndef test_42(): pass\n")
	run("add", ".")
	run("commit", "-qm", "fix #42")
	run("tag", "v1.5.0")
	run("tag", "v1.6.0")
	return dir
}

func TestFixedUpstreamSettlesAnOutdatedDeployment(t *testing.T) {
	c := Checkout{Dir: gitRepo(t)}
	s, err := c.FixedUpstream(context.Background(), 42, "https://github.com/o/r/issues/42", "1.4.2")
	if err != nil || s == nil {
		t.Fatalf("FixedUpstream = %+v, %v; want a settlement", s, err)
	}
	if s.Verdict != pipeline.SettledFixedUpstream || !strings.Contains(s.Reason, "fixed in v1.5.0: upgrade") ||
		s.Evidence["test_path"] != "tests/regression/test_issue_42.py" || s.Evidence["tag"] != "v1.5.0" {
		t.Fatalf("settlement = %+v", s)
	}
}

func TestFixedUpstreamLeavesRealRecurrencesToAHuman(t *testing.T) {
	c := Checkout{Dir: gitRepo(t)}
	cases := []struct {
		name    string
		issue   int
		version string
		wantErr bool
	}{
		{"deployment already has the fix", 42, "1.5.0", false},
		{"newer deployment", 42, "v1.6.3", false},
		{"no test names the issue", 7, "1.0.0", false},
		{"the number only inside another number", 420, "1.0.0", false},
		{"unknown deployment version", 42, "", true},
	}
	for _, tc := range cases {
		s, err := c.FixedUpstream(context.Background(), tc.issue, "u", tc.version)
		if s != nil || (err != nil) != tc.wantErr {
			t.Errorf("%s: settlement %+v, err %v", tc.name, s, err)
		}
	}
	if s, err := (Checkout{Dir: t.TempDir()}).FixedUpstream(context.Background(), 42, "u", "1.0.0"); s != nil || err == nil {
		t.Fatalf("not a git repository: %+v, %v; want an error (inconclusive)", s, err)
	}
}
