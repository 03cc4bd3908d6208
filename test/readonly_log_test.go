package test

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A tool whose user may read the event log but not write it (the-loop's
// log, the tool run as its own user) files its issues and exits 0: the
// diagnosis.* events go to selfDiagnosis.eventsPath when set, or are
// skipped with one warning — never a failed run.
func TestAReadOnlyEventLogNeverFailsARun(t *testing.T) {
	t.Parallel()
	for _, eventsPath := range []string{"", "events-elsewhere.jsonl"} {
		t.Run("eventsPath="+eventsPath, func(t *testing.T) {
			t.Parallel()
			gh := newGitHub(t)
			extra := ""
			if eventsPath != "" {
				extra = "  eventsPath: " + eventsPath + "\n"
			}
			d := newDeployment(t, gh, deployOpts{harness: "builtin", extra: extra})
			d.appendLog(killDefects()[0])
			before, err := os.ReadFile(d.log)
			if err != nil {
				t.Fatal(err)
			}
			cmd := d.command("run")
			asReader(t, d, cmd)
			var stderr bytes.Buffer
			cmd.Stderr, cmd.Stdout = &stderr, io.Discard
			if err := cmd.Run(); err != nil {
				t.Fatalf("run with a read-only log: %v\n%s", err, stderr.String())
			}
			if gh.CountCreates() != 1 {
				t.Fatalf("%d issues, want 1\n%s", gh.CountCreates(), stderr.String())
			}
			after, _ := os.ReadFile(d.log)
			if !bytes.Equal(before, after) {
				t.Fatal("the read-only log was written")
			}
			if eventsPath == "" {
				if !strings.Contains(stderr.String(), "the event log is not writable") {
					t.Errorf("no warning about the skipped events:\n%s", stderr.String())
				}
				return
			}
			b, err := os.ReadFile(filepath.Join(filepath.Dir(d.config), eventsPath))
			if err != nil || !strings.Contains(string(b), `"diagnosis.posted"`) {
				t.Fatalf("the events did not go to eventsPath (%v):\n%s", err, b)
			}
		})
	}
}

// asReader makes d's log read-only for the run: as root (whom file modes do
// not stop) by running the binary as nobody, who may read the log but not
// write it, and owns the state; otherwise by the log's mode.
func asReader(t *testing.T, d *deployment, cmd *exec.Cmd) {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(d.log, 0o444); err != nil {
			t.Fatal(err)
		}
		return
	}
	const nobody = 65534
	// nobody reaches the binary, the config and the log through
	// world-readable directories, and owns what the run writes.
	bin := filepath.Join(d.dir, "bin", "the-loop-diagnose")
	os.MkdirAll(filepath.Dir(bin), 0o755)
	b, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd.Path, cmd.Args[0] = bin, bin
	for dir := d.dir; dir != "/" && dir != "."; dir = filepath.Dir(dir) {
		if fi, err := os.Stat(dir); err == nil && fi.Mode().Perm()&0o005 != 0o005 {
			os.Chmod(dir, fi.Mode().Perm()|0o005)
		}
	}
	filepath.Walk(d.dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && p != d.log && p != filepath.Dir(d.log) {
			os.Lchown(p, nobody, nobody)
		}
		if err == nil && fi.IsDir() {
			os.Chmod(p, 0o755)
		}
		return nil
	})
	os.Chown(d.log, 0, 0)
	os.Chmod(d.log, 0o644)
	os.Chown(filepath.Dir(d.log), 0, 0)
	os.Chmod(filepath.Dir(d.log), 0o755)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	cmd.Env = append(cmd.Env, "HOME="+d.dir)
}
