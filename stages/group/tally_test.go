package group

import (
	"strings"
	"testing"

	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// Bounds: a field with many distinct values keeps tallyMaxValues of them
// and counts the rest; a long value is counted, not kept; the last of a
// repeated key is the record's value.
func TestTallyBounds(t *testing.T) {
	var tl pipeline.Tally
	for i := range 40 {
		TallyRecord(&tl, pipeline.Record{Fields: pipeline.Fields{
			{Key: "source", Value: "first"}, {Key: "source", Value: "src-" + strings.Repeat("x", i)},
			{Key: "via", Value: strings.Repeat("v", tallyMaxValueBytes+1)}, {Key: "level", Value: "  "},
		}})
	}
	src := tl.Fields["source"]
	if len(src.Values) != tallyMaxValues || src.Other != 40-tallyMaxValues || src.Values["first"] != 0 {
		t.Errorf("source: %d values, other %d", len(src.Values), src.Other)
	}
	if via := tl.Fields["via"]; len(via.Values) != 0 || via.Other != 40 {
		t.Errorf("via: %+v", via)
	}
	if tl.Fields["level"] != nil {
		t.Errorf("a blank value was counted: %+v", tl.Fields["level"])
	}
	var merged pipeline.Tally
	MergeTally(&merged, tl)
	MergeTally(&merged, tl)
	if merged.Occurrences != 80 || len(merged.Fields["source"].Values) != tallyMaxValues || merged.Fields["source"].Other != 2*(40-tallyMaxValues) {
		t.Errorf("merged: %d occurrences, source %+v", merged.Occurrences, merged.Fields["source"])
	}
}
