package logread

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// formatFixture reads testdata/formats/NAME.jsonl: lines written the way
// that library writes them.
func formatFixture(t *testing.T, name string) [][]byte {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "testdata", "formats", name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
	}
	return lines
}

// Each preset maps its library's records onto the canonical record: the
// failures are selected (and only they), named by their event or message,
// with the error's text (nested objects and stacks included), a time and a
// level; and the prefilter derived for the format keeps every one of them
// while skipping lines that are not.
func TestEveryPresetMapsItsLibrarysRecords(t *testing.T) {
	type want struct {
		line         int // 1-based
		event, error string
		level        string
	}
	for _, c := range []struct {
		format string
		want   []want
	}{
		{"zap", []want{{3, "charge failed", "card_declined", "error"}, {5, "charge failed", "payments/charge.go:142", "error"},
			{7, "invariant violated", "nil cart", "fatal"}}},
		{"zerolog", []want{{2, "reserve stock", `violates unique constraint "stock_pkey"`, "error"}, {4, "reserve stock", "duplicate key", "error"},
			{6, "cannot load config", "config.toml", "fatal"}}},
		{"logrus", []want{{2, "send failed", "connection refused", "error"}, {4, "send failed", "10.0.4.22:587", "error"}}},
		{"slog", []want{{2, "render template", "nil pointer evaluating", "error"}, {4, "render template", "invoice.html:14:9", "error"}}},
		{"pino", []want{{3, "request errored", "TypeError: Cannot read properties of undefined", "error"},
			{5, "request errored", "users.js:41:23", "error"}, {6, "database unreachable, exiting", "ECONNREFUSED", "fatal"}}},
		{"bunyan", []want{{2, "invoice render failed", "RangeError: Invalid time value", "error"}, {4, "invoice render failed", "invoice.js:88:31", "error"}}},
		{"docker", []want{{2, "dispatch.failed", "remote rejected", "error"}, {4, "dispatch.failed", "fix-31", "error"}}},
		{"otel", []want{{2, "order push failed", "requests.exceptions.HTTPError", "error"}, {4, "order push failed", "503 Server Error", "error"}}},
	} {
		t.Run(c.format, func(t *testing.T) {
			f, err := NewFormat(c.format, Mapping{})
			if err != nil {
				t.Fatal(err)
			}
			policy := DefaultPolicy()
			pf := NewPrefilter(policy, f)
			lines := formatFixture(t, c.format)
			selected := map[int]pipeline.Record{}
			skipped := 0
			for i, line := range lines {
				fields, reason := DecodeObject(line)
				if reason != "" {
					t.Fatalf("line %d: %s", i+1, reason)
				}
				r := pipeline.Record{Line: int64(i + 1), Fields: f.Canonical(fields)}
				if _, ok := policy.Select(r); ok {
					selected[i+1] = r
					if !pf.May(line) {
						t.Errorf("line %d: the prefilter drops a candidate: %s", i+1, line)
					}
				} else if !pf.May(line) {
					skipped++
				}
			}
			if skipped == 0 {
				t.Error("the prefilter skipped no line: it filters nothing")
			}
			if len(selected) != len(c.want) {
				t.Fatalf("selected lines %v, want %d", keys(selected), len(c.want))
			}
			for _, w := range c.want {
				r, ok := selected[w.line]
				if !ok {
					t.Fatalf("line %d not selected (selected %v)", w.line, keys(selected))
				}
				if r.Str(KeyEvent) != w.event || !strings.Contains(r.Str(KeyError), w.error) || r.Str(KeyLevel) != w.level {
					t.Errorf("line %d: event %q error %q level %q; want %q, an error holding %q, %q",
						w.line, r.Str(KeyEvent), r.Str(KeyError), r.Str(KeyLevel), w.event, w.error, w.level)
				}
				if ts, err := time.Parse(time.RFC3339Nano, r.Str(KeyTime)); err != nil || ts.Year() != 2026 {
					t.Errorf("line %d: time %q (%v)", w.line, r.Str(KeyTime), err)
				}
			}
		})
	}
}

func keys(m map[int]pipeline.Record) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A mapping overrides a preset: another level key and level names, the
// message and error under other names, a retry flag; the prefilter follows.
func TestAMappingOverridesThePreset(t *testing.T) {
	f, err := NewFormat("zerolog", Mapping{Level: []string{"severity"}, Levels: map[string]string{"crit": "fatal", "7": "error"},
		Message: []string{"text"}, Error: []string{"failure.detail"}, Retry: []string{"retrying"}})
	if err != nil {
		t.Fatal(err)
	}
	p := DefaultPolicy()
	pf := NewPrefilter(p, f)
	for _, c := range []struct {
		line string
		want string
	}{
		{`{"severity":"CRIT","text":"disk gone","failure":{"detail":"EIO on /dev/sdb"}}`, ReasonError},
		{`{"severity":7,"text":"numbered"}`, ReasonError},
		{`{"severity":6,"text":"below"}`, ""},
		{`{"severity":"warn","text":"gave up","retrying":false,"failure":{"detail":"timeout"}}`, ReasonGiveUp},
		{`{"level":"error","text":"the preset's key no longer counts"}`, ""},
	} {
		fields, reason := DecodeObject([]byte(c.line))
		if reason != "" {
			t.Fatal(reason)
		}
		r := pipeline.Record{Fields: f.Canonical(fields)}
		got, _ := p.Select(r)
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.line, got, c.want)
		}
		if got != "" && !pf.May([]byte(c.line)) {
			t.Errorf("%s: the prefilter drops it", c.line)
		}
	}
	if _, err := NewFormat("log4j", Mapping{}); err == nil || !strings.Contains(err.Error(), "pino") {
		t.Errorf("an unknown format: %v, want an error listing the presets", err)
	}
	if _, err := NewFormat("zap", Mapping{Inner: "pino"}); err == nil {
		t.Error("inner accepted for a format that wraps nothing")
	}
}

// An error's text keeps what the library wrote beside it, however it is
// shaped: OpenTelemetry's exception.type with no stack, zerolog's stack as
// a list of frames, an error object with no message (as JSON, not Go's
// map syntax).
func TestTheErrorTextKeepsItsTypeAndStructuredStacks(t *testing.T) {
	for _, c := range []struct {
		format, line string
		want         []string
	}{
		{"otel", `{"timeUnixNano":"1793523608000000000","severityNumber":17,"body":{"stringValue":"charge failed"},"attributes":[{"key":"exception.type","value":{"stringValue":"stripe.error.CardError"}},{"key":"exception.message","value":{"stringValue":"card declined"}}]}`,
			[]string{"stripe.error.CardError: card declined"}},
		{"zerolog", `{"level":"error","stack":[{"func":"(*Repo).Save","line":"88","source":"repo.go"}],"error":"constraint violated","time":"2026-11-30T10:00:00Z","message":"save failed"}`,
			[]string{"constraint violated", `"func":"(*Repo).Save"`, `"source":"repo.go"`}},
		{"pino", `{"level":50,"time":1796032800000,"msg":"upstream failed","err":{"code":"ECONNRESET","errno":-104}}`,
			[]string{`"code":"ECONNRESET"`}},
	} {
		f, err := NewFormat(c.format, Mapping{})
		if err != nil {
			t.Fatal(err)
		}
		fields, reason := DecodeObject([]byte(c.line))
		if reason != "" {
			t.Fatal(reason)
		}
		got := pipeline.Record{Fields: f.Canonical(fields)}.Str(KeyError)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: error %q, want it to hold %q", c.format, got, w)
			}
		}
		if strings.Contains(got, "map[") {
			t.Errorf("%s: error %q is Go's map syntax", c.format, got)
		}
	}
}

// FuzzFormatPrefilterIsExact: for every preset, the prefilter derived from
// the policy never drops a line the decoder and the policy select.
func FuzzFormatPrefilterIsExact(f *testing.F) {
	for _, s := range []string{`{"level":50,"msg":"x"}`, `{"level": 5e1}`, `{"severityNumber":18}`, `{"severityText":"Error"}`,
		`{"log":"{\"level\":\"error\"}\n"}`, `{"log":"{\"level\" :\t\"FATAL\"}"}`, `{"level":"ERROR","msg":"m"}`, `{"level":"dpanic"}`,
		`{"log":"{\"will_retry\":false}"}`, `{"level":"50"}`, `{"level":60.5}`, `{"severityNumber":"17"}`} {
		for i := range Presets() {
			f.Add([]byte(s), uint8(i))
		}
	}
	formats := map[string]*Format{}
	for _, n := range Presets() {
		formats[n], _ = NewFormat(n, Mapping{})
	}
	p := DefaultPolicy()
	f.Fuzz(func(t *testing.T, line []byte, which uint8) {
		name := Presets()[int(which)%len(Presets())]
		fm := formats[name]
		fields, reason := DecodeObject(line)
		if reason != "" || bytes.IndexByte(line, '\n') >= 0 { // a log's line never holds one: the reader splits there
			return
		}
		if _, ok := p.Select(pipeline.Record{Fields: fm.Canonical(fields)}); ok && !NewPrefilter(p, fm).May(line) {
			t.Fatalf("%s: the prefilter drops a candidate: %s", name, line)
		}
	})
}
