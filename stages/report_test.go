package stages

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/the-loop/the-loop-diagnose/fakes/eventlog"
	"github.com/the-loop/the-loop-diagnose/logread"
	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/redact"
	"github.com/the-loop/the-loop-diagnose/stages/group"
	"github.com/the-loop/the-loop-diagnose/stages/issue"
	"github.com/the-loop/the-loop-diagnose/store"
)

var testScrubber = redact.New(redact.Options{User: "alice", Home: "/home/alice", Host: "build-7.corp.example"})

func sampleGroup() pipeline.Group {
	g := pipeline.Group{Fingerprint: "v2:0123456789abcdef", Event: "dispatch.failed", Template: "claude exited <n>", Verdict: pipeline.VerdictNew}
	for i := int64(1); i <= 3; i++ {
		o := occ(i, g.Fingerprint, g.Event)
		o.Fields.Set("level", "error")
		o.Fields.Set("error", "claude exited 1: password=hunter2 while reading /home/alice/work/x")
		o.Fields.Set("work_item", "acme/secret-project#42")
		o.Fields.Set("cwd", "/home/alice/secret-project")
		o.Fields.Set("delivery_id", "d-123")
		o.Fields.Set("exit_code", 1.0)
		group.Add(&g, o, GroupSamples)
	}
	return g
}

func TestDossierHoldsOnlyAllowListedScrubbedFields(t *testing.T) {
	md := BuildDossier(sampleGroup(), testScrubber, DossierMaxChars)
	for _, leak := range []string{"secret-project", "d-123", "hunter2", "alice", "work_item", "cwd", "delivery_id"} {
		if strings.Contains(md, leak) {
			t.Errorf("dossier leaks %q:\n%s", leak, md)
		}
	}
	for _, want := range []string{`"exit_code":1`, `"event":"dispatch.failed"`, "Occurrences: 3"} {
		if !strings.Contains(md, want) {
			t.Errorf("dossier lacks %q:\n%s", want, md)
		}
	}
	if strings.Index(md, `"line":3`) > strings.Index(md, `"line":1`) {
		t.Errorf("records are not newest first:\n%s", md)
	}
}

// Over its cap the dossier quotes fewer sample records, saying how many of
// how many; the error is cut at MaxErrorChars with a note.
func TestDossierStaysWithinItsSizeCap(t *testing.T) {
	g := sampleGroup()
	for i := range g.Samples {
		g.Samples[i].Fields.Set("error", strings.Repeat("e", 5000))
		g.Samples[i].Fields.Set("source", strings.Repeat("s", 300))
	}
	full := BuildDossier(g, testScrubber, DossierMaxChars)
	md := BuildDossier(g, testScrubber, 1500)
	if n := utf8.RuneCountInString(md); n > 1500 || n >= utf8.RuneCountInString(full) {
		t.Fatalf("dossier of %d characters for a cap of 1500 (uncapped %d):\n%s", n, utf8.RuneCountInString(full), md)
	}
	if !strings.Contains(full, "Sample records (3 of 3") || !strings.Contains(md, "Sample records (1 of 3") {
		t.Fatalf("want 3 samples uncapped and the newest only within the cap:\n%s", md)
	}
	if !strings.Contains(md, "[... 4200 more characters cut]") {
		t.Fatal("long error text not cut at MaxErrorChars with a note")
	}
}

func TestDossierFenceCannotBeClosedByTheError(t *testing.T) {
	g := sampleGroup()
	g.Samples[2].Fields.Set("error", "```\n## Injected heading\n```")
	md := BuildDossier(g, testScrubber, DossierMaxChars)
	if strings.Contains(md, "\n## Injected heading") && !strings.Contains(md, "````") {
		t.Fatalf("backticks in an error broke out of the fence:\n%s", md)
	}
}

func composeFinding(a pipeline.Answer) pipeline.Finding {
	d := pipeline.Dossier{Group: sampleGroup(), Markdown: BuildDossier(sampleGroup(), testScrubber, DossierMaxChars), Environment: Environment("1.0")}
	return pipeline.Finding{Dossier: d, Answer: &a}
}

func TestComposeScrubsDefangsAndMarks(t *testing.T) {
	f := composeFinding(pipeline.Answer{
		Title:        "the-loop stop on token ghp_" + strings.Repeat("A1b2", 9) + "\nsecond line" + strings.Repeat(" long", 40),
		Summary:      "Run `the-loop execute` again; mail alice@example.com",
		RootCause:    "password=hunter2 was rejected",
		SuggestedFix: "add a retry",
	})
	cfg := ComposeConfig{Scrubber: testScrubber, Keywords: []string{"deploy now"}, Repo: "o/r", Label: "the-loop: self-diagnosed"}
	title, body := Compose(f, cfg)
	if !strings.HasPrefix(title, issue.TitlePrefix) || len([]rune(title)) > issue.MaxTitleChars || strings.Contains(title, "\n") {
		t.Errorf("title %q: want prefix, one line, at most %d chars", title, issue.MaxTitleChars)
	}
	for _, leak := range []string{"ghp_", "hunter2", "alice@example.com", "the-loop stop", "the-loop execute"} {
		if strings.Contains(title+body, leak) {
			t.Errorf("issue still holds %q:\n%s\n%s", leak, title, body)
		}
	}
	for _, section := range []string{"## Summary", "## Root cause", "## Suggested fix", "## Evidence", "## Environment", "Intended label: `the-loop: self-diagnosed`"} {
		if !strings.Contains(body, section) {
			t.Errorf("body lacks %q", section)
		}
	}
	if !strings.Contains(body, issue.FingerprintMarker("v2:0123456789abcdef")) {
		t.Error("body lacks the hidden fingerprint marker")
	}
	if !strings.HasSuffix(strings.TrimSpace(body), issue.SelfAuthoredMarker) {
		t.Error("body does not end with the self-authored marker")
	}
}

func TestComposePassesFailuresThroughUncomposed(t *testing.T) {
	f := pipeline.Finding{Dossier: pipeline.Dossier{Group: sampleGroup()}, Failure: "agent answer is not JSON"}
	got, _ := pipeline.Collect(context.Background(), NewCompose(ComposeConfig{Scrubber: testScrubber}), f)
	if len(got) != 1 || got[0].Body != "" {
		t.Fatalf("a failed finding must never be composed: %+v", got)
	}
	o, done := OutcomeWithoutPost(got[0])
	if !done || o.Status != pipeline.StatusFailed || o.Error == "" {
		t.Fatalf("OutcomeWithoutPost = %+v", o)
	}
}

// A defect whose agent answers no finding is abandoned at its maxRetries-th
// failed run, as the-loop abandons it: each was a paid run. Post failures
// (the kept answer retried, at no cost) abandon only once they span a day:
// three within an hour (one bad hour of GitHub's) keep it in the backlog.
// Either way the abandoned defect keeps its backlog entry for `retry`.
func TestPersistCountsFailuresThenAbandons(t *testing.T) {
	st := store.NewState()
	o := pipeline.Outcome{Status: pipeline.StatusFailed, Error: "agent answer is not JSON"}
	o.Fingerprint, o.Markdown = "fp", "dossier"
	for i := 1; i <= 3; i++ {
		events := Apply(st, o, now.Add(time.Duration(i)*time.Minute), 3)
		last := events[len(events)-1]
		if last.Type != "diagnosis.failed" || last.Level != "warning" {
			t.Fatalf("attempt %d events = %+v", i, events)
		}
		// Detected once, when the defect is first taken on.
		if detected := len(events) == 2 && events[0].Type == "diagnosis.detected"; detected != (i == 1) {
			t.Fatalf("attempt %d events = %+v", i, events)
		}
		if _, gone := st.Abandoned["fp"]; gone != (i == 3) {
			t.Fatalf("after %d failed agent runs abandoned = %v, want %v", i, gone, i == 3)
		}
	}
	if a := st.Abandoned["fp"]; a.Reason != "agent failed 3 times" || a.Pending == nil || a.Pending.Dossier == "" {
		t.Fatalf("abandoned entry %+v: want the-loop's reason and the backlog entry kept", a)
	}
	if !st.Retry("fp") || st.Deferred["fp"].Dossier == "" || st.Attempts["fp"] != 0 || len(st.Abandoned) != 0 {
		t.Fatalf("retry did not bring the defect back: %+v", st)
	}

	st = store.NewState()
	o.Error, o.Answer = "POST /issues: 422 Validation Failed", &pipeline.Answer{Title: "t"}
	for i := 1; i <= 3; i++ {
		Apply(st, o, now.Add(time.Duration(i)*time.Minute), 3)
	}
	if _, ok := st.Abandoned["fp"]; ok || st.Attempts["fp"] != 3 {
		t.Fatalf("abandoned after 3 post failures within minutes: %+v %+v", st.Abandoned, st.Attempts)
	}
	if _, ok := st.Deferred["fp"]; !ok {
		t.Fatal("a failing defect must stay in the backlog")
	}
	Apply(st, o, now.Add(AbandonAfter+time.Minute), 3)
	a, ok := st.Abandoned["fp"]
	if !ok || a.Reason != "post failed 4 times" {
		t.Fatalf("not abandoned after post failures spanning a day: %+v %+v", st.Attempts, a)
	}
	if _, ok := st.Deferred["fp"]; ok || a.Pending == nil || a.Pending.Dossier == "" || a.Pending.Waited.IsZero() {
		t.Fatalf("an abandoned defect leaves the backlog and keeps its entry (and its wait) for retry: %+v", a)
	}
	if !st.Retry("fp") || st.Deferred["fp"].Dossier == "" || st.Attempts["fp"] != 0 || len(st.Abandoned) != 0 {
		t.Fatalf("retry did not bring the defect back: %+v", st)
	}
	if w := st.Deferred["fp"].Waited; !w.IsZero() {
		t.Fatalf("a retried defect still counts its wait from %v: retention could drop it at once", w)
	}
}

func TestPersistRecordsAFiledIssue(t *testing.T) {
	st := store.NewState()
	st.Attempts["fp"] = 1
	st.Deferred["fp"] = store.Deferred{}
	o := pipeline.Outcome{Status: pipeline.StatusFiled, URL: "https://github.com/o/r/issues/1", Number: 1}
	o.Fingerprint = "fp"
	events := Apply(st, o, now, 3)
	if st.Reported.At("fp").URL != o.URL || len(st.Posted) != 1 || st.Attempts["fp"] != 0 || len(st.Deferred) != 0 {
		t.Fatalf("state after filing: %+v", st)
	}
	if len(events) != 1 || events[0].Type != "diagnosis.posted" {
		t.Fatalf("events = %+v: a retried defect was detected before, so only posted", events)
	}
}

// Only a finding that is to be filed is composed: one the cap deferred (or
// settled, or already known) passes through bare.
func TestComposeOnlyWhatIsToBeFiled(t *testing.T) {
	filed := composeFinding(pipeline.Answer{Title: "queue full", Summary: "s", RootCause: "r", SuggestedFix: "f"})
	filed.Verdict = pipeline.VerdictNew
	deferred := filed
	deferred.Verdict, deferred.Reason = pipeline.VerdictDeferred, "daily issue cap reached"
	got, err := pipeline.Collect(context.Background(), NewCompose(ComposeConfig{Scrubber: testScrubber}), filed, deferred)
	if err != nil || len(got) != 2 {
		t.Fatalf("got %d reports, %v", len(got), err)
	}
	if got[0].Title == "" || got[0].Body == "" {
		t.Fatalf("the finding to be filed was not composed: %+v", got[0])
	}
	if got[1].Title != "" || got[1].Body != "" {
		t.Fatalf("a deferred finding was composed: %q", got[1].Title)
	}
}

// A waiting defect that recurs with its diagnosis cached reuses its saved
// dossier while that is under an hour old, and is built afresh after.
func TestARecurringWaitingDefectReusesAFreshSavedDossier(t *testing.T) {
	g := sampleGroup()
	g.Finding = &pipeline.Answer{Title: "t"}
	g.DossierFile, g.DossierSaved = "saved.md", now
	loads := 0
	cfg := DossierConfig{Scrubber: testScrubber, Now: func() time.Time { return now.Add(30 * time.Minute) },
		Load: func(name string) (string, error) { loads++; return "saved dossier of " + name, nil }}
	got, err := pipeline.Collect(context.Background(), NewDossier(cfg), g)
	if err != nil || len(got) != 1 || got[0].Markdown != "saved dossier of saved.md" || loads != 1 {
		t.Fatalf("within the hour: %d loads, markdown %.60q, %v", loads, got[0].Markdown, err)
	}
	cfg.Now = func() time.Time { return now.Add(dossierRefresh) }
	got, _ = pipeline.Collect(context.Background(), NewDossier(cfg), g)
	if !strings.Contains(got[0].Markdown, g.Fingerprint) || loads != 1 {
		t.Fatalf("after the hour the dossier was not built afresh (%d loads): %.60q", loads, got[0].Markdown)
	}
	g.Finding, g.Verdict = nil, pipeline.VerdictDeferred // deferred again: nothing reads it
	cfg.Now = func() time.Time { return now }
	if got, _ = pipeline.Collect(context.Background(), NewDossier(cfg), g); got[0].Markdown != "" || loads != 1 {
		t.Fatalf("a defect deferred again with a fresh dossier had it loaded or built (%d loads): %.60q", loads, got[0].Markdown)
	}
	g.Verdict = pipeline.VerdictNew // the agent will read it: always fresh
	got, _ = pipeline.Collect(context.Background(), NewDossier(cfg), g)
	if !strings.Contains(got[0].Markdown, g.Fingerprint) || loads != 1 {
		t.Fatalf("a dossier the agent will read came from the saved file: %.60q", got[0].Markdown)
	}
}

// recordWriter writes its JSON objects itself; it must read exactly as
// encoding/json wrote the map it replaced: sorted keys, the same escaping
// (HTML characters, U+2028), numbers, booleans, nulls and nested values.
func TestDossierRecordReadsAsTheMapDid(t *testing.T) {
	var lines []string
	var b strings.Builder
	if _, err := eventlog.Generate(&b, eventlog.Options{Lines: 3000, Seed: 9, FailureRate: 0.3}); err != nil {
		t.Fatal(err)
	}
	lines = append(lines, strings.Split(strings.TrimSpace(b.String()), "\n")...)
	lines = append(lines,
		`{"ts":"<b>&amp;</b>","event":"x\u2028y","level":null,"attempts":1e21,"will_retry":false,"exit_code":-0.5,"error":"a<script>&\u2029"}`,
		`{"source":{"z":1,"a":[true,null,"<"]},"harness":["x"],"via":"","error":""}`,
		`{"gh_event":"日本語 ✓","line":"not this one","cwd":"/home/alice"}`,
	)
	checked := 0
	for _, line := range lines {
		fields, reason := logread.DecodeObject([]byte(line))
		if reason != "" {
			continue
		}
		r := pipeline.Record{Line: 42, Fields: fields}
		id := RecordIdentity(r)
		kept := map[string]any{}
		for _, k := range DossierFields {
			if v, ok := r.Fields.Lookup(k); ok {
				kept[k] = testScrubber.Value(v, id) // objects and arrays as scrubbed text
			}
		}
		if e := r.Str("error"); e != "" {
			kept["error"] = capRunes(testScrubber.ScrubRecord(e, id), MaxErrorChars)
		}
		kept["line"] = r.Line
		want, err := json.Marshal(kept)
		if err != nil {
			t.Fatal(err)
		}
		if got := newRecordWriter(testScrubber).record(r); got != string(want) {
			t.Fatalf("line %s\n got %s\nwant %s", line, got, want)
		}
		checked++
	}
	if checked < 3000 {
		t.Fatalf("only %d lines checked", checked)
	}
}
