package stages

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/store"
)

// persistDeferred runs one scan's persist over deferred defects with fresh
// records (fingerprint → dossier) and, when finish is set, ends the scan;
// without it the scan "crashes" before its state write.
func persistDeferred(t *testing.T, path string, at time.Time, dossiers map[string]string, finish bool) {
	t.Helper()
	s, err := store.Open(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sum := &Summary{}
	persist := NewPersist(PersistConfig{Store: s, Now: func() time.Time { return at }, MaxRetries: 3, Summary: sum})
	for fp, md := range dossiers {
		o := pipeline.Outcome{Status: pipeline.StatusDeferred}
		o.Fingerprint, o.Event, o.Markdown, o.Count, o.Reason = fp, "dispatch.failed", md, 1, "daily issue cap reached"
		if err := persist(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	if finish {
		if err := FinishScan(s, nil, nil, sum, at, store.DefaultRetention); err != nil {
			t.Fatal(err)
		}
	}
}

// backlogDossiers loads every deferred defect's dossier as a fresh scan would.
func backlogDossiers(t *testing.T, path string) map[string]string {
	t.Helper()
	s, err := store.Open(path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := map[string]string{}
	var deferred map[string]store.Deferred
	s.View(func(st *store.State) { deferred = st.Deferred })
	for fp, d := range deferred {
		md, err := s.LoadDossier(d.DossierFile)
		if err != nil {
			t.Fatalf("deferred %s: %v", fp, err)
		}
		got[fp] = md
	}
	return got
}

func dossierFiles(t *testing.T, path string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(filepath.Dir(path), "state.dossiers"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

func TestACrashBeforeTheStateWriteLosesNoDeferredDossier(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	persistDeferred(t, path, now, map[string]string{"v2:a": "a, first records", "v2:b": "b, first records"}, true)
	// The next scan, an hour on, sees newer records of a and a new defect
	// c, and dies after deciding them, before its last transaction. c's
	// first deferral was committed with its diagnosis.deferred event (its
	// dossier made durable first); a's recurrence was left to the next
	// transaction, c's if it came after a, else the last one.
	later := now.Add(dossierRefresh)
	persistDeferred(t, path, later, map[string]string{"v2:a": "a, newer records", "v2:c": "c, first records"}, false)

	got := backlogDossiers(t, path) // each loads: none is named before it is durable
	if a := got["v2:a"]; len(got) != 3 || got["v2:b"] != "b, first records" || got["v2:c"] != "c, first records" ||
		a != "a, first records" && a != "a, newer records" {
		t.Fatalf("after the crash the state's dossiers are %q, want b's and c's first ones and either of a's", got)
	}
	// The rerun decides the same defects again.
	persistDeferred(t, path, later, map[string]string{"v2:a": "a, newer records", "v2:c": "c, first records"}, true)
	want := map[string]string{"v2:a": "a, newer records", "v2:b": "b, first records", "v2:c": "c, first records"}
	if got := backlogDossiers(t, path); !equalMaps(got, want) {
		t.Fatalf("after the rerun the dossiers are %q, want %q", got, want)
	}
	if files := dossierFiles(t, path); len(files) != 3 {
		t.Fatalf("dossier files %v: superseded ones must be pruned, one per deferred defect kept", files)
	}
}

func TestAnUnchangedDossierIsNotWrittenAgain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	persistDeferred(t, path, now, map[string]string{"v2:a": "a's records"}, true)
	files := dossierFiles(t, path)
	if len(files) != 1 {
		t.Fatalf("dossier files %v, want one", files)
	}
	file := filepath.Join(filepath.Dir(path), "state.dossiers", files[0])
	long := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(file, long, long); err != nil {
		t.Fatal(err)
	}

	later := now.Add(dossierRefresh)
	persistDeferred(t, path, later, map[string]string{"v2:a": "a's records"}, true)
	if fi, err := os.Stat(file); err != nil || !fi.ModTime().Equal(long) {
		t.Fatalf("the unchanged dossier was written again (stat %v, %v)", fi, err)
	}

	// Within the hour a recurrence keeps the dossier it has.
	persistDeferred(t, path, later.Add(dossierRefresh/2), map[string]string{"v2:a": "a's newer records"}, true)
	if got := backlogDossiers(t, path)["v2:a"]; got != "a's records" {
		t.Fatalf("dossier = %q: rewritten within the hour", got)
	}
	// As the dossier stage sends a recurrence deferred again within the
	// hour: no text at all. The saved dossier stays.
	persistDeferred(t, path, later.Add(dossierRefresh/2), map[string]string{"v2:a": ""}, true)
	if got := backlogDossiers(t, path)["v2:a"]; got != "a's records" {
		t.Fatalf("dossier = %q after a recurrence that carried none", got)
	}
	persistDeferred(t, path, later.Add(dossierRefresh), map[string]string{"v2:a": "a's newer records"}, true)
	if got := backlogDossiers(t, path)["v2:a"]; got != "a's newer records" {
		t.Fatalf("dossier = %q after it changed", got)
	}
	if after := dossierFiles(t, path); len(after) != 1 || after[0] == files[0] {
		t.Fatalf("dossier files %v: a changed dossier goes to a new file and the old one is pruned", after)
	}
}

func TestADossierSavedByAnOlderVersionStillLoads(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	// Older versions named a dossier by its fingerprint alone.
	if err := os.MkdirAll(filepath.Join(dir, "state.dossiers"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "state.dossiers", "0f3e6cb9d373fc86.md"), []byte("old dossier"), 0o600); err != nil {
		t.Fatal(err)
	}
	state := `{"deferred": {"v2:old": {"since": "2026-11-28T09:00:00Z", "dossier_file": "0f3e6cb9d373fc86.md"}}}`
	if err := os.WriteFile(path, []byte(state), 0o600); err != nil {
		t.Fatal(err)
	}
	// A scan that defers another defect keeps the old one's file.
	persistDeferred(t, path, now, map[string]string{"v2:new": "new dossier"}, true)
	want := map[string]string{"v2:old": "old dossier", "v2:new": "new dossier"}
	if got := backlogDossiers(t, path); !equalMaps(got, want) {
		t.Fatalf("dossiers %q, want %q", got, want)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}
