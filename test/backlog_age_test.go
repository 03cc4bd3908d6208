package test

import (
	"sort"
	"strings"
	"testing"
	"time"

	fakegh "github.com/the-loop/the-loop-diagnose/fakes/github"
)

// historyLog is a log going back four months: 36 defects across three
// event types, each seen in a burst of its own (most of them months ago),
// among info lines up to 20,000 lines in all. Within an event type no two
// messages have the same number of words, so none is taken for a variant
// of another.
func historyLog(now time.Time) (lines []string, defects int) {
	words := strings.Fields(`alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike
		november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu amber basalt cobalt
		dune ember fjord granite harbor iris jasper kelp lagoon marble nectar onyx pumice quartz`)
	events := []string{"job.failed", "webhook.failed", "session.crashed"}
	start := now.AddDate(0, -4, 0)
	type rec struct {
		at   time.Time
		line string
	}
	var recs []rec
	const n = 36
	for i := range n {
		var msg []string
		for j := range 3 + i/3 {
			msg = append(msg, words[(i+5*j)%len(words)])
		}
		at := start.Add(time.Duration(i) * 80 * time.Hour) // the last burst ends ~3 weeks before now
		for j := range 1 + i%4 {
			recs = append(recs, rec{at.Add(time.Duration(j) * time.Hour), failure(at.Add(time.Duration(j)*time.Hour), events[i%3], strings.Join(msg, " ")+" failed")})
		}
	}
	span := now.Add(-time.Hour).Sub(start)
	for k := 0; len(recs) < 20000; k++ {
		at := start.Add(time.Duration(int64(span) / 20000 * int64(k)))
		recs = append(recs, rec{at, info(at, "job.completed")})
	}
	sort.SliceStable(recs, func(a, b int) bool { return recs[a].at.Before(recs[b].at) })
	for _, r := range recs {
		lines = append(lines, r.line)
	}
	return lines, n
}

// A first scan of a log with four months of history, at the default cap of
// 3 issues a day: the cap defers, it never drops. Nothing leaves the
// backlog unfiled, and one scan a day files all 36 within ceil(36/3) = 12
// days, each once.
func TestAFourMonthLogIsFiledAtTheCapsPaceAndNothingIsPruned(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{maxPerDay: 3})
	lines, defects := historyLog(t0)
	d.appendLog(lines...)
	days := (defects + 2) / 3
	for day := range days {
		at := t0.Add(time.Duration(day) * (24*time.Hour + time.Minute))
		res := d.run("run", "--now", at.Format(time.RFC3339))
		if res.code != 0 {
			t.Fatalf("day %d: exit %d\n%s", day, res.code, res.stderr)
		}
		if want := min(3*(day+1), defects); gh.CountCreates() != want {
			t.Fatalf("day %d: %d issues, want %d at the cap's pace\n%s", day, gh.CountCreates(), want, res.stderr)
		}
		if waiting := len(d.stateMap("deferred")); gh.CountCreates()+waiting != defects {
			t.Fatalf("day %d: %d filed + %d waiting, want all %d: some left the backlog unfiled", day, gh.CountCreates(), waiting, defects)
		}
		st := d.run("status", "--now", at.Format(time.RFC3339))
		if strings.Contains(st.stdout, "left the backlog") {
			t.Fatalf("day %d: status reports defects pruned unfiled:\n%s", day, st.stdout)
		}
	}
	if n := len(gh.Issues()); n != defects {
		t.Fatalf("%d issues after %d days, want %d", n, days, defects)
	}
	if waiting := len(d.stateMap("deferred")); waiting != 0 || gh.CountCreates() != defects {
		t.Fatalf("%d creates, %d still waiting, want %d creates and none", gh.CountCreates(), waiting, defects)
	}
	t.Logf("four-month log, %d lines: %d defects filed in %d daily scans, 0 pruned", len(lines), defects, days)
}

// After an outage, defects whose records are older than backlogDays have
// only just begun waiting: none leaves the backlog, the scan after the
// outage files them all.
func TestDefectsWithOldRecordsOutliveAnOutage(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{})
	old := t0.AddDate(0, 0, -40)
	d.appendLog(
		failure(old, "git.failed", "git push failed: exit status 128: remote rejected refs/heads/loop/fix-1"),
		failure(old.Add(time.Second), "queue.failed", "queue full: dropped work item after 3 attempts"),
		failure(old.Add(2*time.Second), "worker.crashed", "worker crashed: nil pointer dereference in scheduler.pick"),
	)
	gh.Inject(fakegh.RouteListIssues, fakegh.ServerError(503))
	if res := d.run("run", "--now", t0.Format(time.RFC3339)); res.code != 1 || !strings.Contains(res.stderr, "waiting for GitHub") {
		t.Fatalf("the outage: exit %d\n%s", res.code, res.stderr)
	}
	if n := len(d.stateMap("deferred")); n != 3 {
		t.Fatalf("%d of 3 defects wait after the outage's scan: the rest left the backlog unfiled", n)
	}
	if res := d.run("run", "--now", t0.Add(time.Hour).Format(time.RFC3339)); res.code != 0 || gh.CountCreates() != 3 {
		t.Fatalf("after the outage: exit %d, %d issues, want 3\n%s", res.code, gh.CountCreates(), res.stderr)
	}
}
