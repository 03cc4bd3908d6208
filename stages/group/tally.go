package group

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/the-loop/the-loop-diagnose/logread"
	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// The evidence counts what every occurrence says, not what the few
// samples a group keeps say: "harness: claude ×33, cursor ×17" over the
// scan's 50 records. Dedup folds each occurrence into its group's tally as
// it comes (the samples are a ring of the newest 20), so the counts cost a
// few map increments per occurrence and memory bounded per defect.

// TallyFields are the fields counted: the allow-listed ones but ts (it
// differs on every record) and event (the title's), plus the version the
// deployment ran, which the Environment section shows.
var TallyFields = append(slices.DeleteFunc(slices.Clone(logread.DossierFields), func(k string) bool {
	// A message is free text, not a value that repeats: counted over every
	// occurrence, it would be shown with only the samples' identities to
	// mask (a user or host named by a record no sample kept).
	return k == "ts" || k == "event" || k == logread.KeyMessage
}), "version")

// Tally bounds: a field with more distinct values than tallyMaxValues is
// not an enum, and what goes past the bound is only counted (Other); a
// value longer than tallyMaxValueBytes is counted the same way (the
// evidence shows a value in at most 60 characters, and is scrubbed before
// it is cut, never after).
const (
	tallyMaxValues     = 32
	tallyMaxValueBytes = 100
)

// TallyRecord counts one occurrence's values. A value is counted by its text:
// a string as it is, a number or boolean as JSON writes it; null, blank
// strings, objects and arrays are not counted (the sample records show them).
func TallyRecord(t *pipeline.Tally, r pipeline.Record) {
	t.Occurrences++
	var num [32]byte
	seen := 0 // a repeated key counts once, its last value (as Lookup reads it)
	for i := len(r.Fields) - 1; i >= 0; i-- {
		f := r.Fields[i]
		bit := slices.Index(TallyFields, f.Key)
		if bit < 0 || seen&(1<<bit) != 0 {
			continue
		}
		seen |= 1 << bit
		var text []byte
		var str string
		switch v := f.Value.(type) {
		case string:
			str = v
		case float64:
			text = strconv.AppendFloat(num[:0], v, 'g', -1, 64)
		case bool:
			text = strconv.AppendBool(num[:0], v)
		default:
			continue
		}
		if text == nil && strings.TrimSpace(str) == "" {
			continue
		}
		if t.Fields == nil {
			t.Fields = map[string]*pipeline.FieldTally{}
		}
		ft := t.Fields[f.Key]
		if ft == nil {
			ft = &pipeline.FieldTally{Values: map[string]int{}}
			t.Fields[TallyFields[bit]] = ft
		}
		if text != nil {
			if _, ok := ft.Values[string(text)]; ok { // no allocation for a known value
				ft.Values[string(text)]++
				continue
			}
			str = string(text)
		} else if _, ok := ft.Values[str]; ok {
			ft.Values[str]++
			continue
		}
		if len(str) > tallyMaxValueBytes || len(ft.Values) >= tallyMaxValues {
			ft.Other++
			continue
		}
		// A clone: the record's strings share its line's memory.
		ft.Values[strings.Clone(str)] = 1
	}
}

// MergeTally folds from into into (two groups that turned out to be one
// defect).
func MergeTally(into *pipeline.Tally, from pipeline.Tally) {
	into.Occurrences += from.Occurrences
	for k, ft := range from.Fields {
		if into.Fields == nil {
			into.Fields = map[string]*pipeline.FieldTally{}
		}
		have := into.Fields[k]
		if have == nil {
			have = &pipeline.FieldTally{Values: map[string]int{}}
			into.Fields[k] = have
		}
		have.Other += ft.Other
		for _, v := range slices.Sorted(maps.Keys(ft.Values)) {
			switch n := ft.Values[v]; {
			case have.Values[v] > 0 || len(have.Values) < tallyMaxValues:
				have.Values[v] += n
			default:
				have.Other += n
			}
		}
	}
}
