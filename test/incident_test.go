package test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/the-loop/the-loop-diagnose/fakes/eventlog"
	fakegh "github.com/the-loop/the-loop-diagnose/fakes/github"
)

// giveUp renders a bare give-up: will_retry false, attempts spent, no error.
func giveUp(ts time.Time, event string, extra ...string) string {
	rec := map[string]any{"ts": ts.UTC().Format("2006-01-02T15:04:05.000Z"), "event": event, "level": "warning",
		"source": "webhook", "harness": "claude", "attempts": 3, "will_retry": false}
	for i := 0; i+1 < len(extra); i += 2 {
		rec[extra[i]] = extra[i+1]
	}
	b, _ := json.Marshal(rec)
	return string(b)
}

// replayFingerprints is line → fingerprint from `replay --stage fingerprint`.
func replayFingerprints(t *testing.T, d *deployment) map[int64]string {
	t.Helper()
	res := d.run("replay", "--stage", "fingerprint", "--log", d.log)
	if res.code != 0 {
		t.Fatalf("replay: exit %d\n%s", res.code, res.stderr)
	}
	out := map[int64]string{}
	for _, line := range splitLines(res.stdout) {
		var m struct {
			Line        int64  `json:"line"`
			Fingerprint string `json:"fingerprint"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("replay printed %q", line)
		}
		out[m.Line] = m.Fingerprint
	}
	return out
}

// A give-up that ends an incident shows, in replay, its failure's
// fingerprint, and files no issue of its own; one with nothing before it
// keeps its own.
func TestGiveUpEndingAnIncidentFilesNoIssueOfItsOwn(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{harness: "builtin", maxPerDay: 10})
	wi, deliv := "github:tarnwick/relay-hub#318", "0f3b6c2e-7d41-4a9e-b5c8-63e2d1f0a947"
	d.appendLog(
		failure(t0, "git.fetch.failed", "git fetch origin: exit status 128: fatal: bad object 3e9a1c4", "work_item", wi, "delivery_id", deliv),
		giveUp(t0.Add(3*time.Minute), "dispatch.gave_up", "work_item", wi, "delivery_id", deliv),
		giveUp(t0.Add(4*time.Minute), "dispatch.gave_up", "work_item", "github:tarnwick/relay-hub#9"),
	)
	fps := replayFingerprints(t, d)
	if fps[2] != fps[1] || fps[3] == fps[1] || fps[3] == "" {
		t.Fatalf("replay fingerprints %v: line 2 should be line 1's, line 3 its own", fps)
	}
	d.mustRun("run")
	byFP := fingerprintsOnGitHub(gh)
	if len(byFP) != 2 || len(byFP[fps[1]]) != 1 || len(byFP[fps[3]]) != 1 {
		t.Fatalf("issues by fingerprint %v, want one for the incident and one for the lone give-up", byFP)
	}
}

// A cron run starts from the incident index the previous run left in the
// state: a give-up written after the run that filed its failure joins that
// issue. The state holds no correlation value in clear.
func TestACronRunLinksAGiveUpToThePreviousRunsFailure(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{harness: "builtin", maxPerDay: 10})
	wi, deliv := "github:tarnwick/relay-hub#318", "0f3b6c2e-7d41-4a9e-b5c8-63e2d1f0a947"
	d.appendLog(failure(t0, "git.fetch.failed", "git fetch origin: exit status 128: fatal: bad object 3e9a1c4",
		"work_item", wi, "delivery_id", deliv, "branch", "the-loop/318-relay-fix"))
	d.mustRun("run")
	if n := gh.CountCreates(); n != 1 {
		t.Fatalf("%d issues after the first run, want 1", n)
	}
	raw := d.storeBytes()
	if len(raw) == 0 {
		t.Fatal("no store written")
	}
	for _, private := range []string{"relay-hub", deliv, "the-loop/318-relay-fix"} {
		if strings.Contains(string(raw), private) {
			t.Errorf("the state holds %q in clear", private)
		}
	}
	d.appendLog(giveUp(t0.Add(4*time.Minute), "dispatch.gave_up", "work_item", wi, "delivery_id", deliv, "branch", "the-loop/318-relay-fix"))
	d.mustRun("run")
	if n := gh.CountCreates(); n != 1 {
		t.Fatalf("%d issues: the give-up of the previous run's incident was filed on its own", n)
	}
}

// A watcher keeps its incident index across scans: a give-up in one scan
// links to the failure the previous scan read.
func TestWatcherLinksAGiveUpToThePreviousScansFailure(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{harness: "builtin", maxPerDay: 10})
	wi, deliv := "github:tarnwick/relay-hub#318", "0f3b6c2e-7d41-4a9e-b5c8-63e2d1f0a947"
	d.appendLog(info(t0, "dispatch.started"))
	cmd := d.command("watch")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	d.appendLog(failure(t0.Add(time.Minute), "git.fetch.failed", "git fetch origin: exit status 128: fatal: bad object 3e9a1c4",
		"work_item", wi, "delivery_id", deliv))
	if !eventually(func() bool { return gh.CountCreates() == 1 }) {
		t.Fatalf("the failure was not filed\n%s", stderr.String())
	}
	// The give-up, then an unrelated failure that marks the scan's end.
	d.appendLog(giveUp(t0.Add(4*time.Minute), "dispatch.gave_up", "work_item", wi, "delivery_id", deliv),
		failure(t0.Add(5*time.Minute), "state.save.failed", "rename state.tmp: cross-device link"))
	if !eventually(func() bool { return len(notFiled(gh, "cross-device link")) == 0 }) {
		t.Fatalf("the second failure was not filed\n%s", stderr.String())
	}
	// The scan that filed it read the give-up too: once it has ended, all
	// it would file is filed.
	if !d.scanEnded() {
		t.Fatalf("the scan that filed the second failure never ended\n%s", stderr.String())
	}
	if n := gh.CountCreates(); n != 2 {
		t.Fatalf("%d issues: the give-up was filed on its own instead of joining its incident's", n)
	}
}

// One issue per defect on a log shaped like a real deployment's: files a
// generated log with varied identifiers (eventlog.GenerateDeployment) on the
// fake GitHub and counts the open issues per true defect. Run with -v for
// the figures.
func TestOpenIssuesPerDefectOnADeploymentShapedLog(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		lines int
		seed  int64
		// most is the highest ratio allowed.
		most float64
	}{
		{2000, 3, 1.05},
		{20000, 2, 1.05},
		{20000, 4, 1.05},
		{20000, 5, 1.05},
	} {
		t.Run(fmt.Sprintf("%d-lines-seed-%d", tc.lines, tc.seed), func(t *testing.T) {
			t.Parallel()
			gh := newGitHub(t)
			d := newDeployment(t, gh, bulkDeployOpts)
			defects := fileGeneratedLog(t, d, tc.lines, tc.seed)
			checkIssuesPerDefect(t, gh, defects, tc.most)
		})
	}
}

// Two deployments with their own state, each with its own repositories,
// people and hosts (another seed), file into one repository: a defect the
// first filed is found by the second through the issue's marker, whatever
// variant each saw first.
func TestTwoDeploymentsFileOneIssuePerDefect(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	a, b := newDeployment(t, gh, bulkDeployOpts), newDeployment(t, gh, bulkDeployOpts)
	defects := fileGeneratedLog(t, a, 20000, 6)
	for fp, ids := range fileGeneratedLog(t, b, 20000, 7) {
		if defects[fp] == nil {
			defects[fp] = map[string]bool{}
		}
		for id := range ids {
			defects[fp][id] = true
		}
	}
	checkIssuesPerDefect(t, gh, defects, 1.05)
}

var bulkDeployOpts = deployOpts{harness: "builtin", maxPerDay: 1000,
	extra: "  maxDiagnosesPerScan: 1000\n  maxDiagnosesPerDay: 1000\n"}

// fileGeneratedLog writes a deployment-shaped log for d, runs d over it and
// returns the true defects of each fingerprint the log's failures have
// (replay's, after linking and families).
func fileGeneratedLog(t *testing.T, d *deployment, lines int, seed int64) map[string]map[string]bool {
	t.Helper()
	f, err := os.Create(d.log)
	if err != nil {
		t.Fatal(err)
	}
	truth := map[int64]string{}
	w := bufio.NewWriter(f)
	st, err := eventlog.GenerateDeployment(w, func(line int, id string) { truth[int64(line)] = id },
		eventlog.DeploymentOptions{Lines: lines, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	w.Flush()
	f.Close()
	t.Logf("seed %d, %d lines: %d incidents (%d bare give-ups linked in truth, %d lone, %d interleaved)",
		seed, lines, st.Incidents, st.GiveUps, st.Orphans, st.Interleaved)
	if res := d.run("run"); res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	defectsOf := map[string]map[string]bool{}
	for line, fp := range replayFingerprints(t, d) {
		if id, ok := truth[line]; ok {
			if defectsOf[fp] == nil {
				defectsOf[fp] = map[string]bool{}
			}
			defectsOf[fp][id] = true
		}
	}
	return defectsOf
}

// checkIssuesPerDefect counts the open issues on gh per true defect (by
// each issue's marker) and fails above most, or when an issue names no
// fingerprint of the logs.
func checkIssuesPerDefect(t *testing.T, gh *fakegh.Server, defectsOf map[string]map[string]bool, most float64) {
	t.Helper()
	filed := map[string]int{} // defect → open issues
	var merged []string
	open := 0
	for _, is := range gh.Issues() {
		if is.State != "open" {
			continue
		}
		open++
		var ids map[string]bool
		for _, m := range markersOf(is.Body) {
			if ids = defectsOf[m]; len(ids) > 0 {
				break
			}
		}
		if len(ids) == 0 {
			t.Fatalf("issue #%d names no fingerprint of the logs: %v", is.Number, markersOf(is.Body))
		}
		if len(ids) > 1 {
			merged = append(merged, fmt.Sprint(slices.Sorted(maps.Keys(ids))))
		}
		for id := range ids {
			filed[id]++
		}
	}
	ratio := float64(open) / float64(len(filed))
	var split []string
	for id, n := range filed {
		if n > 1 {
			split = append(split, fmt.Sprintf("%s×%d", id, n))
		}
	}
	slices.Sort(split)
	t.Logf("%d defects reached GitHub in %d open issues: %.3f per defect; split: %v; issues over several defects: %v",
		len(filed), open, ratio, split, merged)
	if ratio > most {
		t.Errorf("%.3f open issues per defect, want <= %.2f", ratio, most)
	}
	for id, n := range filed {
		if n > 1 && strings.HasPrefix(id, "orphan:") {
			t.Errorf("lone give-ups of %s split over %d issues", id, n)
		}
	}
}
