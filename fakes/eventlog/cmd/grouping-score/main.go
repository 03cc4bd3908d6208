// Command grouping-score measures how a build of the-loop-diagnose groups
// failures on deployment-shaped logs (eventlog.GenerateDeployment): for each
// seed and size it writes a log, runs `BIN replay --stage fingerprint` over
// it and compares each failure line's final fingerprint with its true defect.
//
//	go run ./fakes/eventlog/cmd/grouping-score --bin bin/the-loop-diagnose --lines 2000,20000 --seeds 1,2,3
//
// It prints, per log, the fingerprints per true defect (distinct
// fingerprints over defects: 1.00 is one issue per defect), the mean
// fingerprints of a defect, the defects sharing a fingerprint with another
// (over-merge), and the grouping accuracy over failure lines (a line is
// right when the lines sharing its fingerprint are exactly those of its
// defect; a failure line not reported is wrong).
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/the-loop/the-loop-diagnose/fakes/eventlog"
)

func main() {
	bin := flag.String("bin", "bin/the-loop-diagnose", "the-loop-diagnose binary")
	lines := flag.String("lines", "2000,20000", "log sizes, comma-separated")
	seeds := flag.String("seeds", "1,2,3", "seeds, comma-separated")
	flag.BoolVar(&explain, "explain", false, "after each log, print every split or merged defect's fingerprints with a template and a sample line")
	flag.Parse()
	if err := run(*bin, ints(*lines), ints(*seeds)); err != nil {
		fmt.Fprintln(os.Stderr, "grouping-score:", err)
		os.Exit(2)
	}
}

var explain bool

func ints(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			fmt.Fprintln(os.Stderr, "grouping-score: bad number", f)
			os.Exit(2)
		}
		out = append(out, n)
	}
	return out
}

// Score is one log's figures.
type Score struct {
	Defects, Fingerprints int
	PerDefect             float64 // distinct fingerprints / defects
	MeanSplit             float64 // mean distinct fingerprints of a defect
	OverMerged            int     // defects whose fingerprint another defect shares
	GA                    float64
}

func run(bin string, sizes, seeds []int) error {
	dir, err := os.MkdirTemp("", "grouping-score")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Printf("%-7s %-5s %8s %6s %6s %7s %7s %6s\n", "lines", "seed", "defects", "fps", "fp/def", "split", "merged", "GA")
	for _, n := range sizes {
		var sumPer, sumGA float64
		for _, seed := range seeds {
			s, err := score(bin, filepath.Join(dir, "log.jsonl"), n, int64(seed))
			if err != nil {
				return err
			}
			sumPer += s.PerDefect
			sumGA += s.GA
			fmt.Printf("%-7d %-5d %8d %6d %6.3f %7.3f %7d %6.3f\n", n, seed, s.Defects, s.Fingerprints, s.PerDefect, s.MeanSplit, s.OverMerged, s.GA)
		}
		fmt.Printf("%-7d %-5s %8s %6s %6.3f %7s %7s %6.3f\n", n, "mean", "", "", sumPer/float64(len(seeds)), "", "", sumGA/float64(len(seeds)))
	}
	return nil
}

func score(bin, path string, n int, seed int64) (Score, error) {
	f, err := os.Create(path)
	if err != nil {
		return Score{}, err
	}
	truth := map[int]string{}
	_, err = eventlog.GenerateDeployment(f, func(line int, id string) { truth[line] = id }, eventlog.DeploymentOptions{Lines: n, Seed: seed})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Score{}, err
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "replay", "--stage", "fingerprint", "--log", path)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return Score{}, fmt.Errorf("%s: %w: %s", bin, err, stderr.String())
	}
	pred := map[int]string{}
	templates := map[int]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var v struct {
			Line        int    `json:"line"`
			Fingerprint string `json:"fingerprint"`
			Template    string `json:"template"`
		}
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return Score{}, err
		}
		pred[v.Line] = v.Fingerprint
		templates[v.Line] = v.Template
	}
	if len(truth) == 0 {
		return Score{}, errors.New("no failure lines")
	}
	if explain {
		if err := explainSplits(path, truth, pred, templates); err != nil {
			return Score{}, err
		}
	}
	return Compare(truth, pred), sc.Err()
}

// Compare scores predicted fingerprints (by line) against true defects (by
// line); only the truth's lines count.
func Compare(truth map[int]string, pred map[int]string) Score {
	byDefect := map[string]map[string]bool{} // defect → its fingerprints
	byFP := map[string]map[string]bool{}     // fingerprint → its defects
	defectLines := map[string]int{}
	fpLines := map[string]int{}
	pairLines := map[[2]string]int{}
	for line, d := range truth {
		fp, ok := pred[line]
		if !ok {
			fp = "missing:" + strconv.Itoa(line) // its own group, always wrong below
		}
		if byDefect[d] == nil {
			byDefect[d] = map[string]bool{}
		}
		byDefect[d][fp] = true
		if byFP[fp] == nil {
			byFP[fp] = map[string]bool{}
		}
		byFP[fp][d] = true
		defectLines[d]++
		fpLines[fp]++
		pairLines[[2]string{d, fp}]++
	}
	var s Score
	s.Defects, s.Fingerprints = len(byDefect), len(byFP)
	s.PerDefect = float64(s.Fingerprints) / float64(s.Defects)
	var split int
	for _, fps := range byDefect {
		split += len(fps)
		for fp := range fps {
			if len(byFP[fp]) > 1 {
				s.OverMerged++
				break
			}
		}
	}
	s.MeanSplit = float64(split) / float64(s.Defects)
	correct := 0
	for line, d := range truth {
		fp, ok := pred[line]
		if ok && pairLines[[2]string{d, fp}] == defectLines[d] && fpLines[fp] == defectLines[d] {
			correct++
		}
	}
	s.GA = float64(correct) / float64(len(truth))
	return s
}

// explainSplits prints, for each defect with more than one fingerprint or
// sharing one with another defect, each of its fingerprints with the
// template and the first log line that got it.
func explainSplits(path string, truth map[int]string, pred, templates map[int]string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	lines := bytes.Split(raw, []byte("\n"))
	byDefect := map[string]map[string]int{} // defect → fingerprint → first line
	byFP := map[string]map[string]bool{}
	for line, d := range truth {
		fp := pred[line]
		if byDefect[d] == nil {
			byDefect[d] = map[string]int{}
		}
		if first, ok := byDefect[d][fp]; !ok || line < first {
			byDefect[d][fp] = line
		}
		if byFP[fp] == nil {
			byFP[fp] = map[string]bool{}
		}
		byFP[fp][d] = true
	}
	for _, d := range slices.Sorted(maps.Keys(byDefect)) {
		fps := byDefect[d]
		merged := false
		for fp := range fps {
			merged = merged || len(byFP[fp]) > 1
		}
		if len(fps) == 1 && !merged {
			continue
		}
		fmt.Printf("  defect %s: %d fingerprints\n", d, len(fps))
		for _, fp := range slices.Sorted(maps.Keys(fps)) {
			line := fps[fp]
			fmt.Printf("    %s shared-with=%d template=%q\n      line %d: %s\n", fp, len(byFP[fp])-1, templates[line], line, lines[line-1])
		}
	}
	return nil
}
