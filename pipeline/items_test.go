package pipeline

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestFieldsLookUpTheLastValueOfAKey(t *testing.T) {
	f := Fields{{"event", "a"}, {"n", 1.0}, {"event", "b"}, {"z", nil}}
	if got := f.Get("event"); got != "b" {
		t.Errorf("Get(event) = %v, want the last value b", got)
	}
	if v, ok := f.Lookup("z"); v != nil || !ok {
		t.Errorf("Lookup(z) = %v, %v; want a present null", v, ok)
	}
	if v, ok := f.Lookup("absent"); v != nil || ok {
		t.Errorf("Lookup(absent) = %v, %v", v, ok)
	}
	if got := Fields(nil).Get("event"); got != nil {
		t.Errorf("nil fields give %v", got)
	}
	if want := map[string]any{"event": "b", "n": 1.0, "z": nil}; !reflect.DeepEqual(f.Map(), want) {
		t.Errorf("Map() = %v, want %v", f.Map(), want)
	}

	f.Set("event", "c")
	f.Set("new", true)
	r := Record{Fields: f}
	if r.Str("event") != "c" || len(f) != 5 {
		t.Errorf("after Set: %v", f)
	}
	if v, ok := r.Bool("new"); !v || !ok {
		t.Errorf("Bool(new) = %v, %v", v, ok)
	}
}

// mapRecord is Record as it was with a map: its JSON is what Record's must
// stay, byte for byte.
type mapRecord struct {
	Line   int64          `json:"line"`
	Offset int64          `json:"offset"`
	End    int64          `json:"end"`
	Fields map[string]any `json:"fields"`
}

func encode(t *testing.T, v any, escapeHTML bool) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestFieldsJSONIsTheMapsAndRoundTrips(t *testing.T) {
	for _, f := range []Fields{
		nil, {},
		{{"z", 1.0}, {"a", "<b>&amp;</b>"}, {"z", "last"}, {"", "empty key"}},
		{{"k", "\u2028 \u2029 \xff tab\t"}, {"o", map[string]any{"x": []any{1.0, nil, map[string]any{"<": ">"}}}}},
	} {
		want := mapRecord{Line: 3, Offset: 7, End: 9, Fields: f.Map()}
		got := Record{Line: 3, Offset: 7, End: 9, Fields: f}
		for _, escapeHTML := range []bool{true, false} {
			if g, w := encode(t, got, escapeHTML), encode(t, want, escapeHTML); g != w {
				t.Errorf("escapeHTML %v:\n got %s\nwant %s", escapeHTML, g, w)
			}
		}
		var back Record
		if err := json.Unmarshal([]byte(encode(t, got, true)), &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back.Fields.Map(), mustRoundTrip(t, want).Fields) {
			t.Errorf("round trip of %v gave %v", f, back.Fields)
		}
	}
}

// mustRoundTrip is what encoding/json reads back from the map record's JSON
// (invalid UTF-8 becomes U+FFFD, say).
func mustRoundTrip(t *testing.T, r mapRecord) mapRecord {
	t.Helper()
	var back mapRecord
	if err := json.Unmarshal([]byte(encode(t, r, true)), &back); err != nil {
		t.Fatal(err)
	}
	return back
}

func TestFieldsOfSortsByKey(t *testing.T) {
	got := FieldsOf(map[string]any{"b": 2.0, "a": 1.0, "c": nil})
	want := Fields{{"a", 1.0}, {"b", 2.0}, {"c", nil}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("FieldsOf = %v, want %v", got, want)
	}
	if FieldsOf(nil) != nil {
		t.Fatal("a nil map must give nil fields")
	}
}

// The state and the event log hold a settlement's verdict as its string,
// which scans of older versions wrote: the values are frozen.
func TestSettledVerdictsKeepTheirStoredStrings(t *testing.T) {
	for v, want := range map[Settled]string{SettledHealed: "healed", SettledEnvironment: "environment",
		SettledTransient: "transient", SettledFixedUpstream: "fixed-upstream"} {
		b, err := json.Marshal(Settlement{Verdict: v})
		if err != nil || !strings.Contains(string(b), `"verdict":"`+want+`"`) {
			t.Errorf("%s encodes as %s (%v), want verdict %q", v, b, err, want)
		}
	}
}
