package eventlog

import (
	"bytes"
	"math"
	"testing"
	"time"
)

// FuzzGenerate checks the invariants for any options: valid options never
// panic, the log has the asked number of lines, exactly Stats.Corrupt of
// them are unusable, and the candidate lines are exactly the truth lines.
func FuzzGenerate(f *testing.F) {
	f.Add(200, int64(1), 0.05, 3, 0.02, 1, 1)
	f.Add(0, int64(0), 0.0, 0, 0.0, 0, 0)
	f.Add(1, int64(-7), 1.0, 1, -1.0, 0, 0)
	f.Add(50, int64(99), 0.5, -1, 0.5, 2, 0)
	f.Add(40, int64(5), 0.9, 0, 0.1, 30, 30)
	f.Fuzz(func(t *testing.T, lines int, seed int64, failureRate float64, defects int, corruptRate float64, transients, environment int) {
		if lines < 0 || lines > 3000 || defects > 200 || transients > 50 || environment > 50 {
			t.Skip()
		}
		o := Options{Lines: lines, Seed: seed, FailureRate: failureRate, Defects: defects, CorruptRate: corruptRate,
			Transients: transients, Environment: environment, Start: time.Unix(seed%1e9, 0)}
		var buf bytes.Buffer
		var truth []int
		st, err := GenerateWithTruth(&buf, func(line int, _ string) { truth = append(truth, line) }, o)
		if err != nil {
			if buf.Len() != 0 {
				t.Fatalf("error %v after writing %d bytes", err, buf.Len())
			}
			return
		}
		if math.IsNaN(failureRate) || math.IsNaN(corruptRate) {
			t.Fatalf("NaN rate accepted: %+v", o)
		}
		got := readLines(t, buf.Bytes())
		if len(got) != lines || st.Lines != lines {
			t.Fatalf("%d lines written, Stats %d, asked %d", len(got), st.Lines, lines)
		}
		corrupt, candidates := 0, []int(nil)
		for _, p := range got {
			switch {
			case p.fields == nil:
				corrupt++
			case isCandidate(p.fields):
				candidates = append(candidates, p.n)
			}
		}
		if corrupt != st.Corrupt || len(truth) != st.Failures {
			t.Fatalf("corrupt %d vs Stats %d, truth %d vs Stats %d", corrupt, st.Corrupt, len(truth), st.Failures)
		}
		if len(candidates) != len(truth) {
			t.Fatalf("%d candidate lines, %d truth lines", len(candidates), len(truth))
		}
		for i := range truth {
			if candidates[i] != truth[i] {
				t.Fatalf("candidate line %d, truth line %d", candidates[i], truth[i])
			}
		}
	})
}
