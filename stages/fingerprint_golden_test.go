package stages

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/the-loop/the-loop-diagnose/fakes/eventlog"
	"github.com/the-loop/the-loop-diagnose/fingerprint"
	"github.com/the-loop/the-loop-diagnose/logread"
	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/stages/incident"
)

// generatedFailures are the failure candidates of a generated the-loop log:
// thousands of varied records, with identity fields, stack traces, bare
// give-ups and corrupt lines.
func generatedFailures(tb testing.TB) []pipeline.Candidate {
	tb.Helper()
	var log bytes.Buffer
	o := eventlog.Options{Lines: 40000, Seed: 7, FailureRate: 0.08, Transients: 4, Environment: 4}
	if _, err := eventlog.Generate(&log, o); err != nil {
		tb.Fatal(err)
	}
	var stats logread.ReadStats
	r := pipeline.New(context.Background())
	records := pipeline.From(r, logread.NewRead(logread.ReadConfig{Source: &log, Name: "generated", FinalPartialLine: true, Prefilter: true}, &stats))
	records = pipeline.Then(r, records, logread.NewDecode(nil, &stats))
	var out []pipeline.Candidate
	pipeline.Into(r, pipeline.Then(r, records, NewFilter(nil, nil)), func(_ context.Context, c pipeline.Candidate) error {
		out = append(out, c)
		return nil
	})
	if err := r.Wait(); err != nil {
		tb.Fatal(err)
	}
	return out
}

// The fingerprint stage's output on a generated log, down to the last
// byte of every fingerprint, template and alias: a changed fingerprint
// files a deployment's known defects again. A speed-up must leave the
// digest as it is; a deliberate change of the algorithm is a new version
// (fingerprint.Version), and the digest is then updated with it.
func TestFingerprintStageOutputIsUnchanged(t *testing.T) {
	const want = "cf20f842316dd348b802fa9e5f04b39865c319601896e7043a648a8f8dbc384a"
	cands := generatedFailures(t)
	fp, err := fingerprint.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	occs, err := pipeline.Collect(context.Background(), NewFingerprint(fp, incident.NewIndex(incident.Keys, incident.MaxFailures)), cands...)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	failures := 0
	for _, o := range occs {
		if o.Reason != ReasonSuccess {
			failures++
		}
		fmt.Fprintf(h, "%d %s %q %q\n", o.Line, o.Fingerprint, o.Template, o.Aliases)
	}
	if failures < 2000 {
		t.Fatalf("only %d failures generated", failures)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		t.Fatalf("the stage's output over %d failures changed: digest %s, want %s", failures, got, want)
	}
}

// BenchmarkFingerprintStage is the stage as a scan with an empty state runs
// it (no older versions to alias), over a generated log's candidates.
func BenchmarkFingerprintStage(b *testing.B) {
	cands := generatedFailures(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fp, err := fingerprint.New(nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := pipeline.Collect(context.Background(), NewFingerprint(fp.WithoutAliases(), incident.NewIndex(incident.Keys, incident.MaxFailures)), cands...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(cands)), "ns/candidate")
}
