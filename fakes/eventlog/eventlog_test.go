package eventlog

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"io"
	"maps"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// maxLine is the line cap a reader is expected to apply.
const maxLine = 1 << 20

// parsed is one line as a strict reader sees it.
type parsed struct {
	n      int // 1-based
	raw    []byte
	fields map[string]any // nil for a corrupt line
}

// readLines splits a log the way the-loop-diagnose's reader must: a line is
// usable only if it is valid UTF-8, at most maxLine bytes, and a JSON object.
func readLines(t testing.TB, log []byte) []parsed {
	t.Helper()
	if len(log) > 0 && log[len(log)-1] != '\n' {
		t.Fatalf("log does not end with a newline")
	}
	var out []parsed
	for n, raw := range bytes.Split(log[:max(len(log)-1, 0)], []byte("\n")) {
		p := parsed{n: n + 1, raw: raw}
		if usable(raw) {
			if err := json.Unmarshal(raw, &p.fields); err != nil {
				t.Fatalf("line %d: %v", p.n, err)
			}
		}
		out = append(out, p)
	}
	if len(log) == 0 {
		return nil
	}
	return out
}

// usable reports whether a reader should accept a line: at most maxLine
// bytes of valid UTF-8 holding one JSON object.
func usable(raw []byte) bool {
	raw = bytes.TrimLeft(raw, " \t\r")
	return len(raw) <= maxLine && utf8.Valid(raw) && len(raw) > 0 && raw[0] == '{' && json.Valid(raw)
}

// isCandidate is the documented failure rule.
func isCandidate(f map[string]any) bool {
	if ev, _ := f["event"].(string); strings.HasPrefix(ev, "diagnosis.") {
		return false
	}
	if f["level"] == "error" {
		return true
	}
	retry, ok := f["will_retry"].(bool)
	return ok && !retry
}

// candidateLines returns the numbers of the usable lines that match the
// failure rule, decoding only the fields the rule reads.
func candidateLines(t testing.TB, log []byte) []int {
	t.Helper()
	var out []int
	for n, raw := range bytes.Split(bytes.TrimSuffix(log, []byte("\n")), []byte("\n")) {
		if !usable(raw) {
			continue
		}
		var rec struct {
			Event     string `json:"event"`
			Level     string `json:"level"`
			WillRetry *bool  `json:"will_retry"`
		}
		if err := json.Unmarshal(raw, &rec); err != nil {
			t.Fatalf("line %d: %v", n+1, err)
		}
		m := map[string]any{"event": rec.Event, "level": rec.Level}
		if rec.WillRetry != nil {
			m["will_retry"] = *rec.WillRetry
		}
		if isCandidate(m) {
			out = append(out, n+1)
		}
	}
	return out
}

type truthLine struct {
	line int
	id   string
}

func generate(t testing.TB, o Options) ([]byte, Stats, []truthLine) {
	t.Helper()
	var buf bytes.Buffer
	var truth []truthLine
	st, err := GenerateWithTruth(&buf, func(line int, id string) { truth = append(truth, truthLine{line, id}) }, o)
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), st, truth
}

func TestSameSeedSameBytes(t *testing.T) {
	o := Options{Lines: 10_000, Seed: 42, Transients: 3, Environment: 3, CorruptRate: 0.002}
	a, _, _ := generate(t, o)
	b, _, _ := generate(t, o)
	if sha256.Sum256(a) != sha256.Sum256(b) {
		t.Fatal("two runs with the same options differ")
	}
	o.Seed = 43
	c, _, _ := generate(t, o)
	if bytes.Equal(a, c) {
		t.Fatal("different seeds gave the same log")
	}
}

func TestLinesParseExceptTheCorruptOnes(t *testing.T) {
	for _, o := range []Options{
		{Lines: 20_000, Seed: 1, CorruptRate: 0.01},
		{Lines: 120_000, Seed: 2, Transients: 4, Environment: 4}, // big enough for an over-long line
		SampleOptions(),
	} {
		log, st, _ := generate(t, o)
		lines := bytes.Split(bytes.TrimSuffix(log, []byte("\n")), []byte("\n"))
		if len(lines) != o.Lines || st.Lines != o.Lines {
			t.Fatalf("seed %d: %d lines in the log, Stats.Lines %d, want %d", o.Seed, len(lines), st.Lines, o.Lines)
		}
		corrupt, overlong := 0, 0
		for _, raw := range lines {
			if !usable(raw) {
				corrupt++
			}
			if len(raw) > maxLine {
				overlong++
			}
		}
		if corrupt != st.Corrupt {
			t.Errorf("seed %d: %d lines do not parse, Stats.Corrupt is %d", o.Seed, corrupt, st.Corrupt)
		}
		rate := o.CorruptRate
		if rate == 0 {
			rate = DefaultCorruptRate
		}
		if want := int(math.Round(float64(o.Lines) * rate)); st.Corrupt != want {
			t.Errorf("seed %d: %d corrupt lines, want %d", o.Seed, st.Corrupt, want)
		}
		if wantOverlong := o.Lines >= overlongMinLines; (overlong == 1) != wantOverlong || overlong > 1 {
			t.Errorf("seed %d: %d over-long lines in %d", o.Seed, overlong, o.Lines)
		}
	}
}

func TestFailuresAreExactlyTheCandidateLines(t *testing.T) {
	o := Options{Lines: 40_000, Seed: 9, FailureRate: 0.02, Transients: 3, Environment: 2}
	log, st, truth := generate(t, o)
	want := int(math.Round(float64(o.Lines) * o.FailureRate))
	if st.Failures != want {
		t.Fatalf("Stats.Failures = %d, want %d", st.Failures, want)
	}
	if len(truth) != st.Failures {
		t.Fatalf("truth called %d times for %d failures", len(truth), st.Failures)
	}
	candidates := candidateLines(t, log)
	truthLines := make([]int, len(truth))
	for i, tl := range truth {
		truthLines[i] = tl.line
	}
	if !slices.Equal(candidates, truthLines) {
		t.Fatalf("candidate lines differ from truth lines: %d candidates, %d truth", len(candidates), len(truthLines))
	}
}

func TestTruthMatchesTheCatalogue(t *testing.T) {
	o := Options{Lines: 30_000, Seed: 5, FailureRate: 0.05, Transients: 4, Environment: 4}
	log, st, truth := generate(t, o)
	lines := readLines(t, log)
	catalog := map[string]Defect{}
	for _, d := range Catalog(o) {
		catalog[d.ID] = d
	}
	if len(catalog) != DefaultDefects+4+4 {
		t.Fatalf("catalogue has %d defects, want %d", len(catalog), DefaultDefects+8)
	}
	texts := map[string]map[string]bool{}
	used := map[string]bool{}
	for _, tl := range truth {
		d, ok := catalog[tl.id]
		if !ok {
			t.Fatalf("line %d: defect %q is not in the catalogue", tl.line, tl.id)
		}
		used[tl.id] = true
		f := lines[tl.line-1].fields
		if f["event"] != d.Event || f["level"] != d.Level || f["source"] != d.Source || str(f, "harness") != d.Harness ||
			str(f, "gh_event") != d.GhEvent || f["via"] != d.Via {
			t.Fatalf("line %d of %s has envelope %v, catalogue says %+v", tl.line, d.ID, f, d)
		}
		if code, _ := f["exit_code"].(float64); int(code) != d.ExitCode {
			t.Fatalf("line %d of %s: exit_code %v, want %d", tl.line, d.ID, f["exit_code"], d.ExitCode)
		}
		errText := str(f, "error")
		if (errText == "") != (d.Template == "") {
			t.Fatalf("line %d of %s: error %q, template %q", tl.line, d.ID, errText, d.Template)
		}
		if d.Multiline != strings.Contains(errText, "\n") && !strings.Contains(d.Template, "<goroutines>") {
			t.Fatalf("line %d of %s: multiline %v but error is %q", tl.line, d.ID, d.Multiline, errText)
		}
		for _, key := range []string{"cwd", "version", "ts"} {
			if str(f, key) == "" {
				t.Fatalf("line %d of %s has no %s", tl.line, d.ID, key)
			}
		}
		if d.Source != "cli" && d.Source != "scheduler" && (str(f, "work_item") == "" || str(f, "delivery_id") == "") {
			t.Fatalf("line %d of %s lacks the private fields", tl.line, d.ID)
		}
		if texts[d.ID] == nil {
			texts[d.ID] = map[string]bool{}
		}
		texts[d.ID][errText] = true
	}
	var wantUsed []string
	for _, d := range Catalog(o) {
		if used[d.ID] {
			wantUsed = append(wantUsed, d.ID)
		}
	}
	if !slices.Equal(st.DefectsUsed, wantUsed) {
		t.Errorf("Stats.DefectsUsed = %v, truth used %v", st.DefectsUsed, wantUsed)
	}
	if len(st.DefectsUsed) != len(catalog) {
		t.Errorf("%d of %d defects emitted; with %d failures all should be", len(st.DefectsUsed), len(catalog), st.Failures)
	}
	// Volatile tokens vary per occurrence: a templated defect seen several
	// times must not always print the same text.
	for id, seen := range texts {
		if d := catalog[id]; d.Template != "" && strings.Contains(d.Template, "<") && len(seen) < 2 {
			n := 0
			for _, tl := range truth {
				if tl.id == id {
					n++
				}
			}
			if n >= 3 {
				t.Errorf("%s: %d occurrences all print %q", id, n, slices.Collect(maps.Keys(seen)))
			}
		}
	}
}

func TestTransientsHealAndBugsDoNot(t *testing.T) {
	o := Options{Lines: 40_000, Seed: 11, FailureRate: 0.03, Transients: 4, Environment: 2}
	log, _, truth := generate(t, o)
	lines := readLines(t, log)
	kind := map[string]string{}
	for _, d := range Catalog(o) {
		kind[d.ID] = d.Kind
	}
	type key struct{ event, workItem, delivery string }
	succeeded := map[key]int{} // last line of a success
	for _, p := range lines {
		if p.fields != nil && strings.HasSuffix(str(p.fields, "event"), ".succeeded") {
			succeeded[key{str(p.fields, "event"), str(p.fields, "work_item"), str(p.fields, "delivery_id")}] = p.n
		}
	}
	transients := 0
	for _, tl := range truth {
		f := lines[tl.line-1].fields
		k := key{strings.TrimSuffix(str(f, "event"), ".failed") + ".succeeded", str(f, "work_item"), str(f, "delivery_id")}
		at, healed := succeeded[k]
		switch kind[tl.id] {
		case KindTransient:
			transients++
			if retry, _ := f["will_retry"].(bool); !retry {
				t.Fatalf("line %d: transient %s without will_retry:true", tl.line, tl.id)
			}
			if !healed || at < tl.line {
				t.Fatalf("line %d: transient %s never succeeds later (%+v)", tl.line, tl.id, k)
			}
		default:
			if healed && k.workItem != "" {
				t.Fatalf("line %d: %s %s later succeeds at line %d", tl.line, kind[tl.id], tl.id, at)
			}
		}
	}
	if transients == 0 {
		t.Fatal("no transient failures emitted")
	}
}

func TestSecretsAppearOnlyInTheirDefects(t *testing.T) {
	o := Options{Lines: 40_000, Seed: 3, FailureRate: 0.05}
	log, _, truth := generate(t, o)
	lines := readLines(t, log)
	catalog := map[string]Defect{}
	carriers := 0
	for _, d := range Catalog(o) {
		catalog[d.ID] = d
		if len(d.Secrets) > 0 {
			carriers++
		}
	}
	if carriers < 3 {
		t.Fatalf("only %d defects carry secrets", carriers)
	}
	failure := map[int]string{}
	for _, tl := range truth {
		failure[tl.line] = tl.id
		d := catalog[tl.id]
		errText := str(lines[tl.line-1].fields, "error")
		if len(d.Secrets) > 0 && !slices.ContainsFunc(d.Secrets, func(s string) bool { return strings.Contains(errText, s) }) {
			t.Fatalf("line %d: %s should carry one of %q: %q", tl.line, d.ID, d.Secrets, errText)
		}
	}
	for _, p := range lines {
		if _, ok := failure[p.n]; ok {
			continue
		}
		for _, secret := range []string{fakeGitHubToken, "hunter2", "@example."} {
			if bytes.Contains(p.raw, []byte(secret)) {
				t.Fatalf("line %d is not a secret-carrying failure but contains %q", p.n, secret)
			}
		}
	}
}

func TestCatalogueKeepsNearDuplicatesApart(t *testing.T) {
	catalog := Catalog(Options{Transients: 6, Environment: 8, Defects: 60})
	ids := map[string]bool{}
	identity := map[string]string{}
	for _, d := range catalog {
		if ids[d.ID] {
			t.Fatalf("duplicate id %s", d.ID)
		}
		ids[d.ID] = true
		k := strings.Join([]string{d.Event, d.Level, d.Harness, d.Template}, "\x00")
		if other, dup := identity[k]; dup {
			t.Fatalf("%s and %s are indistinguishable", d.ID, other)
		}
		identity[k] = d.ID
		if d.Kind == KindTransient && !strings.HasSuffix(d.Event, ".failed") {
			t.Errorf("transient %s: event %q has no .succeeded counterpart", d.ID, d.Event)
		}
		if d.Template == "" && d.Level != "warning" {
			t.Errorf("%s: a bare failure must be a give-up", d.ID)
		}
	}
	for _, pair := range [][2]string{
		{"comment-410-gone", "comment-422-too-long"},
		{"agent-killed-137", "agent-terminated-143"},
		{"enoent-open-dossier", "enoent-write-transcript"},
		{"config-yaml-emfile", "state-db-emfile"},
		{"git-fetch-pull-ref-token", "git-push-rpc-400"},
		{"agent-gave-up-claude", "agent-gave-up-cursor"},
		{"agent-gave-up-claude", "dispatch-gave-up-claude"},
	} {
		if !ids[pair[0]] || !ids[pair[1]] {
			t.Errorf("near-duplicate pair %v missing from the default catalogue", pair)
		}
	}
}

func TestInvalidOptions(t *testing.T) {
	for name, o := range map[string]Options{
		"negative lines":      {Lines: -1},
		"rates exceed one":    {Lines: 10, FailureRate: 0.8, CorruptRate: 0.3},
		"nothing to draw":     {Lines: 10, Defects: -1},
		"negative transients": {Lines: 10, Transients: -2},
	} {
		var buf bytes.Buffer
		if _, err := Generate(&buf, o); err == nil {
			t.Errorf("%s: no error", name)
		}
		if buf.Len() != 0 {
			t.Errorf("%s: wrote %d bytes before failing", name, buf.Len())
		}
	}
	// None means none: no failures and no corrupt lines.
	log, st, _ := generate(t, Options{Lines: 5000, FailureRate: -1, CorruptRate: -1})
	if st.Failures != 0 || st.Corrupt != 0 {
		t.Fatalf("negative rates gave %d failures, %d corrupt", st.Failures, st.Corrupt)
	}
	for _, p := range readLines(t, log) {
		if p.fields == nil || isCandidate(p.fields) {
			t.Fatalf("line %d is corrupt or a candidate: %q", p.n, p.raw)
		}
	}
}

type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.n += len(p); w.n > 1<<20 {
		return 0, io.ErrShortWrite
	}
	return len(p), nil
}

func TestWriteErrorIsReturned(t *testing.T) {
	if _, err := Generate(&failingWriter{}, Options{Lines: 100_000}); err == nil {
		t.Fatal("a failing writer went unnoticed")
	}
}

func TestLineSizeAndTimestamps(t *testing.T) {
	o := Options{Lines: 20_000, Seed: 4}
	log, _, _ := generate(t, o)
	avg := float64(len(log)) / float64(o.Lines)
	if avg < 180 || avg > 240 {
		t.Errorf("average line is %.0f bytes, want about 210", avg)
	}
	prev := ""
	levels := map[string]int{}
	events := map[string]bool{}
	for _, p := range readLines(t, log) {
		if p.fields == nil {
			continue
		}
		ts := str(p.fields, "ts")
		if ts < prev {
			t.Fatalf("line %d: ts %s goes back from %s", p.n, ts, prev)
		}
		prev = ts
		levels[str(p.fields, "level")]++
		events[str(p.fields, "event")] = true
	}
	if noise := float64(levels["debug"]+levels["info"]) / float64(o.Lines); noise < 0.98 {
		t.Errorf("only %.3f of lines are debug/info", noise)
	}
	if len(events) < 40 {
		t.Errorf("only %d distinct events", len(events))
	}
	if !events["diagnosis.failed"] || !events["diagnosis.posted"] {
		t.Error("no diagnosis.* events")
	}
}

// Memory does not grow with the log: ten times the lines, about the same
// allocation.
func TestConstantMemory(t *testing.T) {
	allocated := func(lines int) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		if _, err := Generate(io.Discard, Options{Lines: lines, Seed: 1, Transients: 5, Environment: 5, CorruptRate: 0.001}); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	small, large := allocated(20_000), allocated(200_000)
	t.Logf("allocated: 20k lines %d bytes, 200k lines %d bytes", small, large)
	if large > small+256<<10 || large > 2<<20 {
		t.Fatalf("20k lines allocated %d bytes, 200k lines %d: memory grows with the log", small, large)
	}
}

func TestSampleFileIsReproducible(t *testing.T) {
	want, err := os.ReadFile("../../testdata/sample-events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	got, st, truth := generate(t, SampleOptions())
	if !bytes.Equal(got, want) {
		t.Fatal("testdata/sample-events.jsonl differs from SampleOptions' output; run go generate ./fakes/eventlog")
	}
	if len(want) > 600<<10 {
		t.Errorf("sample is %d bytes, keep it under 600 KiB", len(want))
	}
	kinds := map[string]string{}
	secrets := map[string][]string{}
	multiline := map[string]bool{}
	for _, d := range Catalog(SampleOptions()) {
		kinds[d.ID] = d.Kind
		secrets[d.ID] = d.Secrets
		multiline[d.ID] = d.Multiline
	}
	bugs, withSecrets, multi := map[string]bool{}, 0, 0
	for _, tl := range truth {
		if kinds[tl.id] == KindBug {
			bugs[tl.id] = true
		}
		if len(secrets[tl.id]) > 0 {
			withSecrets++
		}
		if multiline[tl.id] {
			multi++
		}
	}
	if len(bugs) < 5 || len(bugs) > 15 {
		t.Errorf("sample has %d distinct bugs, want 5-15 would-be issues", len(bugs))
	}
	if st.Corrupt < 2 || withSecrets == 0 || multi == 0 || len(st.DefectsUsed) != len(kinds) {
		t.Errorf("sample lacks variety: %d corrupt, %d secret-carrying and %d multi-line failures, %d/%d defects",
			st.Corrupt, withSecrets, multi, len(st.DefectsUsed), len(kinds))
	}
	if !bytes.Contains(want, []byte(`"event":"diagnosis.`)) {
		t.Error("sample has no diagnosis.* lines")
	}
}

func BenchmarkGenerate(b *testing.B) {
	const lines = 100_000
	w := &countingWriter{}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Generate(w, Options{Lines: lines, Seed: 1, Transients: 5, Environment: 5}); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(w.n / int64(b.N))
	b.ReportMetric(float64(lines*b.N)/b.Elapsed().Seconds(), "lines/s")
}

type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

func str(f map[string]any, key string) string {
	s, _ := f[key].(string)
	return s
}
