package test

import (
	"bufio"
	"encoding/json"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/the-loop/the-loop-diagnose/fakes/eventlog"
)

// TestNoRealDefectIsSettledOnAGeneratedLog runs a real scan over a generated
// log holding known transients, environment failures and real defects, maps
// every settled and every filed fingerprint back to the generator's ground
// truth, and asserts the fail-safe: a real defect is never settled away.
// Run with -v to see the figures.
func TestNoRealDefectIsSettledOnAGeneratedLog(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{harness: "builtin", maxPerDay: 1000,
		extra: "  maxDiagnosesPerScan: 1000\n  maxDiagnosesPerDay: 1000\n"})
	f, err := os.Create(d.log)
	if err != nil {
		t.Fatal(err)
	}
	opts := eventlog.Options{Lines: 40000, Seed: 11, Defects: 24, Transients: 6, Environment: 6, FailureRate: 0.02}
	truth := map[int64]string{}
	w := bufio.NewWriter(f)
	if _, err := eventlog.GenerateWithTruth(w, func(line int, id string) { truth[int64(line)] = id }, opts); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	f.Close()
	kind := map[string]string{}
	for _, def := range eventlog.Catalog(opts) {
		kind[def.ID] = def.Kind
	}

	if res := d.run("run"); res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	// Fingerprint of every candidate line, from the same binary.
	rep := d.run("replay", "--stage", "fingerprint", "--log", d.log)
	defectsOf := map[string]map[string]bool{} // fingerprint → defect ids
	for _, line := range splitLines(rep.stdout) {
		var m struct {
			Line        int64  `json:"line"`
			Fingerprint string `json:"fingerprint"`
		}
		json.Unmarshal([]byte(line), &m)
		if id, ok := truth[m.Line]; ok {
			if defectsOf[m.Fingerprint] == nil {
				defectsOf[m.Fingerprint] = map[string]bool{}
			}
			defectsOf[m.Fingerprint][id] = true
		}
	}
	count := func(fps []string) map[string]int {
		seen := map[string]bool{}
		for _, fp := range fps {
			for id := range defectsOf[fp] {
				seen[id] = true
			}
		}
		byKind := map[string]int{}
		for id := range seen {
			byKind[kind[id]]++
		}
		return byKind
	}
	var settledFPs, filedFPs []string
	for _, e := range ledger(t, d) {
		fp := e["fingerprint"].(string)
		settledFPs = append(settledFPs, fp)
		for id := range defectsOf[fp] {
			if kind[id] == eventlog.KindBug {
				t.Errorf("real defect %s was settled as %v: %v", id, e["verdict"], e["reason"])
			}
		}
	}
	for _, is := range gh.Issues() {
		if fp := markerOf(is.Body); fp != "" {
			filedFPs = append(filedFPs, fp)
		}
	}
	all := map[string]int{}
	for _, id := range slices.Sorted(maps.Keys(kind)) {
		all[kind[id]]++
	}
	t.Logf("defects in the log by kind: %v", all)
	t.Logf("settled by the machine: %d findings covering %v", len(settledFPs), count(settledFPs))
	t.Logf("reached a human (filed): %d issues covering %v", len(filedFPs), count(filedFPs))
	if len(settledFPs) == 0 {
		t.Fatal("nothing was settled: the log's transients and environment failures went to a human")
	}
}

func splitLines(s string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}
