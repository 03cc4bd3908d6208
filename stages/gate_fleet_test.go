package stages

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/stages/budget"
	"github.com/the-loop/the-loop-diagnose/store"
)

// The gate's HoldsBack as the fleet's reservations use it (budget.FleetScan).

// fleetStore is a deployment's store on a database a fleet could share
// (SQLite here; the store's own tests race both engines).
func fleetStore(t *testing.T) *store.Store {
	t.Helper()
	dir := t.TempDir()
	st, err := store.OpenDSN(filepath.Join(dir, "a", "self-diagnosis.json"), filepath.Join(dir, "fleet.db"), false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newDossier(fp string) pipeline.Dossier {
	return pipeline.Dossier{Group: pipeline.Group{Fingerprint: fp, Event: "x.failed", Verdict: pipeline.VerdictNew}}
}

// A defect diagnosed by an earlier scan, whose answer settles nothing,
// takes no claim once this deployment's posts have used the day's issue
// cap: the gate defers it whatever happens, so it is neither run nor
// filed. A watcher re-offered each such backlog defect every scan, at a
// claim and a release (two commits) apiece. With an issue left, or with
// no answer kept, it is claimed as before.
func TestACappedDefectWithAKeptAnswerTakesNoClaim(t *testing.T) {
	ctx := context.Background()
	stores := [1]*store.Store{fleetStore(t)}
	now := time.Now()
	gate := GateConfig{Store: stores[0], Now: func() time.Time { return now }, MaxIssuesPerDay: 2, Confidence: 0.8}
	scan := budget.NewFleetScan(budget.FleetConfig{Fleet: store.NewFleet(stores[0].DB(), "a"), Store: stores[0], Lease: time.Minute,
		MaxIssuesPerDay: 2, MaxDiagnosesPerDay: 10, HeldBack: gate.HoldsBack})
	t.Cleanup(scan.Close)
	answered := func(fp string) pipeline.Dossier {
		d := newDossier(fp)
		d.Group.Finding = &pipeline.Answer{Title: "nil map write in the router", Verdict: "bug"}
		d.Markdown = "dossier of " + fp
		return d
	}
	claimed := func(fp string) bool {
		_, ok, err := store.NewFleet(stores[0].DB(), "a").ClaimOf(ctx, fp)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	post := func() {
		if err := stores[0].Update(func(st *store.State) error { st.Posted = append(st.Posted, now.Add(-time.Hour)); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	post() // one of two issues used

	if d, err := scan.Admit(ctx, answered("v3:1111111111111111")); err != nil || d.Verdict != pipeline.VerdictNew || !claimed("v3:1111111111111111") {
		t.Fatalf("an answered defect with an issue left: %v %v, claimed %v; want admitted and claimed", d.Verdict, err, claimed("v3:1111111111111111"))
	}
	post() // the cap is used
	if gate.HoldsBack(newDossier("v3:2222222222222222")) {
		t.Fatal("a defect without a kept answer is held back; its agent run may settle it")
	}
	if d, err := scan.Admit(ctx, newDossier("v3:2222222222222222")); err != nil || !claimed("v3:2222222222222222") {
		t.Fatalf("a defect to diagnose at the cap: %v %v, not claimed; the agent runs under a claim", d.Verdict, err)
	}
	d, err := scan.Admit(ctx, answered("v3:3333333333333333"))
	if err != nil || d.Verdict != pipeline.VerdictNew || claimed("v3:3333333333333333") {
		t.Fatalf("an answered defect at the cap: %v %v, claimed %v; want passed on unclaimed", d.Verdict, err, claimed("v3:3333333333333333"))
	}
	// An answer that settles the defect is the gate's to apply: not held back.
	conf := 0.95
	settling := answered("v3:4444444444444444")
	settling.Markdown = "The runner logged: connection reset by peer while fetching the index; the retry succeeded."
	settling.Group.Finding = &pipeline.Answer{Title: "a flaky mirror", Verdict: "transient", Confidence: &conf,
		Evidence: []string{"connection reset by peer while fetching the index"}}
	if AgentSettlement(settling.Group.Finding, settling.Markdown, 0.8) == nil || gate.HoldsBack(settling) {
		t.Fatal("a defect its kept answer settles is held back by the cap; the gate settles it")
	}
	// The gate then defers it with the cap's reason.
	in, out := make(chan pipeline.Finding, 1), make(chan pipeline.Finding, 1)
	in <- pipeline.Finding{Dossier: d, Answer: d.Group.Finding}
	close(in)
	if err := NewGate(gate)(ctx, in, out); err != nil {
		t.Fatal(err)
	}
	if f := <-out; f.Verdict != pipeline.VerdictDeferred || f.Reason != CapReason {
		t.Fatalf("the gate gave %v %q; want deferred, %q", f.Verdict, f.Reason, CapReason)
	}
}
