package stages

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/the-loop/the-loop-diagnose/logread"
	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/store"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func occ(line int64, fp, event string) pipeline.Occurrence {
	return pipeline.Occurrence{
		Candidate: pipeline.Candidate{Record: pipeline.Record{Line: line, Fields: pipeline.FieldsOf(map[string]any{
			"event": event, "ts": now.Add(time.Duration(line) * time.Second).Format(time.RFC3339Nano),
		})}},
		Fingerprint: fp, Template: "tmpl " + fp, Aliases: []string{"legacy-" + fp},
	}
}

// testTriage is the triage the tests decide with (the config's defaults).
func testTriage() TriageConfig {
	return TriageConfig{Policy: logread.DefaultPolicy(), FlakyThreshold: 5, SettleFor: 7 * 24 * time.Hour, Confidence: 0.8}
}

func testPolicy() Policy {
	return Policy{MaxDiagnosesPerScan: 3, MaxDiagnosesPerDay: 20, Backlog: true, Triage: testTriage()}
}

func verdicts(groups []pipeline.Group) map[string]pipeline.Verdict {
	m := map[string]pipeline.Verdict{}
	for _, g := range groups {
		m[g.Fingerprint] = g.Verdict
	}
	return m
}

func TestDedupGroupsAndDecides(t *testing.T) {
	st := store.OpenMemory()
	st.Update(func(s *store.State) error {
		s.Reported.Set("legacy-known", store.Reported{URL: "u"}) // the-loop's own fingerprint
		s.Abandoned["gone"] = store.Abandoned{Reason: "agent kept failing"}
		s.Attempts["tired"] = 3
		return nil
	})
	stage := NewDedup(DedupConfig{Store: st, Now: func() time.Time { return now }, Policy: testPolicy()})
	got, err := pipeline.Collect(context.Background(), stage,
		occ(1, "new", "a"), occ(2, "known", "a"), occ(3, "new", "a"), occ(4, "gone", "a"), occ(5, "tired", "a"))
	if err != nil {
		t.Fatal(err)
	}
	v := verdicts(got)
	want := map[string]pipeline.Verdict{"new": pipeline.VerdictNew, "known": pipeline.VerdictKnown,
		// Failures alone never abandon at dedup: persist abandons on a
		// failure (RetriesExhausted).
		"gone": pipeline.VerdictAbandoned, "tired": pipeline.VerdictNew}
	for fp, w := range want {
		if v[fp] != w {
			t.Errorf("%s: verdict %s, want %s", fp, v[fp], w)
		}
	}
	for _, g := range got {
		if g.Fingerprint == "new" && (g.Count != 2 || g.FirstLine != 1 || g.LastLine != 3 || len(g.Samples) != 2) {
			t.Errorf("group new = count %d lines %d-%d samples %d", g.Count, g.FirstLine, g.LastLine, len(g.Samples))
		}
	}
}

func TestDedupKeepsOnlyTheNewestSamples(t *testing.T) {
	// Counts below, at and past the cap, and past it by a count that is not
	// a multiple of it: the newest GroupSamples, oldest first, whatever the count.
	const k = GroupSamples
	for _, n := range []int64{3, k, 5 * k, 5*k + 3, k + 7} {
		stage := NewDedup(DedupConfig{Store: store.OpenMemory(), Now: func() time.Time { return now }, Policy: testPolicy()})
		var in []pipeline.Occurrence
		for i := int64(1); i <= n; i++ {
			in = append(in, occ(i, "x", "a"))
		}
		got, _ := pipeline.Collect(context.Background(), stage, in...)
		var lines []int64
		for _, s := range got[0].Samples {
			lines = append(lines, s.Line)
		}
		var want []int64
		for i := max(1, n-k+1); i <= n; i++ {
			want = append(want, i)
		}
		if len(got) != 1 || got[0].Count != int(n) || fmt.Sprint(lines) != fmt.Sprint(want) {
			t.Errorf("%d occurrences: count %d, sample lines %v, want %v", n, got[0].Count, lines, want)
		}
	}
}

func TestDiagnosisBudgetDefersTheExcessAndTheBacklogComesBack(t *testing.T) {
	st := store.NewState()
	st.Diagnosed = []time.Time{now.Add(-25 * time.Hour), now.Add(-time.Hour)}
	p := testPolicy()
	p.MaxDiagnosesPerDay = 2
	groups := []pipeline.Group{{Fingerprint: "a", Event: "x", FirstLine: 1}, {Fingerprint: "b", Event: "x", FirstLine: 2}}
	got := verdicts(Decide(groups, st, now, p))
	if got["a"] != pipeline.VerdictNew || got["b"] != pipeline.VerdictDeferred {
		t.Fatalf("with 1 of 2 daily diagnoses used: %v", got)
	}
	// b was deferred; its records now lie behind the cursor.
	st.Deferred["b"] = store.Deferred{Since: now, Event: "x", Count: 1, Dossier: "d"}
	st.Reported.Set("a", store.Reported{})
	later := Decide(nil, st, now.Add(2*time.Hour), p)
	if len(later) != 1 || later[0].Fingerprint != "b" || later[0].Verdict != pipeline.VerdictNew || !later[0].Backlog || later[0].CachedDossier != "d" {
		t.Fatalf("backlog not released: %+v", later)
	}
	p.Backlog = false
	if skipped := Decide(nil, st, now.Add(2*time.Hour), p); len(skipped) != 0 {
		t.Fatalf("without Backlog it still brought back %+v", skipped)
	}
}

func TestACachedFindingNeedsNoDiagnosisBudget(t *testing.T) {
	st := store.NewState()
	st.Deferred["b"] = store.Deferred{Since: now, Event: "x", Count: 1, Finding: []byte(`{"title":"t","summary":"s"}`)}
	p := testPolicy()
	p.MaxDiagnosesPerScan = 0
	got := Decide(nil, st, now, p)
	if len(got) != 1 || got[0].Verdict != pipeline.VerdictNew || got[0].Finding == nil || got[0].Finding.Title != "t" {
		t.Fatalf("a diagnosed backlog defect was held back by the diagnosis budget: %+v", got)
	}
}

func TestFloodOfOneEventTypeCannotStarveAnother(t *testing.T) {
	var groups []pipeline.Group
	for i := 0; i < 40; i++ {
		groups = append(groups, pipeline.Group{Fingerprint: fmt.Sprintf("flood-%d", i), Event: "dispatch.failed", FirstLine: int64(i + 1)})
	}
	groups = append(groups, pipeline.Group{Fingerprint: "lone", Event: "git.push_failed", FirstLine: 41})
	got := verdicts(Decide(groups, store.NewState(), now, testPolicy()))
	if got["lone"] != pipeline.VerdictNew {
		t.Fatalf("the lone defect of another type was deferred behind a flood")
	}
	if got["flood-0"] != pipeline.VerdictNew || got["flood-1"] != pipeline.VerdictNew || got["flood-2"] != pipeline.VerdictDeferred {
		t.Fatalf("flood order (equal counts, no times) not first line first: %v", got)
	}
}

// The cap takes the backlog in the order a maintainer would file it: the
// defect with the most occurrences first, then the most recent; event
// types still take turns.
func TestTheBacklogDrainsMostOccurrencesAndMostRecentFirst(t *testing.T) {
	at := func(h int) time.Time { return now.Add(-time.Duration(h) * time.Hour) }
	groups := []pipeline.Group{
		{Fingerprint: "rare-old", Event: "x", Count: 1, LastSeen: at(900), FirstLine: 1},
		{Fingerprint: "rare-new", Event: "x", Count: 1, LastSeen: at(2), FirstLine: 2},
		{Fingerprint: "common", Event: "x", Count: 50, LastSeen: at(800), FirstLine: 3},
		{Fingerprint: "other", Event: "y", Count: 2, LastSeen: at(700), FirstLine: 4},
	}
	p := testPolicy()
	p.MaxDiagnosesPerScan = 10
	var order []string
	for _, g := range Decide(groups, store.NewState(), now, p) {
		order = append(order, g.Fingerprint)
	}
	if want := "[common other rare-new rare-old]"; fmt.Sprint(order) != want {
		t.Fatalf("order %v, want %s", order, want)
	}
}
