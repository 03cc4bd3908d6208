package test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// With selfDiagnosis.sourcePath the agent's dossier quotes the line of the
// service's source that wrote the failure's message, named by its path
// relative to the tree, and the prompt asks for a root cause citing it.
func TestTheDossierQuotesTheSourceLineAMessageComesFrom(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	file := filepath.Join(src, "internal", "lease", "lease.go")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	code := `package lease

import "fmt"

// Renew renews a lease.
func Renew(id int, node string) error {
	if aborted(id) {
		return fmt.Errorf("lease %d on %s lost: etcd txn aborted", id, node)
	}
	return nil
}

func aborted(int) bool { return true }
`
	if err := os.WriteFile(file, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	const line = "internal/lease/lease.go:8"

	gh := newGitHub(t)
	runs := filepath.Join(t.TempDir(), "agent-runs.jsonl")
	d := newDeployment(t, gh, deployOpts{extra: "  sourcePath: " + quote(src) + "\n", env: []string{"FAKE_AGENT_RECORD=" + runs}})
	d.appendLog(failure(t0, "lease.lost", "lease 77 on node-b lost: etcd txn aborted (revision 4411)"))
	res := d.run("run", "--now", t0.Add(time.Hour).Format(time.RFC3339))
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	b, err := os.ReadFile(runs)
	if err != nil {
		t.Fatalf("the agent did not run: %v\n%s", err, res.stderr)
	}
	var rec struct {
		Prompt string `json:"prompt"`
	}
	if err := json.Unmarshal([]byte(strings.SplitN(string(b), "\n", 2)[0]), &rec); err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(rec.Prompt, "Source (")
	if !ok {
		t.Fatalf("no Source section in the dossier the agent saw:\n%s", rec.Prompt)
	}
	if !strings.Contains(section, "`"+line+"`") || !strings.Contains(section, `etcd txn aborted", id, node)`) {
		t.Fatalf("the Source section does not quote %s:\n%s", line, section)
	}
	// The prompt names the tree, as the-loop's does; the dossier (the
	// public body's text) never does.
	if strings.Contains(section, src) {
		t.Fatalf("the dossier names the source tree's absolute path %s:\n%s", src, rec.Prompt)
	}
	if !strings.Contains(rec.Prompt, "cite the `path:line`") {
		t.Fatalf("the prompt does not ask for a path:line citation:\n%s", rec.Prompt)
	}
	if len(gh.Issues()) != 1 {
		t.Fatalf("%d issues, want 1", len(gh.Issues()))
	}
}

func TestASourcePathThatIsNoDirectoryIsAConfigError(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, nil, deployOpts{extra: "  sourcePath: " + quote(filepath.Join(t.TempDir(), "missing")) + "\n"})
	res := d.run("run", "--now", t0.Format(time.RFC3339))
	if res.code == 0 || !strings.Contains(res.stderr, "selfDiagnosis.sourcePath") {
		t.Fatalf("exit %d, want a config error naming selfDiagnosis.sourcePath\n%s", res.code, res.stderr)
	}
}
