package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/the-loop/the-loop-diagnose/fingerprint"
	"github.com/the-loop/the-loop-diagnose/store"
)

// sibling is another deployment in d's directory: its own config, log and
// state path (name.yaml, logs/name.jsonl, name.json), the rest as d's.
func sibling(t *testing.T, d *deployment, name string) *deployment {
	t.Helper()
	s := *d
	s.config = filepath.Join(d.dir, name+".yaml")
	s.log = filepath.Join(d.dir, "logs", name+".jsonl")
	s.state = filepath.Join(d.dir, name+".json")
	cfg, err := os.ReadFile(d.config)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.NewReplacer(quote(d.log), quote(s.log), quote(d.state), quote(s.state)).Replace(string(cfg))
	if err := os.WriteFile(s.config, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return &s
}

// Two configurations whose state files sit in one directory (a.json and
// b.json) are fully independent: each has its own database, neither takes
// the other's defects for known, each files its own, once.
func TestTwoStatePathsInOneDirectoryAreIndependent(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	base := newDeployment(t, gh, deployOpts{maxPerDay: 5})
	a, b := sibling(t, base, "a"), sibling(t, base, "b")
	a.appendLog(killDefects()...)
	b.appendLog(
		failure(t0, "mail.failed", "smtp relay refused the message: 550 mailbox unavailable"),
		failure(t0.Add(time.Second), "cache.failed", "redis connection reset by peer during pipeline flush"),
		failure(t0.Add(2*time.Second), "render.crashed", "template render panicked: index out of range in layout footer"),
	)
	// The same defect in both logs is one issue: found by its marker.
	b.appendLog(killDefects()[0])
	for _, d := range []*deployment{a, b} {
		if res := d.run("run"); res.code != 0 {
			t.Fatalf("%s: exit %d\n%s", filepath.Base(d.config), res.code, res.stderr)
		}
	}
	if n := gh.CountCreates(); n != 6 {
		t.Fatalf("%d issues for 6 defects across two configurations, want 6", n)
	}
	for _, d := range []*deployment{a, b} {
		var own []string // the-loop's aliases aside
		for fp := range d.stateMap("reported") {
			if strings.HasPrefix(fp, fingerprint.Version+":") {
				own = append(own, fp)
			}
		}
		if len(own) != map[*deployment]int{a: 3, b: 4}[d] {
			t.Fatalf("%s knows %d reported defects: %v", filepath.Base(d.state), len(own), own)
		}
	}
	for _, name := range []string{"a.db", "b.db"} {
		if _, err := os.Stat(filepath.Join(base.dir, name)); err != nil {
			t.Fatalf("no database of its own: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(base.dir, store.DBName)); err == nil {
		t.Fatalf("a shared %s was created", store.DBName)
	}
	// A rerun of each files nothing more.
	for _, d := range []*deployment{a, b} {
		if res := d.run("run"); res.code != 0 || gh.CountCreates() != 6 {
			t.Fatalf("rerun of %s: exit %d, %d issues\n%s", filepath.Base(d.config), res.code, gh.CountCreates(), res.stderr)
		}
	}
}

// A database one directory's state paths shared under an older release
// is refused for the one that did not create it, saying what to do; the
// one it belongs to takes it over.
func TestASharedDatabaseFromAnOlderReleaseIsRefused(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	base := newDeployment(t, gh, deployOpts{})
	a, b := sibling(t, base, "a"), sibling(t, base, "b")
	shared := filepath.Join(base.dir, store.DBName)
	// What an older release did: both state paths in the one database.
	for _, d := range []*deployment{a, b} {
		s, err := store.OpenDSN(d.state, shared, false)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		// An older release's lock file stayed behind (this one removes its
		// own on release): the sign that the state path's scans ran here.
		writeFile(t, d.state+".lock", "")
	}
	res := b.run("run")
	if res.code == 0 || !strings.Contains(res.stderr, "shared") || !strings.Contains(res.stderr, "a.json") || !strings.Contains(res.stderr, "b.json.lock") {
		t.Fatalf("b on the shared database: exit %d, want a refusal naming a.json and the fix\n%s", res.code, res.stderr)
	}
	if res := a.run("run"); res.code != 0 {
		t.Fatalf("a, whose database it is: exit %d\n%s", res.code, res.stderr)
	}
	if _, err := os.Stat(filepath.Join(base.dir, "a.db")); err != nil {
		t.Fatalf("a did not take its database over: %v", err)
	}
}
