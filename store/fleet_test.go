package store

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fleetOf opens n deployments' handles on dsn, each on its own connection
// pool as separate deployments would be.
func fleetOf(t *testing.T, dsn string, n int) []*Fleet {
	t.Helper()
	fs := make([]*Fleet, n)
	for i := range fs {
		fs[i] = NewFleet(mustOpen(t, dsn), fmt.Sprintf("deploy-%d", i))
	}
	return fs
}

// race runs fn for every fleet handle at once (released together) and
// waits for them all.
func race(fl []*Fleet, fn func(i int, f *Fleet)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, f := range fl {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			fn(i, f)
		}()
	}
	close(start)
	wg.Wait()
}

func TestClaimLease(t *testing.T) {
	dialects(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		f := fleetOf(t, dsn, 2)
		a, b := f[0], f[1]
		lease := 10 * time.Minute
		claim := func(fl *Fleet, at time.Time) bool {
			t.Helper()
			ok, err := fl.Claim(ctx, "fp1", lease, at)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		if !claim(a, t0) {
			t.Fatal("first claim not granted")
		}
		if claim(b, t0.Add(time.Minute)) {
			t.Fatal("a second deployment got a live claim")
		}
		if !claim(a, t0.Add(2*time.Minute)) {
			t.Fatal("the holder's own claim again was refused")
		}
		if ok, err := a.Renew(ctx, "fp1", lease, t0.Add(5*time.Minute)); !ok || err != nil {
			t.Fatalf("renew by the holder: %v %v", ok, err)
		}
		// Renewed at +5m: still live at +14m, expired at +15m.
		if claim(b, t0.Add(14*time.Minute)) {
			t.Fatal("a renewed claim was taken over before its lease ran out")
		}
		if !claim(b, t0.Add(15*time.Minute)) {
			t.Fatal("an expired claim was not taken over")
		}
		if ok, _ := a.Renew(ctx, "fp1", lease, t0.Add(16*time.Minute)); ok {
			t.Fatal("the old holder renewed a claim taken over from it")
		}
		c, ok, err := a.ClaimOf(ctx, "fp1")
		if err != nil || !ok || c.Deployment != "deploy-1" || c.Holder != b.Holder() {
			t.Fatalf("ClaimOf = %+v %v %v, want deploy-1's", c, ok, err)
		}
		// The old holder's release does not free the new holder's claim.
		if err := a.Release(ctx, a.DB().SQL, "fp1"); err != nil {
			t.Fatal(err)
		}
		if claim(a, t0.Add(17*time.Minute)) {
			t.Fatal("a release by a former holder freed the current holder's claim")
		}
		if err := b.Release(ctx, b.DB().SQL, "fp1"); err != nil {
			t.Fatal(err)
		}
		if !claim(a, t0.Add(18*time.Minute)) {
			t.Fatal("a released claim was not granted")
		}
		// The deployment's next process (a's died, holding the state lock
		// no more) takes its claim over at once; a's renewals then fail.
		next := NewFleet(a.DB(), a.Deployment())
		if next.Holder() == a.Holder() {
			t.Fatal("two processes share a holder id")
		}
		if ok, err := next.Claim(ctx, "fp1", lease, t0.Add(19*time.Minute)); !ok || err != nil {
			t.Fatalf("the same deployment's next process was refused its own claim: %v %v", ok, err)
		}
		if ok, _ := a.Renew(ctx, "fp1", lease, t0.Add(20*time.Minute)); ok {
			t.Fatal("a dead process renewed the claim its successor took")
		}
		if claim(b, t0.Add(20*time.Minute)) {
			t.Fatal("another deployment got the successor's live claim")
		}
	})
}

// Many deployments claiming one fingerprint at once: exactly one wins, for
// a fresh claim and for the takeover of an expired one.
func TestClaimRaceExactlyOne(t *testing.T) {
	dialects(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		fl := fleetOf(t, dsn, 12)
		for round, at := range []time.Time{t0, t0.Add(time.Hour)} { // round 1: the round-0 winner's lease has expired
			var granted atomic.Int32
			race(fl, func(_ int, f *Fleet) {
				ok, err := f.Claim(ctx, "contended", time.Minute, at)
				if err != nil {
					t.Error(err)
				}
				if ok {
					granted.Add(1)
				}
			})
			if n := granted.Load(); n != 1 {
				t.Fatalf("round %d: %d claims granted, want exactly 1", round, n)
			}
		}
	})
}

// Twenty deployments racing for a cap of five: exactly five issues; one
// unreserved gives exactly one more; the window rolls.
func TestReserveExactlyCap(t *testing.T) {
	dialects(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		fl := fleetOf(t, dsn, 20)
		const cap = 5
		var mu sync.Mutex
		var keys []string
		race(fl, func(i int, f *Fleet) {
			// Clocks read a moment apart: a later racer's reservation counts
			// for an earlier one.
			key, ok, err := f.ReserveIssue(ctx, fmt.Sprintf("fp%d", i), cap, 24*time.Hour, t0.Add(time.Duration(i%7)*time.Millisecond))
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				keys = append(keys, key)
				mu.Unlock()
			}
		})
		if len(keys) != cap {
			t.Fatalf("%d issues reserved against a cap of %d", len(keys), cap)
		}
		if used, err := fl[0].Used(ctx, BudgetIssues, 24*time.Hour, t0); err != nil || used != cap {
			t.Fatalf("Used = %d, %v; want %d", used, err, cap)
		}
		if _, ok, _ := fl[1].ReserveIssue(ctx, "late", cap, 24*time.Hour, t0.Add(time.Hour)); ok {
			t.Fatal("a reservation past the cap was granted")
		}
		// A create resumed after a crash: its fingerprint's reservation
		// stands, granted again without counting again.
		again, ok, err := fl[5].ReserveIssue(ctx, "fp-resumed", cap, 24*time.Hour, t0.Add(time.Hour))
		if ok || err != nil {
			t.Fatalf("an unreserved fingerprint past the cap: %v %v", ok, err)
		}
		var resumedFP string
		if err := fl[0].DB().SQL.QueryRow(fl[0].DB().Rebind("SELECT fingerprint FROM reservations WHERE id = ?"), keys[1]).Scan(&resumedFP); err != nil {
			t.Fatal(err)
		}
		if again, ok, err = fl[6].ReserveIssue(ctx, resumedFP, cap, 24*time.Hour, t0.Add(time.Hour)); !ok || err != nil || again != keys[1] {
			t.Fatalf("the resumed create of %s: %q %v %v; want granted on its reservation %q", resumedFP, again, ok, err, keys[1])
		}
		if err := fl[2].ReleaseIssue(ctx, keys[0]); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := fl[3].ReserveIssue(ctx, "after-release", cap, 24*time.Hour, t0.Add(time.Hour)); !ok {
			t.Fatal("a released issue did not free room in the cap")
		}
		// A day later the first five have rolled out of the window (one,
		// made at +1h, is still in it).
		granted := 0
		for i := 0; i < cap+2; i++ {
			if _, ok, _ := fl[4].ReserveIssue(ctx, fmt.Sprintf("next-%d", i), cap, 24*time.Hour, t0.Add(24*time.Hour+time.Minute)); ok {
				granted++
			}
		}
		if granted != cap-1 {
			t.Fatalf("the next day granted %d, want %d", granted, cap-1)
		}
	})
}

// A reservation made in the caller's transaction rolls back with it.
func TestReserveTxRollsBackWithCaller(t *testing.T) {
	dialects(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		f := fleetOf(t, dsn, 1)[0]
		boom := errors.New("the intent could not be written")
		err := f.DB().Tx(ctx, func(tx *sql.Tx) error {
			if _, ok, err := f.ReserveTx(ctx, tx, Spend{Budget: BudgetIssues, Key: "intent-1", Fingerprint: "fp", Amount: 1}, 1, time.Hour, t0); err != nil || !ok {
				return fmt.Errorf("reserve: %v %v", ok, err)
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatal(err)
		}
		if used, _ := f.Used(ctx, BudgetIssues, time.Hour, t0); used != 0 {
			t.Fatalf("a rolled-back reservation counts: used %d", used)
		}
	})
}

// The cost budget: spends charged after the fact (micro-USD); a reserve
// is refused once the day's spend has reached the limit.
func TestCostBudget(t *testing.T) {
	dialects(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		fl := fleetOf(t, dsn, 2)
		limit := int64(2_000_000) // $2
		key, ok, err := fl[0].Reserve(ctx, Spend{Budget: BudgetCost, Fingerprint: "a"}, limit, 24*time.Hour, t0)
		if err != nil || !ok {
			t.Fatalf("first run refused: %v %v", ok, err)
		}
		// The run cost $1.50: settled by charging under its key's budget.
		if err := fl[0].Charge(ctx, fl[0].DB().SQL, Spend{Budget: BudgetCost, Key: key + ":spent", Fingerprint: "a", Amount: 1_500_000}, t0); err != nil {
			t.Fatal(err)
		}
		if err := fl[0].Charge(ctx, fl[0].DB().SQL, Spend{Budget: BudgetCost, Key: key + ":spent", Fingerprint: "a", Amount: 1_500_000}, t0); err != nil {
			t.Fatal(err) // the same charge again counts once
		}
		if _, ok, _ := fl[1].Reserve(ctx, Spend{Budget: BudgetCost, Fingerprint: "b"}, limit, 24*time.Hour, t0.Add(time.Minute)); !ok {
			t.Fatal("refused with $1.50 of $2 spent")
		}
		if err := fl[1].Charge(ctx, fl[1].DB().SQL, Spend{Budget: BudgetCost, Fingerprint: "b", Amount: 700_000}, t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := fl[0].Reserve(ctx, Spend{Budget: BudgetCost, Fingerprint: "c"}, limit, 24*time.Hour, t0.Add(2*time.Minute)); ok {
			t.Fatal("granted with $2.20 of $2 spent fleet-wide")
		}
		if used, _ := fl[1].Used(ctx, BudgetCost, 24*time.Hour, t0.Add(2*time.Minute)); used != 2_200_000 {
			t.Fatalf("used %d micro-USD, want 2200000", used)
		}
	})
}

// fleetHelper is one deployment process of TestFleetProcessesRace: at the
// agreed instant it claims each fingerprint and, for those it won,
// reserves an issue against the cap; it prints what it was granted.
func fleetHelper() int {
	ctx := context.Background()
	db, err := OpenDB(ctx, os.Getenv("STORE_TEST_FLEET_DSN"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer db.Close()
	f := NewFleet(db, os.Getenv("STORE_TEST_FLEET_DEPLOYMENT"))
	cap, _ := strconv.Atoi(os.Getenv("STORE_TEST_FLEET_CAP"))
	startMS, _ := strconv.ParseInt(os.Getenv("STORE_TEST_FLEET_START_MS"), 10, 64)
	time.Sleep(time.Until(time.UnixMilli(startMS)))
	for _, fp := range strings.Fields(os.Getenv("STORE_TEST_FLEET_FPS")) {
		ok, err := f.Claim(ctx, fp, time.Minute, t0)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if !ok {
			continue
		}
		fmt.Println("claimed", fp)
		_, ok, err = f.ReserveIssue(ctx, fp, cap, 24*time.Hour, t0)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if ok {
			fmt.Println("reserved", fp)
		}
	}
	return 0
}

// Eight deployment processes over one store, the same twenty fingerprints:
// each fingerprint claimed by exactly one process, exactly cap issues
// reserved fleet-wide.
func TestFleetProcessesRace(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 8 processes")
	}
	dialects(t, func(t *testing.T, dsn string) {
		mustOpen(t, dsn) // migrated before the race: the race is the claims'
		var fps []string
		for i := 0; i < 20; i++ {
			fps = append(fps, fmt.Sprintf("fp%02d", i))
		}
		const cap = 7
		start := time.Now().Add(1500 * time.Millisecond).UnixMilli()
		type proc struct {
			cmd *exec.Cmd
			out *bufio.Scanner
			err strings.Builder
		}
		procs := make([]*proc, 8)
		for i := range procs {
			p := &proc{cmd: exec.Command(os.Args[0], "-test.run=^$")}
			p.cmd.Env = append(os.Environ(), "STORE_TEST_FLEET_DSN="+dsn,
				fmt.Sprintf("STORE_TEST_FLEET_DEPLOYMENT=deploy-%d", i),
				fmt.Sprintf("STORE_TEST_FLEET_CAP=%d", cap),
				fmt.Sprintf("STORE_TEST_FLEET_START_MS=%d", start),
				"STORE_TEST_FLEET_FPS="+strings.Join(fps, " "))
			stdout, err := p.cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			p.out = bufio.NewScanner(stdout)
			p.cmd.Stderr = &p.err
			if err := p.cmd.Start(); err != nil {
				t.Fatal(err)
			}
			procs[i] = p
		}
		claimed := map[string]int{}
		reserved := 0
		for i, p := range procs {
			for p.out.Scan() {
				verb, fp, _ := strings.Cut(p.out.Text(), " ")
				switch verb {
				case "claimed":
					claimed[fp]++
				case "reserved":
					reserved++
				}
			}
			if err := p.cmd.Wait(); err != nil {
				t.Fatalf("deployment %d: %v: %s", i, err, p.err.String())
			}
		}
		for _, fp := range fps {
			if claimed[fp] != 1 {
				t.Errorf("%s claimed by %d deployments, want exactly 1", fp, claimed[fp])
			}
		}
		if reserved != cap {
			t.Errorf("%d issues reserved fleet-wide against a cap of %d", reserved, cap)
		}
	})
}
