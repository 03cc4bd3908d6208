package budget

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/store"
)

// twoDeployments are two deployments' stores on one database (SQLite here;
// the store's own tests race both engines) and their scans' fleet parts.
func twoDeployments(t *testing.T, maxDiagnoses int) (stores [2]*store.Store, scans [2]*FleetScan) {
	t.Helper()
	dir := t.TempDir()
	dsn := filepath.Join(dir, "fleet.db")
	for i, name := range []string{"a", "b"} {
		st, err := store.OpenDSN(filepath.Join(dir, name, "self-diagnosis.json"), dsn, false)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		stores[i] = st
		scans[i] = NewFleetScan(FleetConfig{Fleet: store.NewFleet(st.DB(), name), Store: st, Lease: time.Minute,
			MaxIssuesPerDay: 3, MaxDiagnosesPerDay: maxDiagnoses})
		t.Cleanup(scans[i].Close)
	}
	return stores, scans
}

func newDossier(fp string) pipeline.Dossier {
	return pipeline.Dossier{Group: pipeline.Group{Fingerprint: fp, Event: "x.failed", Verdict: pipeline.VerdictNew}}
}

// A defect one deployment holds is deferred by the other, naming the
// holder, without a diagnosis reserved; once the holder filed it and let
// go, the other finds it known — though its state had already looked the
// fingerprint up and found nothing.
func TestAdmitDefersAHeldDefectAndKnowsItOnceFiled(t *testing.T) {
	ctx := context.Background()
	stores, scans := twoDeployments(t, 10)
	fp := "v3:0123456789abcdef"
	stores[1].View(func(st *store.State) { st.IsReported(fp) }) // b remembers it as not filed
	d, err := scans[0].Admit(ctx, newDossier(fp))
	if err != nil || d.Verdict != pipeline.VerdictNew {
		t.Fatalf("a's admit: %v %v", d.Verdict, err)
	}
	d, err = scans[1].Admit(ctx, newDossier(fp))
	if err != nil || d.Verdict != pipeline.VerdictDeferred || !strings.Contains(d.Reason, "deployment a") {
		t.Fatalf("b's admit of a's defect: %v %q %v; want deferred naming a", d.Verdict, d.Reason, err)
	}
	if _, diagnoses, _, _ := scans[1].Used(ctx, time.Now()); diagnoses != 1 {
		t.Fatalf("%d diagnoses reserved; want a's one only", diagnoses)
	}
	if err := stores[0].Update(func(st *store.State) error {
		st.Reported.Set(fp, store.Reported{URL: "https://github.com/acme/widgets/issues/1", Number: 1, At: time.Now()})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	o := pipeline.Outcome{Report: pipeline.Report{Finding: pipeline.Finding{Dossier: d, AgentRan: true}}, Status: pipeline.StatusFiled}
	o.Fingerprint = fp
	if err := scans[0].Done(ctx, o); err != nil {
		t.Fatal(err)
	}
	d, err = scans[1].Admit(ctx, newDossier(fp))
	if err != nil || d.Verdict != pipeline.VerdictKnown {
		t.Fatalf("b's admit after a filed it: %v %q %v; want known", d.Verdict, d.Reason, err)
	}
}

// The diagnosis budget is the fleet's; a run that did not happen (the
// agent was down) gives its reservation back.
func TestAdmitReservesTheFleetsDiagnosisBudget(t *testing.T) {
	ctx := context.Background()
	_, scans := twoDeployments(t, 1)
	d, err := scans[0].Admit(ctx, newDossier("v3:aaaaaaaaaaaaaaaa"))
	if err != nil || d.Verdict != pipeline.VerdictNew {
		t.Fatalf("first run refused: %v %v", d.Verdict, err)
	}
	d2, err := scans[1].Admit(ctx, newDossier("v3:bbbbbbbbbbbbbbbb"))
	if err != nil || d2.Verdict != pipeline.VerdictDeferred || !strings.Contains(d2.Reason, "diagnosis budget") {
		t.Fatalf("second deployment's run past a fleet budget of 1: %v %q %v", d2.Verdict, d2.Reason, err)
	}
	o := pipeline.Outcome{Report: pipeline.Report{Finding: pipeline.Finding{Dossier: d}}, Status: pipeline.StatusDeferred}
	if err := scans[0].Done(ctx, o); err != nil { // AgentRan false: the run never happened
		t.Fatal(err)
	}
	d2, err = scans[1].Admit(ctx, newDossier("v3:bbbbbbbbbbbbbbbb"))
	if err != nil || d2.Verdict != pipeline.VerdictNew {
		t.Fatalf("after the refund: %v %q %v; want admitted", d2.Verdict, d2.Reason, err)
	}
}

// A scan that stops after the claim and before the agent started (the
// store failed on the run's charge, a hard stop) gives its diagnosis back:
// an outage charges the fleet nothing. A run that started stays charged.
func TestAScanStoppedBeforeItsRunChargesTheFleetNothing(t *testing.T) {
	ctx := context.Background()
	_, scans := twoDeployments(t, 1)
	if d, err := scans[0].Admit(ctx, newDossier("v3:aaaaaaaaaaaaaaaa")); err != nil || d.Verdict != pipeline.VerdictNew {
		t.Fatalf("first run refused: %v %v", d.Verdict, err)
	}
	scans[0].Close() // no outcome came, and the run never started
	d, err := scans[1].Admit(ctx, newDossier("v3:bbbbbbbbbbbbbbbb"))
	if err != nil || d.Verdict != pipeline.VerdictNew {
		t.Fatalf("after a scan stopped before its run: %v %q %v; want the budget back", d.Verdict, d.Reason, err)
	}
	scans[1].Started("v3:bbbbbbbbbbbbbbbb")
	scans[1].Close() // stopped mid-run: the run may have happened
	d, err = scans[0].Admit(ctx, newDossier("v3:cccccccccccccccc"))
	if err != nil || d.Verdict != pipeline.VerdictDeferred || !strings.Contains(d.Reason, "diagnosis budget") {
		t.Fatalf("after a scan stopped mid-run: %v %q %v; want its run still charged", d.Verdict, d.Reason, err)
	}
}
