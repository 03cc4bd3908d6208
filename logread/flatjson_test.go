package logread

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/the-loop/the-loop-diagnose/fakes/eventlog"
	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// decodeWithEncodingJSON is what DecodeObject must always agree with.
func decodeWithEncodingJSON(raw []byte) (map[string]any, string) {
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, "bad JSON: " + err.Error()
	}
	return fields, ""
}

func checkDecodeMatchesEncodingJSON(t *testing.T, raw []byte) {
	t.Helper()
	want, wantReason := decodeWithEncodingJSON(raw)
	got, reason := DecodeObject(raw)
	if reason != wantReason || !reflect.DeepEqual(got.Map(), want) {
		t.Fatalf("DecodeObject(%q)\n got %#v, %q\nwant %#v, %q", raw, got, reason, want, wantReason)
	}
}

// generatedFailures are the failure lines of a deterministic generated log:
// the lines a full scan decodes.
var generatedFailures = sync.OnceValue(func() [][]byte {
	var log bytes.Buffer
	if _, err := eventlog.Generate(&log, eventlog.Options{Lines: 40000, Seed: 5, FailureRate: 0.05}); err != nil {
		panic(err)
	}
	var failures [][]byte
	for line := range bytes.Lines(log.Bytes()) {
		if bytes.Contains(line, []byte(`"level":"error"`)) {
			failures = append(failures, trimNewline(line))
		}
	}
	return failures
})

// Inputs at every edge of the fast path: what it takes, and what it must
// leave to encoding/json.
var flatJSONSeeds = []string{
	`{}`, `{ }`, " \t\r\n{ \t\r\n} \t\r\n", `{"a":"b"}`,
	`{"a":"x\"y\\z\/w\b\f\n\r\t"}`, `{"a\nb":"\u0041\u00e9\u20ac\uFFFF\u0000"}`,
	`{"a":"\u12"}`, `{"a":"\u12G4"}`, `{"a":"\x"}`, `{"a":"\`, `{"a":"b\"}`,
	`{"a":"héllo, 世界 🎉"}`, "{\"a\":\"\xff\"}", "{\"a\":\"\xed\xa0\x80\"}", "{\"\xc3\":1}",
	`{"a":"\ud83c\udf89"}`, `{"a":"\ud83c"}`, `{"a":"\udf89x"}`, `{"a":"\ud83c\u0041"}`,
	`{"a":1,"a":2}`, `{"a":{"b":1},"a":"c"}`, `{"a":"","":""}`,
	`{"n":-0}`, `{"n":0}`, `{"n":1e400}`, `{"n":-1e400}`, `{"n":1e-400}`, `{"n":0.1}`,
	`{"n":123456789012345678901234567890}`, `{"n":1E+2}`, `{"n":1e-2}`, `{"n":-12.5e3}`,
	`{"n":01}`, `{"n":1.}`, `{"n":-}`, `{"n":.5}`, `{"n":+1}`, `{"n":-01}`, `{"n":1e}`, `{"n":1e+}`,
	`{"n":0x10}`, `{"n":1_000}`, `{"n":Infinity}`, `{"n":NaN}`, `{"n":1 2}`, `{"n":1}x`,
	`{"o":{"a":1}}`, `{"o":[1,2]}`, `{"o":[]}`, `{"o":{}}`, `{"o":{"a":1,"a":{"b":[1,{"c":null}]}}}`, `{"o":[[[[[1]]]]]}`,
	`{"o":{"a":1,}}`, `{"o":[1,]}`, `{"o":[1 2]}`, `{"o":{"a" 1}}`, `{"o":{1:2}}`, `{"o":[}`, `{"o":{]}`, `{"a":1} {}`, `{"a":1}}`, `{"a":1}` + "\x00",
	`{"a":1,}`, `{,}`, `{"a" 1}`, `{"a":}`, `{"a"}`, `{a:1}`, `{'a':1}`, `{"a":1`, `{"a"`, `{`, ``, `  `,
	"{\"a\":\"x\ty\"}", "{\"a\":\"x\x01\"}", "{\"a\":\"x\x7f\"}", "\ufeff{}", "{\"a\":1}\u00a0", "{\u00a0}",
	`{"t":true,"f":false,"z":null}`, `{"t":tru}`, `{"z":nul}`, `{"f":falsey}`, `{"t":True}`, `{"z":nulll}`,
	`null`, `[]`, `"s"`, `1`, `true`,
	`{"a":"` + strings.Repeat(`x\n\"`, 5000) + `"}`, `{"` + strings.Repeat("k", 10000) + `":1}`,
}

func FuzzDecodeObjectMatchesEncodingJSON(f *testing.F) {
	for _, seed := range flatJSONSeeds {
		f.Add([]byte(seed))
	}
	for _, line := range generatedFailures()[:20] {
		f.Add(line)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkDecodeMatchesEncodingJSON(t, raw)
	})
}

// Every flat object encoding/json writes is one the fast path decodes
// itself, to the same values: it must not quietly fall back on common input.
func FuzzDecodeFlatTakesFlatObjects(f *testing.F) {
	f.Add("error", "line 1\nline \"2\" <tag> & \u2028 é 🎉 \x01", 42.5, true)
	f.Add("", "", 0.0, false)
	f.Add("\xff", "\xed\xa0\x80", -1e300, false)
	f.Add("k", "v", 5e-324, true)
	f.Fuzz(func(t *testing.T, key, text string, number float64, flag bool) {
		if math.IsNaN(number) || math.IsInf(number, 0) {
			return // not JSON
		}
		raw, err := json.Marshal(map[string]any{key: text, key + "_n": number, key + "_b": flag, key + "_z": nil})
		if err != nil {
			t.Fatal(err)
		}
		checkTakesFastPath(t, string(raw))
	})
}

// checkTakesFastPath fails unless decodeFlat decodes raw itself, to what
// encoding/json gives.
func checkTakesFastPath(t *testing.T, raw string) {
	t.Helper()
	want, _ := decodeWithEncodingJSON([]byte(raw))
	got, ok := decodeFlat(raw)
	if !ok || !reflect.DeepEqual(got.Map(), want) {
		t.Fatalf("decodeFlat(%q) = %#v, %v; want %#v", raw, got, ok, want)
	}
}

func TestDecodeObjectMatchesEncodingJSONOnGeneratedFailures(t *testing.T) {
	lines := generatedFailures()
	escaped := 0
	for _, line := range lines {
		checkDecodeMatchesEncodingJSON(t, line)
		if _, ok := decodeFlat(string(line)); !ok {
			t.Fatalf("the fast path fell back on a generated failure line: %s", line)
		}
		if bytes.Contains(line, []byte(`\n`)) {
			escaped++
		}
	}
	if len(lines) < 1000 || escaped == 0 {
		t.Fatalf("the generated log exercised little: %d failure lines, %d with escapes", len(lines), escaped)
	}
}

func TestDecodeFlatTakesEveryFlatShape(t *testing.T) {
	for _, raw := range []string{
		`{}`, " \t\r\n{ \t\r\n\"a\" \t\r\n: \t\r\n1 \t\r\n, \"b\":2} \t\r\n",
		`{"a":"x\"y\\z\/w\b\f\n\r\t\u00e9"}`, `{"a":"héllo 🎉","a":"last"}`, `{"":""}`,
		`{"n":-0,"m":1E+2,"o":123456789012345678901234567890,"p":1e-400,"q":-12.5e-3}`,
		`{"t":true,"f":false,"z":null}`,
		// pino's and bunyan's error objects, a list, nested to the limit.
		`{"level":50,"err":{"type":"Error","message":"boom","stack":"Error: boom\n    at x (/a.js:1:2)"},"tags":["a",1,null,{"k":[]}]}`,
		`{"a":{"b":{"c":{"d":[1]}}}}`,
	} {
		checkTakesFastPath(t, raw)
	}
}

// The fast path keeps a line's fields in its order, a repeated key each
// time, and a lookup finds the last, as encoding/json's map holds.
func TestDecodeFlatKeepsLineOrderAndTheLastValueWins(t *testing.T) {
	got, ok := decodeFlat(`{"b":1,"a":"x","b":true}`)
	want := pipeline.Fields{{Key: "b", Value: 1.0}, {Key: "a", Value: "x"}, {Key: "b", Value: true}}
	if !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeFlat = %#v, %v; want %#v", got, ok, want)
	}
	if v := got.Get("b"); v != true {
		t.Fatalf("Get(b) = %#v, want the last value true", v)
	}
}

// lookedUp keeps the benchmark's lookups from being optimized away.
var lookedUp int

// The filter and the fingerprint stage look up these fields of every
// decoded record.
func lookUpWhatTheScanReads(f pipeline.Fields) {
	r := pipeline.Record{Fields: f}
	lookedUp += len(r.Str("event")) + len(r.Str("error")) + len(r.Str("level")) + len(r.Str("source"))
	if retry, _ := r.Bool("will_retry"); retry {
		lookedUp++
	}
}

// go test ./stages -run '^$' -bench DecodeObject -benchmem
func BenchmarkDecodeObject(b *testing.B) {
	lines := generatedFailures()
	size := 0
	for _, line := range lines {
		size += len(line)
	}
	for _, bench := range []struct {
		name   string
		decode func([]byte) string // the corrupt reason, "" when decoded
	}{
		{"encoding-json", func(raw []byte) string { _, reason := decodeWithEncodingJSON(raw); return reason }},
		{"fast", func(raw []byte) string { _, reason := DecodeObject(raw); return reason }},
		{"fast-and-lookups", func(raw []byte) string {
			f, reason := DecodeObject(raw)
			lookUpWhatTheScanReads(f)
			return reason
		}},
	} {
		b.Run(bench.name, func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				for _, line := range lines {
					if reason := bench.decode(line); reason != "" {
						b.Fatal(reason)
					}
				}
			}
		})
	}
}

// plainRunEnd reads eight bytes at a time; it must stop exactly where the
// byte-at-a-time loop stops, for every byte value at every position of a
// word, with and without other such bytes after it, from any start.
func TestPlainRunEndStopsWhereEachByteWould(t *testing.T) {
	reference := func(s string, i int) int {
		for i < len(s) && plainByte[s[i]] {
			i++
		}
		return i
	}
	for c := 0; c < 256; c++ {
		for p := 0; p < 24; p++ {
			b := []byte(strings.Repeat("a", 24))
			b[p] = byte(c)
			for _, s := range []string{string(b), string(b) + "\"", string(b[:p+1])} {
				for start := 0; start <= 9 && start <= len(s); start++ {
					if got, want := plainRunEnd(s, start), reference(s, start); got != want {
						t.Fatalf("byte %#x at %d of %q from %d: %d, want %d", c, p, s, start, got, want)
					}
				}
			}
		}
	}
}
