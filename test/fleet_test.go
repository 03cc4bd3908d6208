package test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	fakegh "github.com/the-loop/the-loop-diagnose/fakes/github"
	"github.com/the-loop/the-loop-diagnose/store/pgtest"
)

// A fleet: eight deployments of one service, each with its own config,
// state directory and event log, sharing one PostgreSQL store
// (selfDiagnosis.store) and filing into one repository.

const fleetSize = 8

// fleetDefectTexts are twenty distinct defects: an event and an error
// whose variable parts (ids, hosts, ports, durations, pids) differ from
// one deployment and one occurrence to the next, as real ones do.
var fleetDefectTexts = []struct{ event, format string }{
	{"git.failed", "git push failed: exit status 128: remote rejected refs/heads/loop/fix-%[1]d (request %[2]s)"},
	{"queue.failed", "queue full: dropped work item %[2]s after %[1]d attempts"},
	{"worker.crashed", "worker crashed: nil pointer dereference in scheduler.pick (pid %[3]d)"},
	{"dispatch.failed", "dispatch to %[4]s:%[5]d timed out after %[1]ds"},
	{"db.failed", "pq: duplicate key value violates unique constraint \"runs_pkey\" (request %[2]s)"},
	{"cache.failed", "redis: connection pool exhausted on %[4]s (%[1]d waiting)"},
	{"webhook.failed", "webhook signature mismatch for delivery %[2]s"},
	{"render.failed", "template render: undefined variable \"repo\" at line %[1]d"},
	{"auth.failed", "token refresh failed: HTTP 401 from %[4]s"},
	{"lock.failed", "could not acquire run lock held by pid %[3]d for %[1]ds"},
	{"fetch.failed", "fetch of origin failed: connection reset by peer (%[4]s:%[5]d)"},
	{"parse.failed", "config.yaml: yaml: line %[1]d: mapping values are not allowed here"},
	{"upload.failed", "artifact upload failed: 413 Request Entity Too Large (%[1]d bytes)"},
	{"schedule.failed", "cron expression rejected: field day-of-week out of range (job %[2]s)"},
	{"notify.failed", "slack notify failed: channel_not_found (request %[2]s)"},
	{"index.failed", "search index mapping conflict: field \"created_at\" cannot change type (shard %[1]d)"},
	{"merge.failed", "merge conflict in go.sum after rebase onto %[2]s"},
	{"test.failed", "test runner exited with signal SIGKILL after %[1]ds (pid %[3]d)"},
	{"deploy.failed", "rollout stalled: 0 of %[1]d replicas ready on %[4]s"},
	{"metrics.failed", "metrics push rejected: out of order sample for series %[2]s"},
}

// fleetLog renders deployment n's twenty defects, each occurring twice,
// with that deployment's host, pids, request ids and clock.
func fleetLog(n int) []string {
	host := fmt.Sprintf("web-%d.eu-west-%d.internal", n, n%3+1)
	var lines []string
	for occ := 0; occ < 2; occ++ {
		for i, d := range fleetDefectTexts {
			at := t0.Add(time.Duration(n)*37*time.Second + time.Duration(occ*len(fleetDefectTexts)+i)*time.Second)
			req := fmt.Sprintf("%08x%04x", 0x5eed0000+n*7919+i*104729+occ, n*31+i)
			text := fmt.Sprintf(d.format, 3+n+occ+i%5, req, 4000+n*100+i, fmt.Sprintf("10.%d.%d.%d", n, i, 7+occ), 5400+n+i)
			lines = append(lines, failure(at, d.event, text, "host", host, "pid", fmt.Sprint(1200+n*17+occ),
				"request_id", req, "work_item", fmt.Sprintf("acme/svc-%d#%d", n, 40+i)))
		}
	}
	return lines
}

// newFleet makes the fleet's deployments on the store at url.
func newFleet(t *testing.T, gh *fakegh.Server, url string, maxPerDay int, agentDelay time.Duration) []*deployment {
	t.Helper()
	deps := make([]*deployment, fleetSize)
	for i := range deps {
		d := newDeployment(t, gh, deployOpts{maxPerDay: maxPerDay, extra: fmt.Sprintf(
			"  store: %s\n  maxDiagnosesPerScan: 25\n  maxDiagnosesPerDay: 100\n", quote(url))})
		// Each run takes agentDelay: long enough to be killed in.
		d.env = append(d.env, "FAKE_AGENT_RECORD="+filepath.Join(d.dir, "agent-runs.jsonl"), "FAKE_AGENT_DELAY="+agentDelay.String())
		deps[i] = d
	}
	return deps
}

// runsOf counts the runs deployment d's agents recorded.
func runsOf(t *testing.T, d *deployment) int {
	return agentRuns(t, filepath.Join(d.dir, "agent-runs.jsonl"))
}

// scanAll runs a scan of every deployment in deps at once and returns
// their results. The deployments in kill start first and are SIGKILLed
// while their agent runs (the fake sleeps for the delay the dossier
// names), once the others have started too; inFlight is how many runs
// the kills cut short.
func scanAll(t *testing.T, deps []*deployment, kill map[int]bool) (results []result, inFlight int) {
	t.Helper()
	results = make([]result, len(deps))
	cmds := make([]*exec.Cmd, len(deps))
	outs := make([][2]*bytes.Buffer, len(deps))
	before := make([]int, len(deps))
	start := func(i int) {
		d := deps[i]
		cmds[i] = d.command("run")
		outs[i] = [2]*bytes.Buffer{{}, {}}
		cmds[i].Stdout, cmds[i].Stderr = outs[i][0], outs[i][1]
		before[i] = runsOf(t, d)
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	exited := make([]chan struct{}, len(deps))
	wait := func(i int) {
		exited[i] = make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := cmds[i].Wait()
			close(exited[i])
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			results[i] = result{code, outs[i][0].String(), outs[i][1].String()}
		}()
	}
	for i := range deps {
		if kill[i] {
			start(i)
			wait(i)
		}
	}
	// Each deployment to be killed has claimed a defect and its agent is
	// on it before the rest of the fleet starts.
	running := map[int]bool{}
	for i := range deps {
		if !kill[i] {
			continue
		}
		running[i] = within(60*time.Second, 20*time.Millisecond, func() bool {
			return runsOf(t, deps[i]) > before[i] || ended(exited[i])
		}) && !ended(exited[i])
	}
	for i := range deps {
		if !kill[i] {
			start(i)
			wait(i)
		}
	}
	// The others are claiming and diagnosing before the kills: each has
	// run an agent (so it holds a claim of its own and has met the killed
	// deployments' claims) or has ended.
	if len(kill) > 0 {
		for i := range deps {
			if !kill[i] && !within(60*time.Second, 20*time.Millisecond, func() bool {
				return runsOf(t, deps[i]) > before[i] || ended(exited[i])
			}) {
				t.Logf("deployment %d neither ran an agent nor ended before the kills", i)
			}
		}
	}
	for i := range deps {
		if running[i] {
			select {
			case <-exited[i]:
			default:
				if cmds[i].Process.Signal(syscall.SIGKILL) == nil {
					inFlight++
				}
			}
		}
	}
	wg.Wait()
	return results, inFlight
}

// ended reports whether ch is closed: the process it stands for exited.
func ended(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func openFleetDB(t *testing.T, url string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// fleetTally is what the fake GitHub and the fake agents saw.
type fleetTally struct {
	created, open, closed, runs int
}

func tally(t *testing.T, gh *fakegh.Server, deps []*deployment) fleetTally {
	var f fleetTally
	f.created = gh.CountCreates()
	for _, is := range gh.Issues() {
		if is.State == "closed" {
			f.closed++
		} else {
			f.open++
		}
	}
	for _, d := range deps {
		f.runs += runsOf(t, d)
	}
	return f
}

// Eight deployments on one PostgreSQL scan logs with the same twenty new
// defects at once; three are killed while their agent runs; then each
// runs again. Exactly twenty issues are created, none is closed as a twin,
// and the agent ran at most once per defect plus the runs the kills cut
// short.
func TestAFleetOnOnePostgresFilesEachDefectOnce(t *testing.T) {
	t.Parallel()
	url := pgtest.Start(t)
	gh := newGitHub(t)
	deps := newFleet(t, gh, url, 50, 1500*time.Millisecond)
	for i, d := range deps {
		d.appendLog(fleetLog(i)...)
	}
	start := time.Now()
	_, inFlight := scanAll(t, deps, map[int]bool{1: true, 4: true, 6: true})
	first := tally(t, gh, deps)
	t.Logf("first wave (3 of %d killed mid-agent, %d runs in flight): %d issues created, %d agent runs, %s",
		fleetSize, inFlight, first.created, first.runs, time.Since(start).Round(time.Millisecond))
	// The killed deployments run again (their own claims are theirs to
	// take over at once), then every deployment does.
	for _, i := range []int{1, 4, 6} {
		if r := deps[i].run("run"); r.code != 0 {
			t.Logf("rerun of killed deployment %d: exit %d\n%s", i, r.code, r.stderr)
		}
	}
	results, _ := scanAll(t, deps, nil)
	for i, r := range results {
		if r.code != 0 {
			t.Errorf("deployment %d's last scan: exit %d\n%s", i, r.code, r.stderr)
		}
	}
	f := tally(t, gh, deps)
	t.Logf("fleet of %d, 20 defects, 3 killed: %d issues created, %d open, %d closed as twins, %d agent runs (bound %d), %s in all",
		fleetSize, f.created, f.open, f.closed, f.runs, len(fleetDefectTexts)+inFlight, time.Since(start).Round(time.Millisecond))
	if f.created != len(fleetDefectTexts) || f.open != len(fleetDefectTexts) {
		for i, r := range results {
			t.Logf("deployment %d's last scan: exit %d\n%s\n%s", i, r.code, r.stdout, r.stderr)
		}
		t.Errorf("%d issues created, %d open; want exactly %d, one per defect", f.created, f.open, len(fleetDefectTexts))
		dumpFleet(t, url)
	}
	if f.closed != 0 {
		t.Errorf("%d issues closed as twins; want none (a claim makes one create per defect)", f.closed)
	}
	if f.runs > len(fleetDefectTexts)+inFlight {
		t.Errorf("%d agent runs; want at most %d (one per defect, plus the %d the kills cut short)", f.runs, len(fleetDefectTexts)+inFlight, inFlight)
	}
	assertOneIssueEachDefect(t, gh)
}

// assertOneIssueEachDefect: each issue is a different defect (its first
// fingerprint marker), and no defect has two.
func assertOneIssueEachDefect(t *testing.T, gh *fakegh.Server) {
	t.Helper()
	seen := map[string]int{}
	for _, is := range gh.Issues() {
		m := fleetMarkerRE.FindStringSubmatch(is.Body)
		if m == nil {
			t.Errorf("issue #%d has no fingerprint marker", is.Number)
			continue
		}
		seen[m[1]]++
	}
	for fp, n := range seen {
		if n > 1 {
			t.Errorf("%s has %d issues", fp, n)
		}
	}
}

var fleetMarkerRE = regexp.MustCompile(`<!-- the-loop-diagnose fingerprint:(\S+) -->`)

// The daily issue cap is the fleet's: eight deployments with
// maxIssuesPerDay 5 scanning the same twenty defects at once create
// exactly five; the rest are deferred with their diagnoses kept and are
// filed once the day has passed — five more, by whichever deployments get
// there first, with no agent run again.
func TestAFleetsDailyCapIsFleetWide(t *testing.T) {
	t.Parallel()
	url := pgtest.Start(t)
	gh := newGitHub(t)
	deps := newFleet(t, gh, url, 5, 0)
	for i, d := range deps {
		d.appendLog(fleetLog(i)...)
	}
	results, _ := scanAll(t, deps, nil)
	f := tally(t, gh, deps)
	deferred := 0
	for _, r := range results {
		deferred += strings.Count(r.stdout, "daily cap (maxIssuesPerDay: 5) reached")
	}
	t.Logf("day 1, fleet of %d, cap 5: %d issues created, %d cap deferrals told, %d agent runs", fleetSize, f.created, deferred, f.runs)
	if f.created != 5 {
		t.Fatalf("%d issues created across the fleet; want exactly the cap, 5", f.created)
	}
	if deferred == 0 {
		t.Errorf("no deployment told a defect deferred by the cap")
	}
	runsDay1 := f.runs
	// A day passes: the fleet's reservations and each deployment's own
	// record of its posts fall out of the window.
	db := openFleetDB(t, url)
	if _, err := db.ExecContext(context.Background(), `UPDATE reservations SET at_ms = at_ms - 25*3600*1000`); err != nil {
		t.Fatal(err)
	}
	ageLocalPosts(t, db)
	results, _ = scanAll(t, deps, nil)
	f = tally(t, gh, deps)
	t.Logf("day 2: %d issues created in all, %d agent runs in all", f.created, f.runs)
	if f.created != 10 {
		for i, r := range results {
			t.Logf("deployment %d's day-2 scan: exit %d\n%s\n%s", i, r.code, r.stdout, r.stderr)
		}
		dumpFleet(t, url)
		t.Errorf("%d issues created by the end of day 2; want 10 (5 a day)", f.created)
	}
	if f.closed != 0 {
		t.Errorf("%d closed as twins", f.closed)
	}
	if f.runs > len(fleetDefectTexts) {
		t.Errorf("%d agent runs for %d defects (day 1: %d): a deferred diagnosis was run again", f.runs, len(fleetDefectTexts), runsDay1)
	}
	assertOneIssueEachDefect(t, gh)
}

// ageLocalPosts makes each deployment's own record of the issues it filed
// (the posted timestamps the-loop's state keeps) a day older, as the
// fleet's reservations were made.
func ageLocalPosts(t *testing.T, db *sql.DB) {
	t.Helper()
	if _, err := db.ExecContext(context.Background(), `UPDATE meta SET body = '[]' WHERE name = 'posted'`); err != nil {
		t.Fatal(err)
	}
}

func dumpFleet(t *testing.T, url string) {
	db := openFleetDB(t, url)
	for _, q := range []string{"SELECT fingerprint, deployment, holder, expires_ms FROM claims", "SELECT kind, scope, fingerprint, '' FROM entries WHERE kind <> 'answers'", "SELECT fingerprint, url, title, '' FROM reported", "SELECT id, budget, deployment, CAST(at_ms AS TEXT) FROM reservations"} {
		rows, err := db.Query(q)
		if err != nil {
			t.Log(err)
			continue
		}
		for rows.Next() {
			var a, b, c, d string
			rows.Scan(&a, &b, &c, &d)
			t.Logf("%s | %s | %s | %s", a, b, c, d)
		}
		rows.Close()
	}
}

// A store that cannot be reached fails the scan closed: it exits non-zero
// saying the store is unreachable (naming it, never its password), runs no
// agent and files nothing — at the start of the scan, and when PostgreSQL
// goes away while the agent runs.
func TestAnUnreachableStoreFailsTheScanClosed(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	const secret = "hunter2-fleet-pw"
	dead := newDeployment(t, gh, deployOpts{extra: fmt.Sprintf("  store: %s\n",
		quote("postgres://diag:"+secret+"@/fleet?host="+t.TempDir()))})
	dead.env = append(dead.env, "FAKE_AGENT_RECORD="+filepath.Join(dead.dir, "agent-runs.jsonl"))
	dead.appendLog(fleetLog(0)[:3]...)
	r := dead.run("run")
	if r.code == 0 || !strings.Contains(r.stderr, "unreachable") {
		t.Fatalf("scan against an unreachable store: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr+r.stdout, secret) {
		t.Errorf("the store's password was shown:\n%s", r.stderr)
	}
	if n := runsOf(t, dead); n != 0 || gh.CountCreates() != 0 {
		t.Errorf("unreachable store: %d agent runs, %d issues; want none", n, gh.CountCreates())
	}

	c := pgtest.Own(t)
	url, err := c.CreateDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	d := newFleet(t, gh, url, 5, 3*time.Second)[0]
	d.appendLog(fleetLog(1)[:3]...)
	cmd := d.command("run")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// As long as the fleet's first waits: a scan on PostgreSQL starts slowly
	// on a loaded machine.
	if !within(60*time.Second, 20*time.Millisecond, func() bool { return runsOf(t, d) > 0 }) {
		t.Fatal("the agent never started")
	}
	if err := c.Stop(); err != nil { // PostgreSQL goes away mid-run
		t.Fatal(err)
	}
	err = cmd.Wait()
	if err == nil {
		t.Fatalf("the scan succeeded without its store:\n%s\n%s", out.String(), errb.String())
	}
	if gh.CountCreates() != 0 {
		t.Errorf("%d issues filed with the store gone; want none", gh.CountCreates())
	}
	if !strings.Contains(errb.String(), "store ") {
		t.Errorf("the scan does not say the store failed:\n%s", errb.String())
	}
	t.Logf("store gone mid-scan: %v\n%s", err, errb.String())
}
