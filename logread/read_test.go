package logread

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"runtime"
	"sort"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/the-loop/the-loop-diagnose/fakes/eventlog"
	"github.com/the-loop/the-loop-diagnose/pipeline"
)

func readAll(t *testing.T, input string, cfg ReadConfig) ([]pipeline.Record, *ReadStats) {
	t.Helper()
	cfg.Source = strings.NewReader(input)
	cfg.Name = "test.jsonl"
	var stats ReadStats
	r := pipeline.New(context.Background())
	var got []pipeline.Record
	records := pipeline.Then(r, pipeline.From(r, NewRead(cfg, &stats)), NewDecode(cfg.Format, &stats))
	pipeline.Into(r, records, func(_ context.Context, rec pipeline.Record) error {
		got = append(got, rec)
		return nil
	})
	if err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	return got, &stats
}

func TestReadSkipsAndCountsEveryKindOfCorruptLine(t *testing.T) {
	lines := []string{
		`{"event":"a","level":"error","error":"x"}`,
		`{"event":"b", bad json`,
		"",
		`["an","array"]`,
		`"a string"`,
		"{\"event\":\"c\",\"error\":\"\xff\xfe\"}",
		`{"event":"d","level":"info"}`,
		strings.Repeat("x", 300),
		`{"event":"e","level":"error"}`,
	}
	got, stats := readAll(t, strings.Join(lines, "\n")+"\n", ReadConfig{MaxLine: 200})
	if len(got) != 3 {
		t.Fatalf("got %d records, want 3 (a, d, e): %+v", len(got), got)
	}
	if got[0].Line != 1 || got[1].Line != 7 || got[2].Line != 9 {
		t.Errorf("line numbers = %d %d %d, want 1 7 9", got[0].Line, got[1].Line, got[2].Line)
	}
	if got[1].Offset != int64(len(strings.Join(lines[:6], "\n"))+1) {
		t.Errorf("offset of line 7 = %d", got[1].Offset)
	}
	if stats.Corrupt.Load() != 6 || stats.Lines.Load() != 9 {
		t.Errorf("corrupt %d of %d lines, want 6 of 9", stats.Corrupt.Load(), stats.Lines.Load())
	}
	if !strings.Contains(stats.Examples[0], "line 2") {
		t.Errorf("first corrupt example = %q, want it to name line 2", stats.Examples[0])
	}
}

func TestReadLeavesAnUnfinishedLastLineForNextTime(t *testing.T) {
	input := `{"event":"a","level":"error"}` + "\n" + `{"event":"b","lev`
	got, stats := readAll(t, input, ReadConfig{})
	if len(got) != 1 || stats.End.Load() != int64(len(`{"event":"a","level":"error"}`)+1) {
		t.Fatalf("got %d records, cursor %d", len(got), stats.End.Load())
	}
	if stats.Pending.Load() == 0 {
		t.Error("the unfinished line should be reported as pending")
	}
	// A fixture's last line without a newline is complete.
	got, _ = readAll(t, `{"event":"a","level":"error"}`, ReadConfig{FinalPartialLine: true})
	if len(got) != 1 {
		t.Fatalf("fixture last line not read: %d records", len(got))
	}
}

func TestReadResumesAtAnOffset(t *testing.T) {
	got, stats := readAll(t, `{"event":"x","level":"error"}`+"\n", ReadConfig{Start: 1000, StartLine: 41})
	if len(got) != 1 || got[0].Line != 42 || got[0].Offset != 1000 || stats.End.Load() != 1000+30 {
		t.Fatalf("got %+v, end %d", got, stats.End.Load())
	}
}

func TestFilterSelectsFailuresButNeverItsOwnEvents(t *testing.T) {
	cases := []struct {
		line string
		want string
	}{
		{`{"event":"dispatch.failed","level":"error","error":"x"}`, ReasonError},
		{`{"event":"agent.gave_up","level":"warning","will_retry":false}`, ReasonGiveUp},
		{`{"event":"dispatch.failed","level":"warning","will_retry":true}`, ""},
		{`{"event":"dispatch.started","level":"info"}`, ""},
		{`{"event":"diagnosis.failed","level":"error","error":"x"}`, ""},
		{`{"event":"diagnosis.posted","level":"info","will_retry":false}`, ""},
		// A level matches in lower, UPPER or Title case, and in no other.
		{`{"event":"x","level":"ERROR"}`, ReasonError},
		{`{"event":"x","level":"Fatal"}`, ReasonError},
		{`{"event":"x","level":"eRRor"}`, ""},
		{`{"event":"x","will_retry":"false"}`, ""},
	}
	for _, c := range cases {
		var f map[string]any
		if err := json.Unmarshal([]byte(c.line), &f); err != nil {
			t.Fatal(err)
		}
		reason, _ := defaultPolicy.Select(pipeline.Record{Fields: pipeline.FieldsOf(f)})
		if reason != c.want {
			t.Errorf("%s: reason %q, want %q", c.line, reason, c.want)
		}
	}
}

// prefilterAgrees checks the prefilter's one promise on a line: it never
// rejects a line the full decode would select.
func prefilterAgrees(t *testing.T, line []byte) {
	var f map[string]any
	// A line of the log never holds a '\n': the reader splits there.
	if !utf8.Valid(line) || bytes.IndexByte(line, '\n') >= 0 || json.Unmarshal(line, &f) != nil {
		return
	}
	if _, ok := defaultPolicy.Select(pipeline.Record{Fields: pipeline.FieldsOf(f)}); ok && !defaultPrefilter.May(line) {
		t.Fatalf("prefilter rejected a candidate: %s", line)
	}
}

func FuzzPrefilterIsExact(f *testing.F) {
	for _, s := range []string{
		`{"level":"error"}`, `{"level" : "\u0065rror"}`, `{"will_retry":false}`,
		`{"will\u005fretry":false}`, `{"le\u0076el":"error"}`, `{ "event":"x" , "will_retry" : false }`,
		`{"level":"err\u006fr","event":"é"}`, `{"level":"info"}`,
		"{\"level\"\t:\r \"error\"}", `{"a":{"level":"x"},"level" :"error"}`, `{"will_retry"  :  false}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) { prefilterAgrees(t, line) })
}

// TestPrefilterOnGeneratedLines builds candidate-shaped objects with random
// key order, spacing, escapes and unicode, and checks the prefilter keeps
// every one the full decode selects.
func TestPrefilterOnGeneratedLines(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	escape := func(s string) string {
		var b strings.Builder
		for _, r := range s {
			if rng.Intn(4) == 0 {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
		return b.String()
	}
	space := func() string { return strings.Repeat(" ", rng.Intn(3)) }
	values := map[string][]string{
		"level":      {`"error"`, `"info"`, `"warning"`, `"Error"`},
		"will_retry": {"false", "true", `"false"`, "null"},
		"event":      {`"dispatch.failed"`, `"diagnosis.failed"`, `"ünïcode.event"`},
		"error":      {`"boom"`, `"\"quoted\""`, `"日本語"`},
	}
	selected := 0
	for i := 0; i < 20000; i++ {
		keys := []string{"level", "will_retry", "event", "error"}
		rng.Shuffle(len(keys), func(a, b int) { keys[a], keys[b] = keys[b], keys[a] })
		var parts []string
		for _, k := range keys[:1+rng.Intn(len(keys))] {
			v := values[k][rng.Intn(len(values[k]))]
			if strings.HasPrefix(v, `"`) {
				v = `"` + escape(strings.Trim(v, `"`)) + `"`
			}
			parts = append(parts, fmt.Sprintf(`%s"%s"%s:%s%s`, space(), escape(k), space(), space(), v))
		}
		line := []byte("{" + strings.Join(parts, ",") + "}")
		var f map[string]any
		if json.Unmarshal(line, &f) == nil {
			if _, ok := defaultPolicy.Select(pipeline.Record{Fields: pipeline.FieldsOf(f)}); ok {
				selected++
			}
		}
		prefilterAgrees(t, line)
	}
	if selected == 0 {
		t.Fatal("the generator produced no candidates: the test proves nothing")
	}
}

// referenceRead is the reader's definition, one line at a time with the
// exact checks: the fast path must give the same records and counts.
func referenceRead(input string, maxLine int) (recs []pipeline.Record, lines, corrupt int64) {
	var offset int64
	for len(input) > 0 {
		raw, rest, complete := strings.Cut(input, "\n")
		size := int64(len(raw) + 1)
		if !complete {
			if len(raw) > maxLine+1 { // over the cap already: it is corrupt however it ends
				lines++
				corrupt++
			}
			break // otherwise an unfinished last line is left for next time
		}
		input = rest
		lines++
		line := trimNewline([]byte(raw))
		decode, reason := checkLine(line, size, maxLine, defaultPrefilter, &region{})
		var fields pipeline.Fields
		if decode {
			fields, reason = DecodeObject(line)
		}
		switch {
		case reason != "":
			corrupt++
		case decode:
			recs = append(recs, pipeline.Record{Line: lines, Offset: offset, End: offset + size, Fields: fields})
		}
		offset += size
	}
	return recs, lines, corrupt
}

func checkFastPathAgrees(t *testing.T, input string, maxLine int) {
	t.Helper()
	want, lines, corrupt := referenceRead(input, maxLine)
	got, stats := readAll(t, input, ReadConfig{Prefilter: true, MaxLine: maxLine})
	if stats.Lines.Load() != lines || stats.Corrupt.Load() != corrupt {
		t.Fatalf("fast path: %d lines, %d corrupt; reference: %d, %d\ninput %q",
			stats.Lines.Load(), stats.Corrupt.Load(), lines, corrupt, input)
	}
	if len(got) != len(want) {
		t.Fatalf("fast path decoded %d records, reference %d\ninput %q", len(got), len(want), input)
	}
	for i := range got {
		if got[i].Line != want[i].Line || got[i].Offset != want[i].Offset || got[i].End != want[i].End ||
			fmt.Sprint(got[i].Fields) != fmt.Sprint(want[i].Fields) {
			t.Fatalf("record %d: fast %+v, reference %+v", i, got[i], want[i])
		}
	}
}

// FuzzFastPathAgrees feeds arbitrary logs to the reader: whatever the fast
// path skips, the line-by-line reference must also skip.
func FuzzFastPathAgrees(f *testing.F) {
	for _, s := range []string{
		`{"level":"error","event":"a"}` + "\n" + `{"event":"b"}` + "\n",
		strings.Repeat(`{"event":"x","level":"info","n":1}`+"\n", 40) + `{"event":"y","will_retry" : false}` + "\n",
		"{\"a\":1}\n\n   \n[1]\n{\"a\":\"\xff\"}\n{\"trunc\n{\"ok\":1}\r\n",
		strings.Repeat(`{"event":"pad"}`+"\n", 30) + `{"x":"` + strings.Repeat("y", 300) + `"}` + "\n",
		`{"e":"\u0065rror"}` + "\n" + `{"level":"\u0065rror"}` + "\n",
	} {
		f.Add([]byte(s), uint16(200))
	}
	f.Fuzz(func(t *testing.T, b []byte, maxLine uint16) {
		checkFastPathAgrees(t, string(b), 16+int(maxLine%1024))
	})
}

func TestFastPathAgreesOnGeneratedLogs(t *testing.T) {
	var buf strings.Builder
	if _, err := eventlog.Generate(&buf, eventlog.Options{Lines: 20000, Seed: 3, CorruptRate: 0.01, FailureRate: 0.02}); err != nil {
		t.Fatal(err)
	}
	input := buf.String()
	checkFastPathAgrees(t, input, DefaultMaxLine)
	checkFastPathAgrees(t, input, 300) // small cap: long clean spans, many over-long lines
	_, stats := readAll(t, input, ReadConfig{Prefilter: true})
	if stats.Corrupt.Load() == 0 || stats.Skipped.Load() < stats.Lines.Load()/2 {
		t.Fatalf("the generated log exercised nothing: %d corrupt, %d skipped of %d",
			stats.Corrupt.Load(), stats.Skipped.Load(), stats.Lines.Load())
	}
}

// A stream much larger than the buffer, arriving in small reads, with a
// line over the cap spanning several reads.
func TestReadStreamsInConstantMemory(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&b, `{"event":"e%d","level":"info"}`+"\n", i)
		if i == 1500 {
			b.WriteString(`{"x":"` + strings.Repeat("z", 5000) + `"}` + "\n")
		}
	}
	b.WriteString(`{"event":"last","level":"error"}` + "\n")
	var stats ReadStats
	r := pipeline.New(context.Background())
	var got []pipeline.Record
	src := NewRead(ReadConfig{Source: iotest.OneByteReader(strings.NewReader(b.String())), Prefilter: true, MaxLine: 1000}, &stats)
	pipeline.Into(r, pipeline.From(r, src), func(_ context.Context, rec pipeline.Record) error {
		got = append(got, rec)
		return nil
	})
	if err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Line != 3002 || stats.Corrupt.Load() != 1 || stats.Lines.Load() != 3002 ||
		stats.End.Load() != int64(b.Len()) {
		t.Fatalf("records %+v; lines %d, corrupt %d, end %d of %d", got, stats.Lines.Load(), stats.Corrupt.Load(),
			stats.End.Load(), b.Len())
	}
	if !strings.Contains(stats.Examples[0], "line 1502") {
		t.Errorf("the over-long line is reported as %q", stats.Examples[0])
	}
}

// BenchmarkRead measures the reader alone over a generated the-loop log in
// memory: go test -run '^$' -bench BenchmarkRead ./logread
func BenchmarkRead(b *testing.B) {
	var buf bytes.Buffer
	if _, err := eventlog.Generate(&buf, eventlog.Options{Lines: 200000, Seed: 7}); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	for _, bc := range []struct {
		name string
		cfg  func() ReadConfig
	}{
		{"prefilter", func() ReadConfig { return ReadConfig{Prefilter: true} }},
		// What a scan runs: healing successes picked out.
		{"as-scanned", func() ReadConfig {
			return ReadConfig{Prefilter: true, Heal: NewHealFilter(DefaultPolicy(), nil)}
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				var stats ReadStats
				cfg := bc.cfg()
				cfg.Source = bytes.NewReader(data)
				r := pipeline.New(context.Background())
				pipeline.Into(r, pipeline.From(r, NewRead(cfg, &stats)),
					func(context.Context, pipeline.Record) error { return nil })
				if err := r.Wait(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Success lines are decoded only when they can heal a retried failure read
// before them: the one for work item 3 (retried) is, the others are not.
func TestReadDecodesOnlySuccessLinesThatCanHeal(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 500; i++ {
		fmt.Fprintf(&b, `{"event":"queue.tick","level":"info","n":%d}`+"\n", i)
		if i == 10 {
			b.WriteString(`{"event":"dispatch.failed","level":"error","will_retry":true,"work_item":"w3"}` + "\n")
		}
		if i%100 == 50 {
			fmt.Fprintf(&b, `{"event":"dispatch.succeeded","level":"info","work_item":"w%d"}`+"\n", i/100+1)
		}
	}
	got, _ := readAll(t, b.String(), ReadConfig{Prefilter: true, Heal: NewHealFilter(DefaultPolicy(), nil)})
	var events []string
	for _, r := range got {
		events = append(events, r.Str("event")+" "+r.Str("work_item"))
	}
	if strings.Join(events, ",") != "dispatch.failed w3,dispatch.succeeded w3" {
		t.Fatalf("decoded %v, want the failure and the one success that heals it", events)
	}
}

// A pino service's retries heal and its give-ups count like the-loop's:
// the retry flag is the policy's will_retry in every preset, and the
// reader reads a pino line's event (its msg) and ids from its bytes, so
// only the success that heals the retried failure is decoded.
func TestAPinoServicesRetriesHealAndItsGiveUpsCount(t *testing.T) {
	f, err := NewFormat("pino", Mapping{})
	if err != nil {
		t.Fatal(err)
	}
	line := func(level int, msg, rest string) string {
		return fmt.Sprintf(`{"level":%d,"time":1793523601046,"pid":2811,"hostname":"api-1","name":"api",%s"msg":%q}`+"\n", level, rest, msg)
	}
	var b strings.Builder
	b.WriteString(line(50, "charge.failed", `"reqId":"r1","err":{"type":"Error","message":"timeout"},"will_retry":true,`))
	for i := 0; i < 200; i++ {
		b.WriteString(line(30, "github.api.succeeded", fmt.Sprintf(`"reqId":"q%d",`, i)))
		b.WriteString(line(30, "charge.succeeded", fmt.Sprintf(`"reqId":"other-%d",`, i)))
	}
	b.WriteString(line(30, "charge.succeeded", `"reqId":"r1",`))
	b.WriteString(line(40, "charge.failed", `"reqId":"r3","err":{"message":"timeout"},"will_retry":false,`))
	got, _ := readAll(t, b.String(), ReadConfig{Prefilter: true, Format: f, Heal: NewHealFilter(DefaultPolicy(), f)})
	var seen []string
	for _, r := range got {
		reason, _ := DefaultPolicy().Select(r)
		seen = append(seen, fmt.Sprintf("%s %s %s", r.Str(KeyEvent), r.Fields.Get("reqId"), reason))
	}
	if want := "charge.failed r1 level:error|charge.succeeded r1 |charge.failed r3 give-up"; strings.Join(seen, "|") != want {
		t.Errorf("read %q, want %q", strings.Join(seen, "|"), want)
	}
}

// A key written last (pino's msg) is read back from the line's end only
// when it is the top-level object's last member, a plain string with no
// spaces around its colon; anything else is left to the search.
func TestKeyFinderReadsOnlyAPlainLastMemberBackFromTheEnd(t *testing.T) {
	k := keyFinder{finder: newFinder([]byte(`"msg"`))}
	for _, c := range []struct{ line, want string }{
		{`{"level":30,"reqId":"r1","msg":"charge.succeeded"}`, "charge.succeeded"},
		{`{"msg":""}`, ""},
		{`{"level":30,"msg":"say \"hi\""}`, "-"},            // an escaped quote
		{`{"msg":"real","err":{"msg":"x.succeeded"}}`, "-"}, // nested, not last
		{`{"level":30,"msg" : "spaced"}`, "-"},
		{`{"level":30,"msg":"a","tag":"charge.succeeded"}`, "-"}, // another key is last
		{`{"xmsg":"a"}`, "-"},
		{`{"\"msg":"0"}`, "-"}, // inside another key
		{`{"level":30,"msg":42}`, "-"},
		{`"}`, "-"},
	} {
		v, ok := k.lastMember([]byte(c.line))
		if got := map[bool]string{true: string(v), false: "-"}[ok]; got != c.want {
			t.Errorf("lastMember(%s) = %q, want %q", c.line, got, c.want)
		}
	}
}

// What lastMember reads from a valid line is the value encoding/json gives
// its top-level key (escapes aside: a value holding one is decoded anyway;
// a line of invalid UTF-8 never reaches the heal filter).
func FuzzLastMemberIsTheDecodedValue(f *testing.F) {
	f.Add([]byte(`{"level":30,"msg":"charge.succeeded"}`))
	f.Add([]byte(`{"msg":"real","err":{"msg":"x.succeeded"}}`))
	f.Add([]byte(`{"a":"\"msg\":\"b","msg":"c"}`))
	f.Add([]byte(`{"msg":"a","msg":"b"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		k := keyFinder{finder: newFinder([]byte(`"msg"`))}
		v, ok := k.lastMember(line)
		var rec map[string]any
		if !ok || !utf8.Valid(line) || bytes.IndexByte(v, '\\') >= 0 || json.Unmarshal(line, &rec) != nil {
			return
		}
		if got, _ := rec["msg"].(string); got != string(v) {
			t.Fatalf("lastMember(%s) = %q, encoding/json gives msg %q", line, v, got)
		}
	})
}

// A success is an event of a named family whose last part is a success
// suffix, read alike from a line's bytes and from a decoded record.
func TestSuccessFamilyIsTheEventLessItsLastPart(t *testing.T) {
	suffixes := DefaultPolicy().SuccessSuffixes
	for _, c := range []struct{ event, fam string }{
		{"dispatch.succeeded", "dispatch"},
		{"github.api.completed", "github.api"},
		{"a.b.success", "a.b"},
		{"succeeded", "-"},  // no family
		{".succeeded", "-"}, // an empty family
		{"dispatch.unsucceeded", "-"},
		{"dispatch.succeeded.retry", "-"},
		{"dispatch.failed", "-"},
	} {
		fam, ok := successFamily(c.event, suffixes)
		famB, okB := successFamily([]byte(c.event), suffixes)
		if got := map[bool]string{true: fam, false: "-"}[ok]; got != c.fam || ok != okB || string(famB) != fam {
			t.Errorf("successFamily(%q) = %q (bytes: %q, %v), want %q", c.event, got, famB, okB, c.fam)
		}
	}
	if _, ok := successFamily("x.a.b", []string{"a.b"}); ok {
		t.Error("a suffix holding a dot matched: an event's last part never holds one")
	}
}

// healedBy runs the healing check over records as dedup would.
func healedBy(records []pipeline.Record, f *Format) map[string]int {
	cfg := DefaultPolicy()
	h := NewHealing(cfg, f)
	for _, r := range records {
		if _, ok := defaultPolicy.Select(r); ok {
			// Any stable identity per defect will do: the event and error text.
			h.Failure(r, r.Str("event")+"|"+r.Str("error"))
		} else if cfg.IsSuccess(r, f) {
			h.Success(r)
		}
	}
	return h.healed
}

// TestHealFilterHidesNoHealingSuccess: the reader skips success lines that
// heal nothing; healing computed from its output must equal healing computed
// from every line decoded — in the-loop's lines, and in pino's with the keys
// of each line in another order, the event in msg and the error an object
// (the heal filter reads keys where recent lines had them, else searches).
func TestHealFilterHidesNoHealingSuccess(t *testing.T) {
	var buf strings.Builder
	if _, err := eventlog.Generate(&buf, eventlog.Options{Lines: 30000, Seed: 5, Transients: 6, FailureRate: 0.03}); err != nil {
		t.Fatal(err)
	}
	pino, _ := NewFormat("pino", Mapping{})
	for _, c := range []struct {
		format *Format
		log    string
	}{{TheLoop(), buf.String()}, {pino, asShuffledPino(buf.String())}} {
		t.Run(c.format.Name, func(t *testing.T) {
			fast, _ := readAll(t, c.log, ReadConfig{Prefilter: true, Format: c.format, Heal: NewHealFilter(DefaultPolicy(), c.format)})
			full, _ := readAll(t, c.log, ReadConfig{Format: c.format})
			got, want := healedBy(fast, c.format), healedBy(full, c.format)
			total := 0
			for k, n := range want {
				total += n
				if got[k] != n {
					t.Errorf("%s: healed %d through the fast reader, %d with every line decoded", k, got[k], n)
				}
			}
			if total == 0 {
				t.Fatal("the generated log healed nothing: the test proves nothing")
			}
			if len(fast) >= len(full)/2 {
				t.Fatalf("the fast reader decoded %d of %d lines: the heal filter filters nothing", len(fast), len(full))
			}
		})
	}
}

// asShuffledPino rewrites the-loop's lines as pino writes a record (numeric
// level, msg, err object, pid and hostname), each line's keys in a random
// order; a line that is not JSON stays as it is.
func asShuffledPino(log string) string {
	rng := rand.New(rand.NewSource(11))
	levels := map[any]int{"debug": 20, "info": 30, "warning": 40, "error": 50}
	var out strings.Builder
	for _, line := range strings.SplitAfter(log, "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil {
			out.WriteString(line)
			continue
		}
		rec["level"], rec["msg"] = levels[rec["level"]], rec["event"]
		rec["pid"], rec["hostname"] = 4000+rng.Intn(3000), fmt.Sprintf("api-%x-%d", rng.Intn(1<<20), rng.Intn(9))
		if e, ok := rec["error"].(string); ok {
			rec["err"] = map[string]any{"type": "Error", "message": e, "stack": "Error: " + e + "\n    at run (/srv/app/run.js:1:2)"}
		}
		delete(rec, "event")
		delete(rec, "error")
		delete(rec, "ts")
		keys := make([]string, 0, len(rec))
		for k := range rec {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		out.WriteByte('{')
		for i, k := range keys {
			kb, _ := json.Marshal(k)
			vb, _ := json.Marshal(rec[k])
			if i > 0 {
				out.WriteByte(',')
			}
			out.Write(kb)
			out.WriteByte(':')
			out.Write(vb)
		}
		out.WriteString("}\n")
	}
	return out.String()
}

// A finder, whatever byte its sample anchors it on, finds what
// bytes.Index finds.
func FuzzFinderAgreesWithIndex(f *testing.F) {
	f.Add([]byte(`{"event":"x","work_item":"a/b#1"}`), []byte(`"work_item"`), []byte(`"work_item"`))
	f.Add([]byte(strings.Repeat("k_k_", 20)+`"work_item"`), []byte(`"work_item"`), []byte("k_"))
	f.Add([]byte("aaaa"), []byte("a"), []byte(""))
	f.Fuzz(func(t *testing.T, b, needle, sample []byte) {
		if len(needle) == 0 {
			return
		}
		fd := newFinder(needle)
		fd.tune(byteFreq(sample), len(sample))
		if got, want := fd.index(b), bytes.Index(b, needle); got != want {
			t.Fatalf("finder (anchor %d) = %d, bytes.Index %d", fd.anchor, got, want)
		}
	})
}

// The per-family counts that let the heal filter rule out a success line
// follow the pending failures exactly: evicted or healed, a family with none
// left is dropped, so its successes are not decoded and the map stays
// bounded.
func TestHealFilterFamilyCountsFollowEvictionAndHealing(t *testing.T) {
	cfg := DefaultPolicy()
	cfg.MaxPending = 2
	h := NewHealFilter(cfg, nil)
	for i, fam := range []string{"alpha", "beta", "gamma"} {
		h.noteRaw([]byte(fmt.Sprintf(`{"event":"%s.failed","level":"error","will_retry":true,"work_item":"w%d"}`, fam, i)))
	}
	success := func(fam string, i int) bool {
		line := []byte(fmt.Sprintf(`{"event":"%s.succeeded","level":"info","work_item":"w%d"}`, fam, i))
		return h.wants(line)
	}
	if len(h.families) != 2 || h.families[h.familyID([]byte("alpha"))] != 0 {
		t.Fatalf("families %v, want beta and gamma (alpha evicted by the bound of 2)", h.families)
	}
	if success("alpha", 0) {
		t.Fatal("a success of the evicted failure's family was wanted")
	}
	if !success("gamma", 2) {
		t.Fatal("the success healing gamma's pending failure was not wanted")
	}
	if success("gamma", 2) {
		t.Fatal("a second success for an already healed failure was wanted")
	}
	if len(h.families) != 1 || h.families[h.familyID([]byte("beta"))] != 1 {
		t.Fatalf("families %v, want only beta left", h.families)
	}
	// familyBusy follows families becoming idle and busy again.
	if h.familyBusy([]byte("gamma")) || h.familyBusy([]byte("alpha")) || !h.familyBusy([]byte("beta")) {
		t.Fatal("familyBusy disagrees with the counts after eviction and healing")
	}
	h.noteRaw([]byte(`{"event":"gamma.failed","level":"error","will_retry":true,"work_item":"w9"}`))
	if !h.familyBusy([]byte("gamma")) || !success("gamma", 9) || h.familyBusy([]byte("gamma")) {
		t.Fatal("familyBusy did not follow gamma becoming busy, then idle, again")
	}
}

// The mapped buffer a scanner passes (NewReadBuffer) reads a log exactly as
// the reader's own does, also when it is reused: nothing read points into it.
func TestReadThroughAMappedBufferReadsTheSame(t *testing.T) {
	var b strings.Builder
	if _, err := eventlog.Generate(&b, eventlog.Options{Lines: 30000, Seed: 5, CorruptRate: 0.01, FailureRate: 0.05}); err != nil {
		t.Fatal(err)
	}
	owner := new(int)
	buf := NewReadBuffer(owner)
	if len(buf) < ReadBufferSize(0) {
		t.Fatalf("NewReadBuffer: %d bytes, the reader needs %d", len(buf), ReadBufferSize(0))
	}
	want, _ := readAll(t, b.String(), ReadConfig{Prefilter: true})
	first, _ := readAll(t, b.String(), ReadConfig{Prefilter: true, Buffer: buf})
	again, _ := readAll(t, b.String(), ReadConfig{Prefilter: true, Buffer: buf})
	if len(want) == 0 || fmt.Sprint(first) != fmt.Sprint(want) || fmt.Sprint(again) != fmt.Sprint(want) {
		t.Fatalf("read %d records through the mapped buffer (%d the second time), %d through the reader's own",
			len(first), len(again), len(want))
	}
	runtime.KeepAlive(owner)
}

// The heal filter's Bloom filter may let through an id that is not pending
// (the map then says no) but never hides one that is, across evictions,
// heals and the rebuilds they cause; and it does rule most others out.
func TestHealFilterIDFilterNeverHidesAPendingID(t *testing.T) {
	cfg := DefaultPolicy()
	cfg.MaxPending = 3000
	h := NewHealFilter(cfg, nil)
	id := func(i int) uint64 { return correlationID(&h.ids, "dispatch", "delivery_id", fmt.Sprintf("d-%d", i)) }
	fam := []byte("dispatch")
	// Some ids stay pending from the start, then many come and go (healed,
	// as wants does, or evicted), so the filter is rebuilt under them.
	for i := 0; i < 1000; i++ {
		h.remember(fam, id(i))
	}
	for i := 1000; i < 1000+3*staleIDs; i++ {
		h.remember(fam, id(i))
		if i%2 == 0 {
			h.pending.delete(id(i))
			h.forget(id(i), h.familyID(fam))
		}
	}
	if len(h.pending.m) < 1000 {
		t.Fatalf("%d pending", len(h.pending.m))
	}
	for live := range h.pending.m {
		if !h.filter.mayHold(live) {
			t.Fatalf("pending id %x ruled out", live)
		}
	}
	passed := 0
	for i := 0; i < 10000; i++ {
		if h.filter.mayHold(correlationID(&h.ids, "dispatch", "delivery_id", fmt.Sprintf("other-%d", i))) {
			passed++
		}
	}
	if passed > 1000 {
		t.Fatalf("%d of 10000 ids never pending passed the filter", passed)
	}
}

// The reader holds a region's records back and sends them together (in
// batches of maxBatch when there are more): in a log of nothing but
// failures every record still arrives, once, in order, with its own line
// number and offsets.
func TestReadSendsEveryRecordOfAFailureOnlyRegionInOrder(t *testing.T) {
	var b strings.Builder
	n := 3*maxBatch + 7
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `{"event":"dispatch.failed","level":"error","error":"boom %d"}`+"\n", i)
	}
	got, stats := readAll(t, b.String(), ReadConfig{Prefilter: true})
	if len(got) != n || stats.Lines.Load() != int64(n) {
		t.Fatalf("%d records of %d lines, want %d", len(got), stats.Lines.Load(), n)
	}
	var offset int64
	for i, r := range got {
		if r.Line != int64(i+1) || r.Offset != offset || r.Str("error") != fmt.Sprintf("boom %d", i+1) {
			t.Fatalf("record %d: line %d offset %d error %q", i, r.Line, r.Offset, r.Str("error"))
		}
		offset = r.End
	}
}

// defaultPrefilter is the default policy's prefilter over the-loop's lines.
var defaultPrefilter = NewPrefilter(DefaultPolicy(), TheLoop())
