package main

import (
	"encoding/json"
	"maps"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/the-loop/the-loop-diagnose/store"
)

// statusFill sets every exported field reachable from v to a value that is
// not zero (one entry in each map and slice), so that status --json, fed
// the state, emits every key it can emit.
func statusFill(v reflect.Value) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(now) {
			v.Set(reflect.ValueOf(now))
			return
		}
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				statusFill(f)
			}
		}
	case reflect.String:
		v.SetString("x")
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint64, reflect.Uint32:
		v.SetUint(1)
	case reflect.Float64:
		v.SetFloat(1)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Interface:
		v.Set(reflect.ValueOf("x"))
	case reflect.Pointer:
		if v.Type() == reflect.TypeOf(&store.Keyed[store.Reported]{}) {
			// Looked up per key from the store: filled through its API.
			r := store.Reported{}
			statusFill(reflect.ValueOf(&r).Elem())
			k := &store.Keyed[store.Reported]{}
			k.Set("v3:0123456789abcdef", r)
			v.Set(reflect.ValueOf(k))
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		statusFill(v.Elem())
	case reflect.Slice:
		if v.Type() == reflect.TypeOf(json.RawMessage{}) {
			v.SetBytes([]byte(`{"title":"x"}`))
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		statusFill(v.Index(0))
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		e := reflect.New(v.Type().Elem()).Elem()
		statusFill(e)
		v.SetMapIndex(reflect.ValueOf("v3:0123456789abcdef").Convert(v.Type().Key()), e)
	}
}

// statusPaths lists every key path of a decoded JSON value with its JSON
// type: a map whose keys are data (fingerprints, names) has them written
// as data says (FP, NAME), array elements as []; an opaque object (an
// agent's answer, a verdict's evidence) is not entered.
func statusPaths(prefix string, v any, data map[string]string, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		if prefix != "" {
			out[prefix] = "object"
		}
		if data[prefix] == "opaque" {
			return
		}
		for k, e := range x {
			name := k
			if d := data[prefix]; d != "" {
				name = d
			}
			statusPaths(strings.TrimPrefix(prefix+"."+name, "."), e, data, out)
		}
	case []any:
		out[prefix] = "array"
		for _, e := range x {
			statusPaths(prefix+"[]", e, data, out)
		}
	case string:
		out[prefix] = "string"
	case float64:
		out[prefix] = "number"
	case bool:
		out[prefix] = "boolean"
	case nil:
		out[prefix] = "null"
	}
}

// statusDoc documents status --json field by field (path and JSON type).
const statusDoc = repoRoot + "/docs/status-json.md"

// docs/status-json.md documents status --json field by field (path and
// JSON type); the report, fed a state with every field set, emits exactly
// those.
func TestStatusJSONShapeIsDocumented(t *testing.T) {
	st := store.NewState()
	statusFill(reflect.ValueOf(st).Elem())
	cfg := Config{StatePath: "/srv/the-loop/.the-loop/self-diagnosis.json", MaxIssuesPerDay: 3, MaxDiagnosesPerDay: 20, MaxAgentCostPerDay: 1}
	at := time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC)
	var x statusExtras
	x.store = "sqlite /srv/the-loop/.the-loop/the-loop-diagnose.db"
	x.ledger = []store.LedgerEntry{{Time: at, Fingerprint: "v3:1", Verdict: "environment", Reason: "r", Evidence: map[string]any{"k": "v"}, ToolVersion: "1"}}
	x.pruned = []store.BacklogSummary{{Event: "e", Defects: 1, Occurrences: 2, First: at, Last: at}}
	b, err := json.Marshal(statusReport(cfg, st, true, at, x))
	if err != nil {
		t.Fatal(err)
	}
	var report any
	if err := json.Unmarshal(b, &report); err != nil {
		t.Fatal(err)
	}
	// The maps keyed by fingerprint (or, for outages, by dependency).
	data := map[string]string{"reported": "FP", "deferred": "FP", "dismissed": "FP", "settled": "FP", "abandoned": "FP",
		"attempts": "FP", "outages": "NAME",
		"deferred.FP.finding": "opaque", "abandoned.FP.pending.finding": "opaque", "settled.FP.evidence": "opaque", "ledger[].evidence": "opaque"}
	emitted := map[string]string{}
	statusPaths("", report, data, emitted)
	// An abandoned defect's pending entry is a deferred entry: documented once.
	for p, typ := range emitted {
		if rest, ok := strings.CutPrefix(p, "abandoned.FP.pending."); ok {
			delete(emitted, p)
			if want, ok := emitted["deferred.FP."+rest]; !ok || want != typ {
				t.Errorf("abandoned.FP.pending.%s (%s) is not a deferred entry's field", rest, typ)
			}
		}
	}

	// The reference lives in docs/status-json.md: its table is the whole
	// of what the command promises.
	doc, err := os.ReadFile(statusDoc)
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)
	documented := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\| (\\w+) \\|").FindAllStringSubmatch(section, -1) {
		documented[m[1]] = m[2]
	}
	for _, p := range slices.Sorted(maps.Keys(emitted)) {
		if typ, ok := documented[p]; !ok {
			t.Errorf("status --json emits %s (%s), which docs/status-json.md does not document", p, emitted[p])
		} else if typ != emitted[p] {
			t.Errorf("docs/status-json.md documents %s as %s; status --json emits a %s", p, typ, emitted[p])
		}
	}
	for _, p := range slices.Sorted(maps.Keys(documented)) {
		if _, ok := emitted[p]; !ok {
			t.Errorf("docs/status-json.md documents %s, which status --json does not emit", p)
		}
	}
}
