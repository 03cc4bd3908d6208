package test

import (
	"os"
	"strings"
	"testing"
)

// A state file that exists but holds no state (zero bytes after a full
// disk, cut off by a crash mid-copy) stops the scan with an error naming it:
// taken as empty it would rerun every agent and reset the daily cap.
func TestAnEmptyOrCutOffStateFileStopsTheScan(t *testing.T) {
	t.Parallel()
	for name, content := range map[string]string{
		"zero bytes": "",
		"cut off":    `{"reported": {"v3:0123456789abcdef": {"url": "https://github.com/acme/widgets/issues/1", "num`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			gh := newGitHub(t)
			d := newDeployment(t, gh, deployOpts{})
			d.appendLog(failure(t0, "dispatch.failed", "claude exited 1: open /tmp/x/dossier.md: no such file or directory"))
			if err := os.WriteFile(d.state, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			res := d.run("run")
			if res.code != 1 {
				t.Fatalf("exit %d, want 1\n%s", res.code, res.stderr)
			}
			for _, want := range []string{d.state, "restore it from a backup", "delete it to start afresh"} {
				if !strings.Contains(res.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, res.stderr)
				}
			}
			if n := len(gh.Requests()); n != 0 {
				t.Errorf("%d requests reached GitHub; a scan on a corrupt state must ask nothing", n)
			}
			if b, _ := os.ReadFile(d.state); string(b) != content {
				t.Errorf("the state file was rewritten: %q", b)
			}
			// Deleting it, as the message says, starts afresh.
			os.Remove(d.state)
			if res := d.run("run"); res.code != 0 || gh.CountCreates() != 1 {
				t.Fatalf("after deleting the state: exit %d, %d issues\n%s", res.code, gh.CountCreates(), res.stderr)
			}
		})
	}
}
