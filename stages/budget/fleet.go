package budget

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/store"
)

// The fleet: deployments sharing one store (DESIGN.md "A fleet on one
// PostgreSQL"). A scan claims each new defect before it does anything
// costly with it, so a defect every deployment sees has one agent run and
// one create fleet-wide; the daily issue cap and the diagnosis and cost
// budgets are reservations in the shared store. On a store of one's own
// (SQLite) the same calls cost a row each and change nothing.

// FleetConfig configures a scan's part in the fleet.
type FleetConfig struct {
	Fleet *store.Fleet
	Store *store.Store
	Now   func() time.Time
	// Lease is how long a claim lasts unrenewed: a dead holder's claims
	// are taken over that long after its last renewal. It must outlast an
	// agent run (twice the agent timeout).
	Lease              time.Duration
	MaxIssuesPerDay    int
	MaxDiagnosesPerDay int
	MaxAgentCostPerDay float64 // USD; 0: no cap
	// Reuse gives the dossier the answer another deployment kept for it
	// meanwhile, if any (the agent stage's diagnosis cache, reuseAnswer in
	// stages). nil: none is looked for.
	Reuse func(pipeline.Dossier) pipeline.Dossier
	// HeldBack says the gate will defer a defect whatever happens first
	// (GateConfig.HoldsBack): it is not claimed. nil: every one is.
	HeldBack func(pipeline.Dossier) bool
	Log      zerolog.Logger
}

// FleetScan is one scan's claims and reservations. A nil *FleetScan (a
// dry run, a store without a database) coordinates nothing.
type FleetScan struct {
	cfg FleetConfig

	mu   sync.Mutex
	held map[string]string // claimed fingerprint -> its diagnosis reservation ("" none)
	// started are the claimed defects whose agent run was charged and began
	// (Started): only their reservation may have been spent.
	started map[string]bool
	stop    chan struct{}
	closing sync.Once
	done    chan struct{}
}

// NewFleetScan starts a scan's part in the fleet; Close ends it.
func NewFleetScan(cfg FleetConfig) *FleetScan {
	if cfg.Fleet == nil {
		return nil
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	f := &FleetScan{cfg: cfg, held: map[string]string{}, started: map[string]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	go f.renew()
	return f
}

// renew extends the scan's claims every third of a lease while it runs,
// so only a dead holder's claims ever expire.
func (f *FleetScan) renew() {
	defer close(f.done)
	t := time.NewTicker(f.cfg.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-t.C:
		}
		f.mu.Lock()
		fps := make([]string, 0, len(f.held))
		for fp := range f.held {
			fps = append(fps, fp)
		}
		f.mu.Unlock()
		for _, fp := range fps {
			ok, err := f.cfg.Fleet.Renew(context.Background(), fp, f.cfg.Lease, f.cfg.Now())
			if err != nil {
				f.cfg.Log.Warn().Err(err).Str("fingerprint", fp).Msg("could not renew the fleet claim")
			} else if !ok {
				f.cfg.Log.Warn().Str("fingerprint", fp).Msg("the fleet claim was lost (its lease ran out): another deployment may take the defect over")
			}
		}
	}
}

// Close stops renewing and releases the claims whose outcome never came
// (the scan stopped early): they are free at once, not after their lease.
// A diagnosis reserved for a run that never started (the store or the
// scan failed first) goes back to the fleet's budget: an outage charges
// nothing. One whose run started stays charged: it may have happened.
func (f *FleetScan) Close() {
	if f == nil {
		return
	}
	f.closing.Do(func() { close(f.stop) })
	<-f.done
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.cfg.Fleet.DB().SQL
	for fp, diag := range f.held {
		if diag != "" && !f.started[fp] {
			f.cfg.Fleet.Unreserve(context.Background(), q, diag)
		}
		f.cfg.Fleet.Release(context.Background(), q, fp)
		delete(f.held, fp)
	}
}

// Started records that fp's agent run was charged and begins.
func (f *FleetScan) Started(fp string) {
	if f == nil {
		return
	}
	f.mu.Lock()
	f.started[fp] = true
	f.mu.Unlock()
}

// Admit claims d's defect for this deployment, as the agent stage takes
// it up (just in time: a claim taken far ahead of the agent would keep
// the rest of the fleet waiting). A defect another deployment holds is
// deferred here, without an agent run or a charge; its holder files it
// and the next scan knows it from the shared store. A claim granted is
// followed by a fresh look at the shared store — what another deployment
// filed or diagnosed since this scan read its state counts — and, when
// the agent is to run, by the reservation of one run of the fleet-wide
// daily diagnosis budget (the agent cost budget stops runs once the day's
// spend has reached it, as dedup's does).
func (f *FleetScan) Admit(ctx context.Context, d pipeline.Dossier) (pipeline.Dossier, error) {
	if f == nil || d.Verdict != pipeline.VerdictNew || d.Wait != nil || (f.cfg.HeldBack != nil && f.cfg.HeldBack(d)) {
		return d, nil
	}
	fp := d.Fingerprint
	now := f.cfg.Now()
	ok, err := f.cfg.Fleet.Claim(ctx, fp, f.cfg.Lease, now)
	if err != nil {
		return d, err
	}
	if !ok {
		d.Verdict, d.Reason = pipeline.VerdictDeferred, f.heldBy(ctx, fp)
		return d, nil
	}
	f.mu.Lock()
	f.held[fp] = ""
	f.mu.Unlock()
	reported, err := f.cfg.Store.RefreshShared(ctx, append([]string{fp}, d.Aliases...)...)
	if err != nil {
		return d, err
	}
	if reported {
		// Filed by another deployment since this scan read its state.
		d.Verdict, d.Reason = pipeline.VerdictKnown, "filed by another deployment of the fleet"
		return d, nil
	}
	if f.cfg.Reuse != nil {
		d = f.cfg.Reuse(d) // diagnosed by another deployment meanwhile
	}
	if d.Group.Finding != nil { // answered: the agent will not run (the rest of stages.AgentWillRun held on entry)
		return d, nil
	}
	if f.cfg.MaxAgentCostPerDay > 0 {
		spent, err := f.cfg.Fleet.Used(ctx, store.BudgetCost, Window, now)
		if err != nil {
			return d, err
		}
		if usd := float64(spent) / 1e6; usd >= f.cfg.MaxAgentCostPerDay {
			d.Verdict, d.Reason = pipeline.VerdictDeferred, CostReason(usd, f.cfg.MaxAgentCostPerDay, ", fleet-wide")
			return d, nil
		}
	}
	key, ok, err := f.cfg.Fleet.Reserve(ctx, store.Spend{Budget: store.BudgetDiagnoses, Fingerprint: fp, Amount: 1},
		int64(f.cfg.MaxDiagnosesPerDay), Window, now)
	if err != nil {
		return d, err
	}
	if !ok {
		d.Verdict, d.Reason = pipeline.VerdictDeferred, DiagnosesReason+" (fleet-wide)"
		return d, nil
	}
	f.mu.Lock()
	f.held[fp] = key
	f.mu.Unlock()
	return d, nil
}

func (f *FleetScan) heldBy(ctx context.Context, fp string) string {
	c, ok, err := f.cfg.Fleet.ClaimOf(ctx, fp)
	if err != nil || !ok {
		return "another deployment of the fleet is working on it"
	}
	return fmt.Sprintf("deployment %s of the fleet is working on it (its claim runs to %s)", c.Deployment, c.Expires.Format(time.RFC3339))
}

// ReserveIssue reserves, on tx (the one that writes the create's intent),
// one issue of the fleet-wide daily cap for fp. Not granted: the cap is
// reached fleet-wide and the defect is deferred.
func (f *FleetScan) ReserveIssue(ctx context.Context, tx *sql.Tx, fp string, now time.Time) (key string, ok bool, err error) {
	if f == nil {
		return "", true, nil
	}
	return f.cfg.Fleet.ReserveTx(ctx, tx, store.IssueSpend(fp), int64(f.cfg.MaxIssuesPerDay), Window, now)
}

// ReleaseIssue returns a reserved issue whose create definitely did not
// happen.
func (f *FleetScan) ReleaseIssue(ctx context.Context, key string) error {
	if f == nil || key == "" {
		return nil
	}
	return f.cfg.Fleet.Unreserve(ctx, f.cfg.Fleet.DB().SQL, key)
}

// Used is what the fleet spent in the window before now: issues, agent
// runs and USD. A nil scan reports nothing spent.
func (f *FleetScan) Used(ctx context.Context, now time.Time) (issues, diagnoses int, usd float64, err error) {
	if f == nil {
		return 0, 0, 0, nil
	}
	n, err := f.cfg.Fleet.Used(ctx, store.BudgetIssues, Window, now)
	if err != nil {
		return 0, 0, 0, err
	}
	r, err := f.cfg.Fleet.Used(ctx, store.BudgetDiagnoses, Window, now)
	if err != nil {
		return 0, 0, 0, err
	}
	c, err := f.cfg.Fleet.Used(ctx, store.BudgetCost, Window, now)
	if err != nil {
		return 0, 0, 0, err
	}
	return int(n), int(r), float64(c) / 1e6, nil
}

// Done settles fp's part in the fleet once its outcome is durable: a
// diagnosis reserved for a run that did not happen (the agent was down,
// the scan stopped first) is returned, an agent's reported cost is
// charged to the fleet's budget, and the claim is released.
func (f *FleetScan) Done(ctx context.Context, o pipeline.Outcome) error {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	diag, held := f.held[o.Fingerprint]
	f.mu.Unlock()
	q := f.cfg.Fleet.DB().SQL
	if diag != "" && !o.AgentRan {
		if err := f.cfg.Fleet.Unreserve(ctx, q, diag); err != nil {
			return err
		}
	}
	if c := o.Cost; c != nil && c.USD > 0 && !math.IsInf(c.USD, 0) {
		key := ""
		if diag != "" {
			key = diag + ":cost"
		}
		if err := f.cfg.Fleet.Charge(ctx, q, store.Spend{Budget: store.BudgetCost, Key: key, Fingerprint: o.Fingerprint,
			Amount: int64(math.Round(c.USD * 1e6))}, f.cfg.Now()); err != nil {
			return err
		}
	}
	if !held {
		return nil
	}
	if err := f.cfg.Fleet.Release(ctx, q, o.Fingerprint); err != nil {
		return err // still held: Close releases it (and refunds what never ran)
	}
	f.mu.Lock()
	delete(f.held, o.Fingerprint)
	delete(f.started, o.Fingerprint)
	f.mu.Unlock()
	return nil
}
