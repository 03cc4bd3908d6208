package stages

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/the-loop/the-loop-diagnose/fakes/eventlog"
	"github.com/the-loop/the-loop-diagnose/fingerprint"
	"github.com/the-loop/the-loop-diagnose/logread"
	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/stages/incident"
	"github.com/the-loop/the-loop-diagnose/store"
)

// buildConfig is a config as cmd makes one: the builtin agent, two runs a
// scan at most.
func buildConfig(t *testing.T) Config {
	t.Helper()
	tri := testTriage()
	fp, err := fingerprint.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return Config{
		Triage: &tri, Format: logread.TheLoop(), Fingerprinter: fp,
		Dedup:     DedupConfig{Policy: Policy{MaxDiagnosesPerScan: 2, MaxDiagnosesPerDay: 20, Triage: tri}},
		Dossier:   DossierConfig{Scrubber: testScrubber, ToolVersion: "test"},
		Agent:     AgentConfig{Harness: "builtin"},
		Gate:      GateConfig{MaxIssuesPerDay: 10, Confidence: tri.Confidence, Preview: true},
		Compose:   ComposeConfig{Scrubber: testScrubber, Repo: "acme/svc", Label: "the-loop"},
		Persist:   PersistConfig{MaxRetries: 3, ToolVersion: "test", Scrub: testScrubber.Scrub},
		Retention: store.DefaultRetention,
	}
}

// buildRead is the read stage over a generated event log with failures.
func buildRead(t *testing.T, stats *logread.ReadStats) pipeline.Source[pipeline.Record] {
	t.Helper()
	var b strings.Builder
	if _, err := eventlog.Generate(&b, eventlog.Options{Lines: 400, Seed: 3, FailureRate: 0.2, Defects: 6}); err != nil {
		t.Fatal(err)
	}
	return logread.NewRead(logread.ReadConfig{Source: strings.NewReader(b.String()), Name: "events.jsonl",
		FinalPartialLine: true, Format: logread.TheLoop()}, stats)
}

func buildNow() time.Time { return time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC) }

// A dry run through the builder: each would-be issue is printed, each
// outcome is observed once it is durable, the agent's answers are kept
// (the ledger), and Finish moves the cursor.
func TestBuildDryRunPrintsObservesAndFinishes(t *testing.T) {
	for _, ledger := range []bool{true, false} {
		t.Run(map[bool]string{true: "ledger", false: "no ledger"}[ledger], func(t *testing.T) { testBuildDryRun(t, ledger) })
	}
}

func testBuildDryRun(t *testing.T, ledger bool) {
	st := store.OpenMemory()
	var stats logread.ReadStats
	var printed strings.Builder
	var observed []pipeline.Outcome
	r := pipeline.New(context.Background())
	scan, err := Build(r, buildRead(t, &stats), buildConfig(t), Deps{
		Store: st, Now: buildNow, Stats: &stats, Incidents: incident.NewIndex(incident.KeysWith(nil), incident.MaxFailures),
		Backlog: true, Ledger: ledger, Print: &printed,
		Observe: func(o pipeline.Outcome) { observed = append(observed, o) },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer scan.Close()
	runErr := scan.Wait()
	cursor := &store.Cursor{Path: "events.jsonl", Offset: stats.End.Load(), Line: stats.Lines.Load()}
	if err := scan.Finish(runErr, cursor); err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, o := range observed {
		if o.AgentRan {
			ran++
		}
	}
	if ran != 2 || scan.Summary.Count(pipeline.StatusDryRun) != 2 || !strings.Contains(printed.String(), "acme/svc") {
		t.Fatalf("%d agent runs, %d dry-run outcomes (want 2 each, the scan's cap); printed:\n%s",
			ran, scan.Summary.Count(pipeline.StatusDryRun), printed.String())
	}
	if scan.Summary.Candidates == 0 || scan.Summary.Lines != 400 {
		t.Fatalf("summary counted %d candidates over %d lines", scan.Summary.Candidates, scan.Summary.Lines)
	}
	st.View(func(s *store.State) {
		if s.Cursor == nil || *s.Cursor != *cursor {
			t.Errorf("cursor %+v after Finish, want %+v", s.Cursor, cursor)
		}
		if len(s.Diagnosed) != 2 {
			t.Errorf("%d runs charged to the daily budget, want 2", len(s.Diagnosed))
		}
		if kept := len(s.Answers); ledger && kept != 2 || !ledger && kept != 0 {
			t.Errorf("%d answers kept with the ledger %v", kept, ledger)
		}
	})
}

// Replay ends where it is told: the dedup stage's groups are the caller's,
// and nothing after them runs (no agent, no state written).
func TestBuildEndsAfterTheStageAsked(t *testing.T) {
	st := store.OpenMemory()
	var stats logread.ReadStats
	r := pipeline.New(context.Background())
	scan, err := Build(r, buildRead(t, &stats), buildConfig(t), Deps{Store: st, Now: buildNow, Stats: &stats, Until: "dedup"})
	if err != nil {
		t.Fatal(err)
	}
	if scan.Dossiers != nil || scan.Findings != nil || scan.Reports != nil {
		t.Fatal("the stages after dedup were built")
	}
	groups := 0
	pipeline.Into(r, scan.Groups, func(context.Context, pipeline.Group) error { groups++; return nil })
	if err := scan.Wait(); err != nil {
		t.Fatal(err)
	}
	if groups == 0 {
		t.Fatal("no groups out of a log with failures")
	}
	st.View(func(s *store.State) {
		if len(s.Diagnosed) != 0 || s.Cursor != nil {
			t.Errorf("replay to dedup ran an agent or moved the cursor: %d runs, cursor %+v", len(s.Diagnosed), s.Cursor)
		}
	})
}

func TestBuildRefusesAnUnknownEndOrNoSink(t *testing.T) {
	for _, d := range []Deps{{Until: "post"}, {}} {
		d.Store, d.Now = store.OpenMemory(), buildNow
		r := pipeline.New(context.Background())
		if _, err := Build(r, func(context.Context, chan<- pipeline.Record) error { return nil }, buildConfig(t), d); err == nil {
			t.Errorf("Build with Until %q and no sink: no error", d.Until)
		}
	}
}
