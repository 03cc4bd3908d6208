package test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	fakegh "github.com/the-loop/the-loop-diagnose/fakes/github"
)

// The fault suite: an outage of GitHub or of the agent is never a defect's
// fault. Each scan of an outage exits 1 saying what it waits for, charges
// nothing (no attempt, no diagnosis budget) and abandons nothing; after
// recovery every defect is filed exactly once.

// agentRuns counts the runs the fake agent recorded.
func agentRuns(t *testing.T, record string) int {
	t.Helper()
	b, err := os.ReadFile(record)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// nothingCharged fails when a defect has an attempt counted, is abandoned,
// or the diagnosis budget was spent.
func nothingCharged(t *testing.T, d *deployment, scan int) {
	t.Helper()
	if a := d.stateMap("attempts"); len(a) != 0 {
		t.Fatalf("scan %d: attempts charged during an outage: %v", scan, a)
	}
	if a := d.stateMap("abandoned"); len(a) != 0 {
		t.Fatalf("scan %d: abandoned during an outage: %v", scan, a)
	}
	if b := d.readState()["diagnosed"]; len(b) > 0 && string(b) != "null" && string(b) != "[]" {
		t.Fatalf("scan %d: diagnosis budget spent during an outage: %s", scan, b)
	}
}

func TestAGitHubOutageOfThreeScansLosesNothing(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	record := filepath.Join(t.TempDir(), "runs.jsonl")
	d := newDeployment(t, gh, deployOpts{env: []string{"FAKE_AGENT_RECORD=" + record}})
	d.appendLog(killDefects()...)
	// Each scan's first call (the preflight) meets a 503: no agent runs
	// for an issue that cannot be filed.
	gh.Inject(fakegh.RouteListIssues, fakegh.ServerError(503), fakegh.ServerError(503), fakegh.ServerError(503))
	at := t0.Add(time.Hour)
	for scan := 1; scan <= 3; scan++ {
		res := d.run("run", "--now", at.Format(time.RFC3339))
		if res.code != 1 || !strings.Contains(res.stderr, "waiting for GitHub") {
			t.Fatalf("scan %d: exit %d, want 1 saying it waits for GitHub\n%s", scan, res.code, res.stderr)
		}
		nothingCharged(t, d, scan)
		if n := agentRuns(t, record); n != 0 {
			t.Fatalf("scan %d: %d agent runs while GitHub was down", scan, n)
		}
		at = at.Add(time.Hour)
	}
	if st := d.run("status"); !strings.Contains(st.stdout, "waiting for GitHub") {
		t.Fatalf("status does not say what the defects wait for:\n%s", st.stdout)
	}
	res := d.run("run", "--now", at.Format(time.RFC3339))
	if res.code != 0 || gh.CountCreates() != 3 || len(gh.Issues()) != 3 {
		t.Fatalf("after recovery: exit %d, %d issues, want 3\n%s", res.code, gh.CountCreates(), res.stderr)
	}
	if n := agentRuns(t, record); n != 3 {
		t.Fatalf("%d agent runs, want one per defect", n)
	}
	if o := d.stateMap("outages"); len(o) != 0 {
		t.Fatalf("the outage is still recorded after recovery: %v", o)
	}
}

func TestAnAgentOutageOfThreeScansLosesNothing(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	record := filepath.Join(t.TempDir(), "runs.jsonl")
	// The agent's provider answers "quota exceeded" for three scans.
	d := newDeployment(t, gh, deployOpts{agentMode: "exit", env: []string{"FAKE_AGENT_RECORD=" + record}})
	d.appendLog(killDefects()...)
	at := t0.Add(time.Hour)
	for scan := 1; scan <= 3; scan++ {
		res := d.run("run", "--now", at.Format(time.RFC3339))
		if res.code != 1 || !strings.Contains(res.stderr, "waiting for the agent") || !strings.Contains(res.stderr, "quota exceeded") {
			t.Fatalf("scan %d: exit %d, want 1 saying it waits for the agent\n%s", scan, res.code, res.stderr)
		}
		nothingCharged(t, d, scan)
		// The first failure stops the scan's agent runs.
		if n := agentRuns(t, record); n != scan {
			t.Fatalf("scan %d: %d agent runs in all, want one per scan", scan, n)
		}
		at = at.Add(time.Hour)
	}
	if gh.CountCreates() != 0 {
		t.Fatalf("%d issues filed from a failing agent", gh.CountCreates())
	}
	d.env = append(d.env, "FAKE_AGENT_MODE=valid") // the provider is back
	res := d.run("run", "--now", at.Format(time.RFC3339))
	if res.code != 0 || gh.CountCreates() != 3 {
		t.Fatalf("after recovery: exit %d, %d issues, want 3\n%s", res.code, gh.CountCreates(), res.stderr)
	}
	if a := d.stateMap("abandoned"); len(a) != 0 {
		t.Fatalf("abandoned: %v", a)
	}
}

// A create slower than the client's timeout, which GitHub applies after the
// client gave up (twice in a row if the tool sent it again): never sent
// again while the listing may not show it yet; one open issue.
func TestACreateSlowerThanTheTimeoutFilesOneIssue(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{extra: "  httpTimeoutSeconds: 1\n"})
	d.appendLog(killDefects()[0])
	// GitHub applies the create (and a second one, had it been sent) only
	// once both scans below are over, however slowly they run.
	applied := make(chan struct{})
	var once sync.Once
	apply := func() { once.Do(func() { close(applied) }) }
	t.Cleanup(apply) // before the fake closes: it waits for what it holds
	gh.Inject(fakegh.RouteCreateIssue, fakegh.AppliedWhen(applied), fakegh.AppliedWhen(applied))
	res := d.run("run")
	if res.code != 1 || !strings.Contains(res.stderr, "in doubt") {
		t.Fatalf("exit %d, want 1 with the create in doubt\n%s", res.code, res.stderr)
	}
	// Before GitHub shows it: looked for, not sent again.
	if res = d.run("run"); res.code != 1 {
		t.Fatalf("before the slow create showed: exit %d\n%s", res.code, res.stderr)
	}
	apply()
	// Every create sent is recorded once the fake holds none.
	if !eventually(func() bool { return gh.InFlight() == 0 }) || gh.CountCreates() == 0 {
		t.Fatalf("the slow create never landed on the fake (%d requests still held)", gh.InFlight())
	}
	if n := len(gh.RequestsTo(fakegh.RouteCreateIssue)); n != 1 || gh.CountCreates() != 1 {
		t.Fatalf("%d create requests before the slow create showed, want 1", n)
	}
	// Past the scans' one-minute backoff, within the settle time: found.
	res = d.run("run", "--now", time.Now().Add(2*time.Minute).UTC().Format(time.RFC3339))
	if res.code != 0 || len(gh.RequestsTo(fakegh.RouteCreateIssue)) != 1 {
		t.Fatalf("exit %d, %d create requests\n%s", res.code, len(gh.RequestsTo(fakegh.RouteCreateIssue)), res.stderr)
	}
	open := 0
	for _, is := range gh.Issues() {
		if is.State == "open" {
			open++
		}
	}
	if open != 1 || ownEntries(d, "reported") != 1 || len(d.stateMap("intents")) != 0 {
		t.Fatalf("%d open issues, reported %v, intents %v", open, d.stateMap("reported"), d.stateMap("intents"))
	}
}

// A 429 after GitHub applied the create: the lookup finds it; one issue.
func TestATooManyRequestsAfterAnAppliedCreateFilesOneIssue(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{})
	d.appendLog(killDefects()[0])
	limited := fakegh.ServerErrorAfter(429)
	limited.Header = map[string][]string{"Retry-After": {"1"}}
	gh.Inject(fakegh.RouteCreateIssue, limited)
	res := d.run("run")
	if res.code != 0 || gh.CountCreates() != 1 || len(gh.RequestsTo(fakegh.RouteCreateIssue)) != 1 {
		t.Fatalf("exit %d, %d issues, %d create requests\n%s", res.code, gh.CountCreates(), len(gh.RequestsTo(fakegh.RouteCreateIssue)), res.stderr)
	}
}

// Two open issues carrying one defect's marker (an applied create that was
// sent again by an older version, two deployments at once): the next
// lookup keeps the oldest and closes the other as its duplicate, linked.
func TestAnyLookupSettlesTwins(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{extra: "  httpTimeoutSeconds: 1\n"})
	d.appendLog(killDefects()[0])
	gh.Inject(fakegh.RouteCreateIssue, fakegh.AppliedLate(2500*time.Millisecond))
	if res := d.run("run", "--now", time.Now().UTC().Format(time.RFC3339)); res.code != 1 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	if !eventually(func() bool { return gh.CountCreates() == 1 }) {
		t.Fatal("the slow create never landed")
	}
	// A twin of it, as a second create would have made.
	first, _ := gh.Issue(1)
	gh.AddIssue(fakegh.Issue{Title: first.Title, Body: first.Body, State: "open", Login: first.Login, Labels: first.Labels})
	res := d.run("run", "--now", time.Now().Add(2*time.Minute).UTC().Format(time.RFC3339))
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	twin, _ := gh.Issue(2)
	kept, _ := gh.Issue(1)
	if kept.State != "open" || twin.State != "closed" {
		t.Fatalf("kept #1 %s, twin #2 %s: want the oldest open and the twin closed", kept.State, twin.State)
	}
	comments := gh.Comments(2)
	if len(comments) == 0 || !strings.Contains(comments[len(comments)-1].Body, "#1") {
		t.Fatalf("the twin does not link to the issue kept: %v", comments)
	}
}
