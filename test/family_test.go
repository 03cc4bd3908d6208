package test

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	fakegh "github.com/the-loop/the-loop-diagnose/fakes/github"
	"github.com/the-loop/the-loop-diagnose/fingerprint"
)

// lockHeldBy is one defect whose message names, after "held by", whichever
// job held the lock: a word the normalizer cannot tell from a name, that
// the template memory learns is data once four jobs were seen.
func lockHeldBy(ts time.Time, job string) string {
	return failure(ts, "migrate.failed", "could not acquire the advisory lock held by "+job+" during the schema migration")
}

func openIssues(gh *fakegh.Server) []fakegh.Issue {
	var out []fakegh.Issue
	for _, is := range gh.Issues() {
		if is.State == "open" {
			out = append(out, is)
		}
	}
	return out
}

// Two deployments with their own state file into one repository and see a
// defect's variants in different orders: one in a single scan, the other
// one variant per scan. Each names the defect by its own first-seen
// variant, and both learn the same family pattern, which the issue's marker
// block carries: once the second has learned the family, the issues it
// filed before are closed as duplicates of the first deployment's, with a
// link, and ten scans later one issue is open for the defect.
func TestTwoDeploymentsSeeingVariantsInDifferentOrdersKeepOneIssue(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	opts := deployOpts{harness: "builtin", maxPerDay: 100}
	a, b := newDeployment(t, gh, opts), newDeployment(t, gh, opts)
	jobsA := []string{"scheduler", "janitor", "importer", "exporter", "reindexer", "archiver", "notifier", "mailer", "reaper", "billing"}
	jobsB := []string{"reaper", "indexer", "mailer", "billing", "thumbnailer", "exporter", "uploader", "webhooks", "auditor", "sweeper"}
	var lines []string
	for i, job := range jobsA[:4] {
		lines = append(lines, lockHeldBy(t0.Add(time.Duration(i)*time.Minute), job))
	}
	a.appendLog(lines...)
	a.mustRun("run")
	if n := gh.CountCreates(); n != 1 {
		t.Fatalf("the first deployment saw four variants in one scan and filed %d issues, want 1", n)
	}
	first := gh.Issues()[0]
	if !slices.ContainsFunc(markersOf(first.Body), fingerprint.IsPattern) {
		t.Fatalf("the issue's markers %v carry no family pattern", markersOf(first.Body))
	}
	for scan := 0; scan < 10; scan++ {
		ts := t0.Add(time.Hour + time.Duration(scan)*time.Minute)
		b.appendLog(lockHeldBy(ts, jobsB[scan]))
		b.mustRun("run")
		a.appendLog(lockHeldBy(ts, jobsA[scan]))
		a.mustRun("run")
	}
	open := openIssues(gh)
	if len(open) != 1 || open[0].Number != first.Number {
		var numbers []int
		for _, is := range open {
			numbers = append(numbers, is.Number)
		}
		t.Fatalf("open issues %v after ten scans of each, want only #%d", numbers, first.Number)
	}
	// The second deployment filed one issue per variant until it had seen
	// MemoryThreshold of them; each was closed as a duplicate of the first.
	if n := gh.CountCreates(); n > fingerprint.MemoryThreshold {
		t.Errorf("%d issues created, want at most %d", n, fingerprint.MemoryThreshold)
	}
	for _, is := range gh.Issues() {
		if is.Number == first.Number {
			continue
		}
		if is.StateReason != "not_planned" || len(markersOf(is.Body)) != 0 {
			t.Errorf("#%d: closed %q with markers %v; want closed as not planned, its markers gone", is.Number, is.StateReason, markersOf(is.Body))
		}
		comments := gh.Comments(is.Number)
		if !slices.ContainsFunc(comments, func(c fakegh.Comment) bool {
			return strings.Contains(c.Body, fmt.Sprintf("Duplicate of #%d", first.Number))
		}) {
			t.Errorf("#%d was closed without a comment linking #%d", is.Number, first.Number)
		}
	}
}

// A cron scan over a log holding many variants of one defect files one
// issue, named by the first variant, and later scans seeing new variants
// add occurrences to it: the same issue across ten scans.
func TestADefectsVariantsStayOneIssueAcrossTenScans(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{harness: "builtin", maxPerDay: 100})
	users := []string{"oracle", "postgres", "deploy", "nagios", "ubuntu", "admin", "git", "ftp", "test", "guest", "pi", "jenkins", "mysql", "www"}
	var lines []string
	for i, u := range users[:5] {
		lines = append(lines, failure(t0.Add(time.Duration(i)*time.Second), "ssh.auth.failed",
			fmt.Sprintf("Failed password for %s from 203.0.113.%d port %d ssh2", u, i+7, 40000+i)))
	}
	d.appendLog(lines...)
	d.mustRun("run")
	if n := gh.CountCreates(); n != 1 {
		t.Fatalf("%d issues for five variants seen in one scan, want 1", n)
	}
	number := gh.Issues()[0].Number
	for scan := 0; scan < 10; scan++ {
		d.appendLog(failure(t0.Add(time.Hour+time.Duration(scan)*time.Minute), "ssh.auth.failed",
			fmt.Sprintf("Failed password for %s from 198.51.100.%d port %d ssh2", users[4+scan], scan, 50000+scan)))
		d.mustRun("run")
		if n := gh.CountCreates(); n != 1 {
			t.Fatalf("scan %d filed a new issue for a new variant (%d in all)", scan+1, n)
		}
	}
	if is := gh.Issues()[0]; is.Number != number || is.State != "open" {
		t.Errorf("the defect's issue is #%d %s, want #%d open", is.Number, is.State, number)
	}
}

// A deployment upgraded from the v2 release keeps its state: a defect that
// release filed (its v2 fingerprint in `reported`) is known, one it
// deferred waits under the new name and is filed once, and nothing is
// filed twice.
func TestAStateWrittenByTheV2ReleaseFilesNothingAgain(t *testing.T) {
	t.Parallel()
	stateWrittenByAnOlderRelease(t, "v2:", "store.failed", "open /srv/loop/state/queue.db: database is locked",
		"tmux.failed", "tmux send-keys failed: no server running on /tmp/tmux-1000/default")
}

// The same from the v3 release, for texts whose v4 template differs from
// v3's (a quoted name no code has, a login at a host).
func TestAStateWrittenByTheV3ReleaseFilesNothingAgain(t *testing.T) {
	t.Parallel()
	stateWrittenByAnOlderRelease(t, "v3:", "git.worktree.failed", "git worktree remove '~scratch-area': fatal: not a working tree",
		"queue.claim.failed", "claim rejected: lease owned by deploy@build-07.(none) is newer")
}

// stateWrittenByAnOlderRelease writes a state in which the release of
// prefix ("v2:") filed one defect and deferred another, then runs twice:
// exactly the deferred one is filed, once.
func stateWrittenByAnOlderRelease(t *testing.T, prefix, filedEvent, filedText, deferredEvent, deferredText string) {
	t.Helper()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{harness: "builtin", maxPerDay: 100})
	old := func(event, text string) string {
		r := fingerprint.Compute(fingerprint.Input{Event: event, Error: text})
		for _, a := range r.Aliases {
			if strings.HasPrefix(a, prefix) {
				return a
			}
		}
		t.Fatalf("no %s alias for %q (%s %v): the versions agree, the test proves nothing", prefix, text, r.Fingerprint, r.Aliases)
		return ""
	}
	state := fmt.Sprintf(`{"reported":{%q:{"url":"https://github.com/acme/loop/issues/7","number":7}},"abandoned":{},"attempts":{},"posted":[],
"deferred":{%q:{"since":"2026-11-27T10:00:00Z","event":%q,"template":"earlier template","count":2,"dossier":"earlier records"}}}`,
		old(filedEvent, filedText), old(deferredEvent, deferredText), deferredEvent)
	if err := os.WriteFile(d.state, []byte(state), 0o600); err != nil {
		t.Fatal(err)
	}
	d.appendLog(failure(t0, filedEvent, filedText), failure(t0.Add(time.Second), deferredEvent, deferredText))
	d.mustRun("run")
	if n := gh.CountCreates(); n != 1 {
		t.Fatalf("%d issues created, want 1 (the deferred defect; the filed one is known)", n)
	}
	if got := gh.Issues()[0]; !strings.Contains(got.Body, deferredText[:12]) {
		t.Fatalf("filed %q, want the deferred defect", got.Title)
	}
	if deferred := d.stateMap("deferred"); len(deferred) != 0 {
		t.Errorf("the %s deferral is still pending after its defect was filed: %v", prefix, slices.Sorted(maps.Keys(deferred)))
	}
	d.mustRun("run")
	if n := gh.CountCreates(); n != 1 {
		t.Fatalf("a second scan filed again: %d issues", n)
	}
}
