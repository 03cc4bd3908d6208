package stages

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/redact"
	"github.com/the-loop/the-loop-diagnose/stages/group"
	"github.com/the-loop/the-loop-diagnose/store"
)

// The distinct values count every occurrence dedup received, not the
// newest few it keeps as samples.
func TestTallyCountsEveryOccurrenceNotOnlyTheSamples(t *testing.T) {
	stage := NewDedup(DedupConfig{Store: store.OpenMemory(), Now: func() time.Time { return now }, Policy: testPolicy()})
	var in []pipeline.Occurrence
	for i := int64(1); i <= 50; i++ {
		o := occ(i, "x", "a")
		harness := "claude"
		if i%3 == 0 {
			harness = "cursor"
		}
		o.Fields = append(o.Fields, pipeline.Field{Key: "harness", Value: harness},
			pipeline.Field{Key: "exit_code", Value: float64(i % 2)}, pipeline.Field{Key: "will_retry", Value: false},
			pipeline.Field{Key: "work_item", Value: "acme/widgets#7"},                                            // not counted: not allow-listed
			pipeline.Field{Key: "message", Value: fmt.Sprintf("sync failed for user dev%d on host ci-%d", i, i)}) // not counted: free text
		in = append(in, o)
	}
	got, err := pipeline.Collect(context.Background(), stage, in...)
	if err != nil || len(got) != 1 {
		t.Fatalf("%v %d groups", err, len(got))
	}
	g := got[0]
	if len(g.Samples) != GroupSamples || g.Tally.Occurrences != 50 {
		t.Fatalf("samples %d, tallied %d", len(g.Samples), g.Tally.Occurrences)
	}
	if ft := g.Tally.Fields["message"]; ft != nil {
		t.Errorf("messages tallied (%d values): free text would be shown with only the samples' identities masked", len(ft.Values))
	}
	h := g.Tally.Fields["harness"].Values
	if h["claude"] != 34 || h["cursor"] != 16 {
		t.Errorf("harness %v, want claude 34 cursor 16", h)
	}
	if e := g.Tally.Fields["exit_code"].Values; e["0"] != 25 || e["1"] != 25 {
		t.Errorf("exit_code %v", e)
	}
	if w := g.Tally.Fields["will_retry"].Values; w["false"] != 50 {
		t.Errorf("will_retry %v", w)
	}
	if g.Tally.Fields["work_item"] != nil || g.Tally.Fields["ts"] != nil || g.Tally.Fields["event"] != nil {
		t.Errorf("counted a field the evidence does not show: %v", g.Tally.Fields)
	}
	red := redact.New(redact.Options{})
	if line := composeDistinct(g.Tally.Fields["harness"], red, redact.RecordIdentity{}); line != "claude ×34, cursor ×16" {
		t.Errorf("shown as %q", line)
	}
}

// The compose stage shows a field past the tally's bound with the rest
// counted as other values.
func TestComposeShowsATallyPastItsBound(t *testing.T) {
	var tl pipeline.Tally
	for i := range 40 {
		group.TallyRecord(&tl, pipeline.Record{Fields: pipeline.Fields{{Key: "source", Value: "src-" + strings.Repeat("x", i)}}})
	}
	line := composeDistinct(tl.Fields["source"], redact.New(redact.Options{}), redact.RecordIdentity{})
	if !strings.HasSuffix(line, ", other values ×32") || strings.Count(line, "×1,") != composeMaxValues {
		t.Errorf("shown as %q", line)
	}
}
