package fingerprint

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"testing"
)

// corpusDir is the shared Loghub sample beside the repo (not copied into it).
const corpusDir = "../../shared/corpus/loghub-2k"

// TestGroupingAccuracyOnLoghub scores the default fingerprint by Grouping
// Accuracy on Loghub's labelled samples, the way the grouping-accuracy tool
// does: a message counts when the set of messages sharing its fingerprint
// is exactly the set sharing its true template.
func TestGroupingAccuracyOnLoghub(t *testing.T) {
	systems, err := os.ReadDir(corpusDir)
	if err != nil {
		t.Skipf("Loghub corpus not present at %s (../shared/corpus relative to the repo): %v", corpusDir, err)
	}
	var sum float64
	var scored int
	lowest, lowestName := 1.0, ""
	for _, d := range systems {
		if !d.IsDir() {
			continue
		}
		matches, _ := filepath.Glob(filepath.Join(corpusDir, d.Name(), "*_structured_corrected.csv"))
		if len(matches) == 0 {
			matches, _ = filepath.Glob(filepath.Join(corpusDir, d.Name(), "*_structured.csv"))
		}
		if len(matches) != 1 {
			continue
		}
		contents, labels := readLabelled(t, matches[0])
		fps := make([]string, len(contents))
		for i, c := range contents {
			fps[i] = Compute(Input{Event: d.Name(), Error: c}).Fingerprint
		}
		ga := groupingAccuracy(labels, fps)
		t.Logf("%-12s GA %.4f", d.Name(), ga)
		sum += ga
		scored++
		if ga < lowest {
			lowest, lowestName = ga, d.Name()
		}
	}
	if scored == 0 {
		t.Skipf("no labelled CSVs under %s", corpusDir)
	}
	mean := sum / float64(scored)
	t.Logf("mean GA %.4f over %d systems; lowest %s %.4f", mean, scored, lowestName, lowest)
	if mean < 0.92 {
		t.Errorf("mean grouping accuracy %.4f, want >= 0.92", mean)
	}
	if lowest < 0.75 {
		t.Errorf("%s grouping accuracy %.4f, want every system >= 0.75", lowestName, lowest)
	}
}

func readLabelled(t *testing.T, path string) (contents, labels []string) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("%s: %v", path, err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	content, ok := col["Content"]
	label, ok2 := col["EventTemplate"]
	if !ok || !ok2 {
		t.Fatalf("%s: need Content and EventTemplate columns, have %v", path, rows[0])
	}
	for _, row := range rows[1:] {
		contents = append(contents, row[content])
		labels = append(labels, row[label])
	}
	return contents, labels
}

func groupingAccuracy(labels, fps []string) float64 {
	byTruth := map[string][]int{}
	byFP := map[string][]int{}
	for i := range labels {
		byTruth[labels[i]] = append(byTruth[labels[i]], i)
		byFP[fps[i]] = append(byFP[fps[i]], i)
	}
	correct := 0
	for _, members := range byFP {
		truth := labels[members[0]]
		same := len(byTruth[truth]) == len(members)
		for _, i := range members {
			same = same && labels[i] == truth
		}
		if same {
			correct += len(members)
		}
	}
	return float64(correct) / float64(len(labels))
}

// The scorer itself must be right for the test above to mean anything.
func TestGroupingAccuracyScorer(t *testing.T) {
	labels := []string{"a", "a", "b", "c", "c"}
	cases := []struct {
		fps  []string
		want float64
	}{
		{[]string{"1", "1", "2", "3", "3"}, 1},
		{[]string{"1", "1", "1", "3", "3"}, 0.4}, // a and b merged
		{[]string{"1", "2", "3", "4", "4"}, 0.6}, // a split
	}
	for _, c := range cases {
		if got := groupingAccuracy(labels, c.fps); got != c.want {
			t.Errorf("GA(%v) = %v, want %v", c.fps, got, c.want)
		}
	}
}
