package fingerprint

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/the-loop/the-loop-diagnose/fakes/eventlog"
)

// generatedGrouping is how the default fingerprint groups the candidates of
// one generated the-loop log, against the generator's ground truth.
type generatedGrouping struct {
	labels, fps []string            // per candidate line: true defect, fingerprint
	templates   map[string]string   // fingerprint -> template
	byDefect    map[string][]string // defect -> its fingerprints, most frequent first
	byFP        map[string][]string // fingerprint -> the defects it holds
	count       map[[2]string]int   // (defect, fingerprint) -> occurrences
	untruthed   int                 // candidates the generator did not emit as failures
}

// isCandidate is the filter stage's policy (logread.Policy.Select), spelled
// out here because fingerprint must not import stages.
func isCandidate(fields map[string]any) bool {
	if ev, _ := fields["event"].(string); strings.HasPrefix(ev, "diagnosis.") {
		return false
	}
	if lvl, _ := fields["level"].(string); lvl == "error" {
		return true
	}
	retry, ok := fields["will_retry"].(bool)
	return ok && !retry
}

func groupGenerated(t *testing.T, o eventlog.Options) *generatedGrouping {
	t.Helper()
	truth := map[int]string{}
	var log bytes.Buffer
	if _, err := eventlog.GenerateWithTruth(&log, func(line int, id string) { truth[line] = id }, o); err != nil {
		t.Fatal(err)
	}
	g := &generatedGrouping{
		templates: map[string]string{}, byDefect: map[string][]string{},
		byFP: map[string][]string{}, count: map[[2]string]int{},
	}
	sc := bufio.NewScanner(&log)
	sc.Buffer(nil, 4<<20)
	for line := 1; sc.Scan(); line++ {
		raw := sc.Bytes()
		// Cheap prefilter: decoding every line makes the race build slow.
		if !bytes.Contains(raw, []byte(`"error"`)) && !bytes.Contains(raw, []byte(`"will_retry":false`)) {
			continue
		}
		var fields map[string]any
		if json.Unmarshal(raw, &fields) != nil || !isCandidate(fields) {
			continue
		}
		defect, ok := truth[line]
		if !ok {
			g.untruthed++
			continue
		}
		ev, _ := fields["event"].(string)
		msg, _ := fields["error"].(string)
		res := Compute(Input{Event: ev, Error: msg, Fields: MapFields(fields)})
		fp := res.Fingerprint
		g.labels = append(g.labels, defect)
		g.fps = append(g.fps, fp)
		g.templates[fp] = res.Template
		key := [2]string{defect, fp}
		if g.count[key] == 0 {
			g.byDefect[defect] = append(g.byDefect[defect], fp)
			g.byFP[fp] = append(g.byFP[fp], defect)
		}
		g.count[key]++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for d, fps := range g.byDefect {
		sort.SliceStable(fps, func(i, j int) bool { return g.count[[2]string{d, fps[i]}] > g.count[[2]string{d, fps[j]}] })
	}
	return g
}

// splitReport shows each over-split defect with its fingerprints' templates,
// so a failure says which token the normalizer failed to mask.
func (g *generatedGrouping) splitReport() string {
	var ids []string
	for d, fps := range g.byDefect {
		if len(fps) > 1 {
			ids = append(ids, d)
		}
	}
	sort.Strings(ids)
	var b strings.Builder
	for _, d := range ids {
		fps := g.byDefect[d]
		fmt.Fprintf(&b, "\n%s: %d fingerprints", d, len(fps))
		for i, fp := range fps {
			if i == 3 {
				fmt.Fprintf(&b, "\n    ... %d more", len(fps)-3)
				break
			}
			fmt.Fprintf(&b, "\n    %4d× %q", g.count[[2]string{d, fp}], g.templates[fp])
		}
	}
	return b.String()
}

// TestGroupingOnGeneratedTheLoopLogs measures grouping on realistic the-loop
// logs with known defects: every extra fingerprint is one more issue in a
// maintainer's inbox, and a merged pair (HTTP 410 vs 422, exit 137 vs 143)
// hides a defect, so merges must be zero.
func TestGroupingOnGeneratedTheLoopLogs(t *testing.T) {
	seeds := []int64{1, 2, 3, 4, 5}
	if testing.Short() {
		seeds = seeds[:1]
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			g := groupGenerated(t, eventlog.Options{
				Lines: 50_000, Seed: seed, FailureRate: 0.03,
				Defects: 40, Transients: 6, Environment: 6,
			})
			if len(g.labels) < 500 {
				t.Fatalf("only %d candidate failures generated; the test would prove little", len(g.labels))
			}
			if g.untruthed > 0 {
				t.Errorf("%d candidates are not generated failures: the candidate policy or the truth is off", g.untruthed)
			}
			for fp, defects := range g.byFP {
				if len(defects) > 1 {
					sort.Strings(defects)
					t.Errorf("defects %v merged into one fingerprint, template %q", defects, g.templates[fp])
				}
			}
			ga := groupingAccuracy(g.labels, g.fps)
			perDefect := float64(len(g.byFP)) / float64(len(g.byDefect))
			t.Logf("%d candidates, %d defects, %d fingerprints (%.2f per defect), GA %.4f",
				len(g.labels), len(g.byDefect), len(g.byFP), perDefect, ga)
			if ga < 0.95 {
				t.Errorf("grouping accuracy %.4f, want >= 0.95; over-split defects:%s", ga, g.splitReport())
			} else if testing.Verbose() && len(g.byFP) > len(g.byDefect) {
				t.Logf("over-split defects:%s", g.splitReport())
			}
		})
	}
}
