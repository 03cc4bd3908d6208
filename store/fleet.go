package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"
)

// The fleet: deployments sharing one store (PostgreSQL) coordinate through
// two kinds of row (migrations/00002_fleet.sql).
//
//   - A claim says which deployment works a fingerprint. It is taken before
//     the agent runs and held until the outcome commits, so a defect seen by
//     every deployment at once has one agent run and one create fleet-wide.
//     It carries a lease: a holder that dies stops renewing and, once the
//     lease has passed, another deployment takes the claim over. Leases are
//     compared on the deployments' own clocks, so a fleet needs its clocks
//     roughly in step (NTP): a lease of minutes tolerates seconds of skew.
//   - A reservation spends a budget (the daily issue cap, the diagnosis
//     budget, the agent cost budget). Reservers of one budget are serialised
//     on its row, so the count a reserver sees is the count it extends: N
//     racers for the last of a cap get exactly one grant.
//
// On SQLite the same tables make one deployment's reservations and claims
// as durable as its outcomes; its write transactions already serialise.

// Querier is what a query runs on: the database or a transaction.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Fleet is one deployment's handle on the fleet-wide claims and budgets.
type Fleet struct {
	db         *DB
	deployment string
	holder     string
}

// NewFleet returns deployment's handle; its holder id is the deployment,
// this process's pid and a random token, so two processes of one
// deployment (a watcher and a manual run) never mistake each other's
// claims for their own.
func NewFleet(db *DB, deployment string) *Fleet {
	return &Fleet{db: db, deployment: deployment, holder: fmt.Sprintf("%s/%d/%s", deployment, os.Getpid(), randomToken())}
}

// Holder is this process's holder id.
func (f *Fleet) Holder() string { return f.holder }

// Deployment is the deployment id the fleet handle was made for.
func (f *Fleet) Deployment() string { return f.deployment }

// DB is the database the fleet handle uses.
func (f *Fleet) DB() *DB { return f.db }

func randomToken() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Claim takes fingerprint fp for lease from now, in one statement: a new
// claim is inserted; an expired one (its holder died or gave up) is taken
// over; one this deployment already has is taken as it is — by this
// process (extended), or by an earlier process of the same deployment,
// which is dead or done: a deployment's scans hold its state lock, so no
// two of them run at once. granted is false while another deployment's
// live holder has it.
func (f *Fleet) Claim(ctx context.Context, fp string, lease time.Duration, now time.Time) (granted bool, err error) {
	res, err := f.db.SQL.ExecContext(ctx, f.db.Rebind(`
		INSERT INTO claims (fingerprint, holder, deployment, claimed_ms, expires_ms)
		VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (fingerprint) DO UPDATE SET
			holder = excluded.holder, deployment = excluded.deployment,
			claimed_ms = excluded.claimed_ms, expires_ms = excluded.expires_ms
		WHERE claims.expires_ms <= excluded.claimed_ms OR claims.deployment = excluded.deployment`),
		fp, f.holder, f.deployment, ms(now), ms(now.Add(lease)))
	if err != nil {
		return false, f.wrap("claim "+fp, err)
	}
	return affected(res)
}

// Renew extends this holder's claim on fp to lease from now. false: the
// claim is no longer ours (it expired and another deployment took it over),
// and whatever we were doing for fp must not be filed.
func (f *Fleet) Renew(ctx context.Context, fp string, lease time.Duration, now time.Time) (bool, error) {
	res, err := f.db.SQL.ExecContext(ctx, f.db.Rebind(
		`UPDATE claims SET expires_ms = ? WHERE fingerprint = ? AND holder = ?`),
		ms(now.Add(lease)), fp, f.holder)
	if err != nil {
		return false, f.wrap("renew claim "+fp, err)
	}
	return affected(res)
}

// Release gives up this holder's claim on fp, on q: pass the transaction
// that commits fp's outcome so the claim ends exactly when the outcome is
// durable (a crash in between leaves the claim to expire, never an outcome
// without its claim having been held).
func (f *Fleet) Release(ctx context.Context, q Querier, fp string) error {
	_, err := q.ExecContext(ctx, f.db.Rebind(`DELETE FROM claims WHERE fingerprint = ? AND holder = ?`), fp, f.holder)
	return f.wrap("release claim "+fp, err)
}

// ClaimInfo is who holds a claim, for messages.
type ClaimInfo struct {
	Holder, Deployment string
	Expires            time.Time
}

// ClaimOf reads fp's claim; ok is false when nobody claims it.
func (f *Fleet) ClaimOf(ctx context.Context, fp string) (c ClaimInfo, ok bool, err error) {
	var exp int64
	err = f.db.SQL.QueryRowContext(ctx, f.db.Rebind(`SELECT holder, deployment, expires_ms FROM claims WHERE fingerprint = ?`), fp).
		Scan(&c.Holder, &c.Deployment, &exp)
	if errors.Is(err, sql.ErrNoRows) {
		return c, false, nil
	}
	if err != nil {
		return c, false, f.wrap("read claim "+fp, err)
	}
	c.Expires = time.UnixMilli(exp).UTC()
	return c, true, nil
}

// Budget names a fleet-wide budget (a row of the budgets table).
type Budget string

const (
	BudgetIssues    Budget = "issues"    // issues created in the window: selfDiagnosis.maxIssuesPerDay
	BudgetDiagnoses Budget = "diagnoses" // agent runs in the window: selfDiagnosis.maxDiagnosesPerDay
	BudgetCost      Budget = "cost"      // agent spend in the window, micro-USD: selfDiagnosis.maxAgentCostPerDay
)

// Spend is one reservation of a budget.
type Spend struct {
	Budget      Budget
	Key         string // unique per spend (an intent's id, a run's token); empty: a random one
	Fingerprint string
	Amount      int64 // 1 for an issue or a run; micro-USD for cost (may be settled later)
	// OncePerWindow: the fingerprint has at most one reservation of the
	// budget in the window; reserving again (a create resumed after a
	// crash, its intent's reservation committed with it) is granted on the
	// one that stands and counts nothing more.
	OncePerWindow bool
}

// ReserveTx reserves s on tx if the budget has room: its use (the sum of
// the amounts reserved in the window before now) is below limit. The
// budget's row is locked first (FOR UPDATE on PostgreSQL; a SQLite write
// transaction holds the database's write lock from BEGIN), so reservers
// of one budget run one at a time and exactly limit racers win a budget
// of limit. The reservation commits or rolls back with tx: put it in the
// transaction that records what it pays for (a post's intent).
func (f *Fleet) ReserveTx(ctx context.Context, tx *sql.Tx, s Spend, limit int64, window time.Duration, now time.Time) (key string, granted bool, err error) {
	if s.Key == "" {
		s.Key = string(s.Budget) + ":" + s.Fingerprint + ":" + randomToken()
	}
	if err := f.lockBudget(ctx, tx, s.Budget); err != nil {
		return "", false, err
	}
	if s.OncePerWindow {
		var id string
		err := tx.QueryRowContext(ctx, f.db.Rebind(`SELECT id FROM reservations WHERE budget = ? AND fingerprint = ? AND at_ms >= ? LIMIT 1`),
			string(s.Budget), s.Fingerprint, ms(now.Add(-window))).Scan(&id)
		if err == nil {
			return id, true, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return "", false, f.wrap("reserve "+string(s.Budget), err)
		}
	}
	used, err := f.used(ctx, tx, s.Budget, window, now)
	if err != nil {
		return "", false, err
	}
	if used >= limit {
		return "", false, nil
	}
	_, err = tx.ExecContext(ctx, f.db.Rebind(`
		INSERT INTO reservations (id, budget, fingerprint, holder, deployment, at_ms, amount)
		VALUES (?, ?, ?, ?, ?, ?, ?)`),
		s.Key, string(s.Budget), s.Fingerprint, f.holder, f.deployment, ms(now), s.Amount)
	if err != nil {
		return "", false, f.wrap("reserve "+string(s.Budget), err)
	}
	return s.Key, true, nil
}

// Reserve is ReserveTx in a transaction of its own.
func (f *Fleet) Reserve(ctx context.Context, s Spend, limit int64, window time.Duration, now time.Time) (key string, granted bool, err error) {
	err = f.db.Tx(ctx, func(tx *sql.Tx) error {
		key, granted, err = f.ReserveTx(ctx, tx, s, limit, window, now)
		return err
	})
	return key, granted, err
}

// Charge records a spend that is not limited (an agent's cost once known)
// on q, at now. A duplicate key is charged once.
func (f *Fleet) Charge(ctx context.Context, q Querier, s Spend, now time.Time) error {
	if s.Key == "" {
		s.Key = string(s.Budget) + ":" + s.Fingerprint + ":" + randomToken()
	}
	_, err := q.ExecContext(ctx, f.db.Rebind(`
		INSERT INTO reservations (id, budget, fingerprint, holder, deployment, at_ms, amount)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`),
		s.Key, string(s.Budget), s.Fingerprint, f.holder, f.deployment, ms(now), s.Amount)
	return f.wrap("charge "+string(s.Budget), err)
}

// Unreserve cancels the reservation key on q: what it paid for definitely
// did not happen (a create GitHub refused, an agent run an outage stopped
// before it could spend). A reservation whose outcome is unknown stays: a
// cap that counts one too many for a day is safe, one that counts too few
// is not.
func (f *Fleet) Unreserve(ctx context.Context, q Querier, key string) error {
	_, err := q.ExecContext(ctx, f.db.Rebind(`DELETE FROM reservations WHERE id = ?`), key)
	return f.wrap("unreserve", err)
}

// Used is budget b's use in the window before now, fleet-wide.
func (f *Fleet) Used(ctx context.Context, b Budget, window time.Duration, now time.Time) (int64, error) {
	return f.used(ctx, f.db.SQL, b, window, now)
}

func (f *Fleet) used(ctx context.Context, q Querier, b Budget, window time.Duration, now time.Time) (int64, error) {
	var used int64
	// No upper bound: a racer whose clock read a moment later may have
	// committed a reservation stamped after our now, and it counts.
	err := q.QueryRowContext(ctx, f.db.Rebind(
		`SELECT COALESCE(SUM(amount), 0) FROM reservations WHERE budget = ? AND at_ms >= ?`),
		string(b), ms(now.Add(-window))).Scan(&used)
	if err != nil {
		return 0, f.wrap("count "+string(b), err)
	}
	return used, nil
}

func (f *Fleet) lockBudget(ctx context.Context, tx *sql.Tx, b Budget) error {
	if f.db.Dialect != DialectPostgres {
		return nil // SQLite: the transaction began IMMEDIATE, the write lock is ours
	}
	var name string
	err := tx.QueryRowContext(ctx, `SELECT name FROM budgets WHERE name = $1 FOR UPDATE`, string(b)).Scan(&name)
	if errors.Is(err, sql.ErrNoRows) {
		return f.wrap("lock budget", fmt.Errorf("no budget %q in the schema", b))
	}
	return f.wrap("lock budget "+string(b), err)
}

// IssueSpend is one issue of the daily cap for fp: once per window, so a
// create resumed after a crash is not counted twice.
func IssueSpend(fp string) Spend {
	return Spend{Budget: BudgetIssues, Fingerprint: fp, Amount: 1, OncePerWindow: true}
}

// ReserveIssue reserves one issue of the fleet-wide daily cap for fp in a
// transaction of its own; ok is false when cap issues were already
// reserved in the window. The key names the reservation for ReleaseIssue.
func (f *Fleet) ReserveIssue(ctx context.Context, fp string, cap int, window time.Duration, now time.Time) (key string, ok bool, err error) {
	return f.Reserve(ctx, IssueSpend(fp), int64(cap), window, now)
}

// ReleaseIssue returns a reserved issue whose create definitely did not
// happen.
func (f *Fleet) ReleaseIssue(ctx context.Context, key string) error {
	return f.Unreserve(ctx, f.db.SQL, key)
}

// Prune deletes reservations older than keep before now and claims expired
// before it: the budgets only ever look back one window.
func (f *Fleet) Prune(ctx context.Context, keep time.Duration, now time.Time) error {
	cut := ms(now.Add(-keep))
	if _, err := f.db.SQL.ExecContext(ctx, f.db.Rebind(`DELETE FROM reservations WHERE at_ms < ?`), cut); err != nil {
		return f.wrap("prune reservations", err)
	}
	_, err := f.db.SQL.ExecContext(ctx, f.db.Rebind(`DELETE FROM claims WHERE expires_ms < ?`), cut)
	return f.wrap("prune claims", err)
}

func affected(res sql.Result) (bool, error) {
	n, err := res.RowsAffected()
	return n == 1, err
}

// wrap makes err a StoreError naming the store and what was being done;
// nil stays nil.
func (f *Fleet) wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	var se *StoreError
	if errors.As(err, &se) {
		return err
	}
	return &StoreError{f.db.name, fmt.Errorf("%s: %w", what, err)}
}
