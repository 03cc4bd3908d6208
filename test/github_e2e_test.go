package test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	fakegh "github.com/the-loop/the-loop-diagnose/fakes/github"
)

var markerRE = regexp.MustCompile(`<!-- the-loop-diagnose fingerprint:(\S+) -->`)

// markerOf is the canonical fingerprint an issue body's hidden markers
// name, or "": the first of the trailing block of marker lines, which is
// where the tool writes it (aliases follow it; a quoted one may precede).
func markerOf(body string) string {
	markers := markersOf(body)
	if len(markers) == 0 {
		return ""
	}
	return markers[0]
}

// markersOf are the fingerprints of the trailing marker block, in order.
func markersOf(body string) []string {
	lines := strings.Split(strings.TrimRight(body, "\n"), "\n")
	var out []string
	for i := len(lines) - 1; i >= 0; i-- {
		line := strings.TrimSpace(lines[i])
		if m := markerRE.FindStringSubmatch(line); m != nil && m[0] == line {
			out = append([]string{m[1]}, out...)
		} else if line != "" && !strings.HasPrefix(line, "<!-- the-loop") {
			break
		}
	}
	return out
}

// expectedFingerprints is what `replay --stage fingerprint` prints for the
// failure records lines, distinct and sorted.
func expectedFingerprints(t *testing.T, lines []string) []string {
	t.Helper()
	d := newDeployment(t, nil, deployOpts{})
	d.appendLog(lines...)
	res := d.run("replay", "--stage", "fingerprint", "--log", d.log)
	if res.code != 0 {
		t.Fatalf("replay: exit %d\n%s", res.code, res.stderr)
	}
	seen := map[string]bool{}
	var fps []string
	for _, line := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
		var rec struct{ Fingerprint string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Fingerprint == "" {
			t.Fatalf("replay printed %q", line)
		}
		if !seen[rec.Fingerprint] {
			seen[rec.Fingerprint] = true
			fps = append(fps, rec.Fingerprint)
		}
	}
	sort.Strings(fps)
	return fps
}

// fingerprintsOnGitHub maps each marker on the fake to its issue numbers.
func fingerprintsOnGitHub(gh *fakegh.Server) map[string][]int {
	out := map[string][]int{}
	for _, is := range gh.Issues() {
		fp := markerOf(is.Body)
		out[fp] = append(out[fp], is.Number)
	}
	return out
}

func TestTwoRunsStartedTogetherOnOneStatePostEachDefectOnce(t *testing.T) {
	t.Parallel()
	want := expectedFingerprints(t, killDefects())
	for _, slowLookup := range []bool{false, true} {
		gh := newGitHub(t)
		oneEnded := make(chan struct{})
		var once sync.Once
		if slowLookup {
			// Stretch the first run so the second surely starts inside it:
			// its first marker lookup is held until the other run has ended,
			// however slowly that one starts.
			gh.Inject(fakegh.RouteListIssues, fakegh.Fault{Before: func() {
				select {
				case <-oneEnded:
				case <-time.After(30 * time.Second):
				}
			}})
		}
		d := newDeployment(t, gh, deployOpts{})
		d.appendLog(killDefects()...)
		var wg sync.WaitGroup
		stderr := make([]bytes.Buffer, 2)
		codes := make([]int, 2)
		for i := range 2 {
			cmd := d.command("run")
			cmd.Stderr = &stderr[i]
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd.Wait()
				codes[i] = cmd.ProcessState.ExitCode()
				once.Do(func() { close(oneEnded) })
			}()
		}
		wg.Wait()
		for i := range 2 {
			if codes[i] != 0 {
				t.Fatalf("run %d exit %d\n%s", i, codes[i], stderr[i].String())
			}
		}
		skipped := 0
		for i := range 2 {
			if strings.Contains(stderr[i].String(), "skipping this scan") {
				skipped++
			}
		}
		on := fingerprintsOnGitHub(gh)
		if gh.CountCreates() != len(want) || len(on) != len(want) {
			t.Fatalf("slow=%v: %d creates for %d defects: %v", slowLookup, gh.CountCreates(), len(want), on)
		}
		for _, fp := range want {
			if len(on[fp]) != 1 {
				t.Fatalf("defect %s has issues %v, want exactly one", fp, on[fp])
			}
		}
		if slowLookup && skipped != 1 {
			t.Errorf("with the first run held up, exactly one run should skip on the lock; %d did:\n%s\n---\n%s",
				skipped, stderr[0].String(), stderr[1].String())
		}
		t.Logf("slow lookup %v: %d of 2 runs skipped on the lock", slowLookup, skipped)
	}
}

// occurrenceRow reads one row of the occurrence comment's table.
func occurrenceRow(body, row string) string {
	for _, line := range strings.Split(body, "\n") {
		if cells := strings.Split(line, "|"); len(cells) >= 3 && strings.TrimSpace(cells[1]) == row {
			return strings.TrimSpace(cells[2])
		}
	}
	return ""
}

func toolVersion(t *testing.T, d *deployment) string {
	res := d.run("version")
	f := strings.Fields(res.stdout)
	if res.code != 0 || len(f) != 2 {
		t.Fatalf("version: %q", res.stdout)
	}
	return f[1]
}

func TestFleetFilesOnceAndTheSecondDeploymentKeepsOneOccurrenceComment(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	first := newDeployment(t, gh, deployOpts{})
	second := newDeployment(t, gh, deployOpts{})
	errText := "git push failed: exit status 128: remote rejected refs/heads/loop/fix-7"
	stamp := func(d time.Duration) string { return t0.Add(d).UTC().Format(time.RFC3339) }

	first.appendLog(failure(t0, "git.failed", errText))
	if res := first.run("run", "--now", stamp(time.Minute)); res.code != 0 || gh.CountCreates() != 1 {
		t.Fatalf("first deployment: exit %d, %d issues\n%s", res.code, gh.CountCreates(), res.stderr)
	}
	issue := gh.Issues()[0]

	// The second deployment meets the same defect twice: no new issue, one
	// occurrence comment with its tally.
	// Its records name the version the deployment runs: the comment shows
	// that, not this tool's.
	second.appendLog(failure(t0.Add(10*time.Minute), "git.failed", errText, "version", "2.3.0"),
		failure(t0.Add(11*time.Minute), "git.failed", errText, "version", "2.3.0"))
	if res := second.run("run", "--now", stamp(12*time.Minute)); res.code != 0 {
		t.Fatalf("second deployment: exit %d\n%s", res.code, res.stderr)
	}
	if gh.CountCreates() != 1 {
		t.Fatalf("the second deployment filed the defect again: %d issues", gh.CountCreates())
	}
	reported := second.stateMap("reported")
	fp := markerOf(issue.Body)
	var rep struct {
		URL    string `json:"url"`
		Number int    `json:"number"`
	}
	json.Unmarshal(reported[fp], &rep)
	if rep.Number != issue.Number || !strings.HasSuffix(rep.URL, "/acme/widgets/issues/1") {
		t.Fatalf("second deployment's state does not record the existing issue: %s", reported[fp])
	}
	comments := gh.Comments(issue.Number)
	if len(comments) != 1 {
		t.Fatalf("%d comments, want one occurrence comment", len(comments))
	}
	c := comments[0]
	if occurrenceRow(c.Body, "Occurrences") != "2" || occurrenceRow(c.Body, "First seen") != stamp(10*time.Minute) ||
		occurrenceRow(c.Body, "Last seen") != stamp(11*time.Minute) || occurrenceRow(c.Body, "Versions seen since filing") != "2.3.0" ||
		!strings.Contains(c.Body, "kept by the-loop-diagnose "+toolVersion(t, second)) {
		t.Fatalf("occurrence comment does not tally the second deployment's sightings:\n%s", c.Body)
	}

	// Within the hour a new sighting is counted but not written.
	second.appendLog(failure(t0.Add(30*time.Minute), "git.failed", errText))
	second.run("run", "--now", stamp(31*time.Minute))
	if cs := gh.Comments(issue.Number); len(cs) != 1 || cs[0].Body != c.Body {
		t.Fatalf("the comment changed within the hour: %d comments\n%s", len(cs), cs[len(cs)-1].Body)
	}

	// An hour on, the one comment is edited in place.
	second.appendLog(failure(t0.Add(2*time.Hour), "git.failed", errText))
	if res := second.run("run", "--now", stamp(2*time.Hour+time.Minute)); res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	cs := gh.Comments(issue.Number)
	if len(cs) != 1 || cs[0].ID != c.ID {
		t.Fatalf("%d comments after the edit, want the same one comment", len(cs))
	}
	if occurrenceRow(cs[0].Body, "Occurrences") != "4" || occurrenceRow(cs[0].Body, "First seen") != stamp(10*time.Minute) ||
		occurrenceRow(cs[0].Body, "Last seen") != stamp(2*time.Hour) {
		t.Fatalf("edited occurrence comment:\n%s", cs[0].Body)
	}
	if n := len(gh.RequestsTo(fakegh.RouteEditComment)); n != 1 {
		t.Fatalf("%d comment edits, want 1", n)
	}
	if n := len(gh.RequestsTo(fakegh.RouteCreateComment)); n != 1 {
		t.Fatalf("%d comments created, want 1", n)
	}
	if gh.CountCreates() != 1 {
		t.Fatalf("%d issues, want 1", gh.CountCreates())
	}

	// The filing deployment, seeing it again hours later, finds and edits
	// the same comment rather than adding its own, and adds its own tally
	// (its sightings at t0 and now) to the other deployment's 4: the comment
	// shows the fleet's totals.
	first.appendLog(failure(t0.Add(4*time.Hour), "git.failed", errText, "version", "2.4.0"))
	if res := first.run("run", "--now", stamp(4*time.Hour+time.Minute)); res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	cs = gh.Comments(issue.Number)
	if len(cs) != 1 || cs[0].ID != c.ID {
		t.Fatalf("after the first deployment's edit: %d comments\n%s", len(cs), cs[len(cs)-1].Body)
	}
	if occurrenceRow(cs[0].Body, "Occurrences") != "6" || occurrenceRow(cs[0].Body, "Deployments reporting") != "2" ||
		occurrenceRow(cs[0].Body, "First seen") != stamp(0) || occurrenceRow(cs[0].Body, "Last seen") != stamp(4*time.Hour) ||
		occurrenceRow(cs[0].Body, "Versions seen since filing") != "2.3.0, 2.4.0" || occurrenceRow(cs[0].Body, "Rate") != "36.0 per day" {
		t.Fatalf("after the first deployment's edit the comment does not show the fleet's totals (2 + 4 sightings):\n%s", cs[0].Body)
	}
	if gh.CountCreates() != 1 || len(gh.RequestsTo(fakegh.RouteCreateComment)) != 1 {
		t.Fatalf("%d issues, %d comments created", gh.CountCreates(), len(gh.RequestsTo(fakegh.RouteCreateComment)))
	}

	// And back: the second deployment's next edit keeps the first's entry.
	second.appendLog(failure(t0.Add(6*time.Hour), "git.failed", errText))
	if res := second.run("run", "--now", stamp(6*time.Hour+time.Minute)); res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	cs = gh.Comments(issue.Number)
	if len(cs) != 1 || cs[0].ID != c.ID || occurrenceRow(cs[0].Body, "Occurrences") != "7" ||
		occurrenceRow(cs[0].Body, "Deployments reporting") != "2" || occurrenceRow(cs[0].Body, "Last seen") != stamp(6*time.Hour) {
		t.Fatalf("after the second deployment's next edit (2 + 5 sightings):\n%s", cs[len(cs)-1].Body)
	}

	// The visible count never went backwards, whichever deployment wrote.
	var shown []int
	for _, r := range gh.Requests() {
		if r.Route == fakegh.RouteCreateComment || r.Route == fakegh.RouteEditComment {
			shown = append(shown, occurrencesIn(t, r.Body))
		}
	}
	if !slices.Equal(shown, []int{2, 4, 6, 7}) {
		t.Fatalf("visible counts written %v, want 2 4 6 7", shown)
	}

	// Each deployment is known to the public tally only by its own random id.
	var idFirst, idSecond string
	json.Unmarshal(first.readState()["deployment"], &idFirst)
	json.Unmarshal(second.readState()["deployment"], &idSecond)
	if idFirst == "" || idSecond == "" || idFirst == idSecond ||
		!strings.Contains(cs[0].Body, `"`+idFirst+`":{"count":2`) || !strings.Contains(cs[0].Body, `"`+idSecond+`":{"count":5`) {
		t.Fatalf("deployment ids %q, %q; tally:\n%s", idFirst, idSecond, cs[0].Body)
	}
}

// occurrencesIn reads the visible count from a comment request's JSON body.
func occurrencesIn(t *testing.T, reqBody []byte) int {
	t.Helper()
	var c struct{ Body string }
	if err := json.Unmarshal(reqBody, &c); err != nil {
		t.Fatalf("comment request %q: %v", reqBody, err)
	}
	n, err := strconv.Atoi(occurrenceRow(c.Body, "Occurrences"))
	if err != nil {
		t.Fatalf("no count in the comment written:\n%s", c.Body)
	}
	return n
}

// secretToken is a token distinctive enough to spot if it leaks.
const secretToken = "ghp_T0pS3cretV4lue9f8e7d6c5b4a"

func TestSetupFailuresStopWithOneClearMessageAndChargeNoDefect(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		setup func(t *testing.T) (*fakegh.Server, deployOpts)
		edit  func(cfg []byte) []byte
		cause []string // words the message must carry: the cause and the fix
	}{
		{name: "401 bad token",
			setup: func(t *testing.T) (*fakegh.Server, deployOpts) {
				return newGitHub(t), deployOpts{env: []string{"GH_TOKEN=" + secretToken}}
			},
			cause: []string{"token was rejected", "HTTP 401", "fix: set GH_TOKEN"}},
		{name: "no token",
			setup: func(t *testing.T) (*fakegh.Server, deployOpts) {
				return newGitHub(t), deployOpts{env: []string{"GH_TOKEN="}}
			},
			cause: []string{"no GitHub token is set", "fix: set GH_ENTERPRISE_TOKEN or GITHUB_ENTERPRISE_TOKEN or GH_TOKEN or GITHUB_TOKEN"}},
		{name: "404 repository not found",
			setup: func(t *testing.T) (*fakegh.Server, deployOpts) {
				gh := fakegh.New(fakegh.Options{Tokens: map[string]fakegh.Token{secretToken: {Login: "loop-bot", Triage: true}}})
				t.Cleanup(gh.Close)
				return gh, deployOpts{env: []string{"GH_TOKEN=" + secretToken}}
			},
			cause: []string{"repository acme/gadgets was not found", "HTTP 404", "fix: check selfDiagnosis.repo"}},
		{name: "410 issues disabled",
			setup: func(t *testing.T) (*fakegh.Server, deployOpts) {
				gh := fakegh.New(fakegh.Options{IssuesDisabled: true, Tokens: map[string]fakegh.Token{secretToken: {Login: "loop-bot", Triage: true}}})
				t.Cleanup(gh.Close)
				return gh, deployOpts{env: []string{"GH_TOKEN=" + secretToken}}
			},
			cause: []string{"issues are disabled for acme/widgets", "HTTP 410", "fix: enable Issues"}},
		{name: "403 no permission",
			setup: func(t *testing.T) (*fakegh.Server, deployOpts) {
				gh := fakegh.New(fakegh.Options{Tokens: map[string]fakegh.Token{secretToken: {Login: "reader", ReadOnly: true}}})
				t.Cleanup(gh.Close)
				return gh, deployOpts{env: []string{"GH_TOKEN=" + secretToken}}
			},
			cause: []string{"may not create issues in acme/widgets", "HTTP 403", "fix: grant the token Issues: read and write"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			gh, opts := tc.setup(t)
			d := newDeployment(t, gh, opts)
			if tc.name == "404 repository not found" {
				cfg, _ := os.ReadFile(d.config)
				os.WriteFile(d.config, bytes.Replace(cfg, []byte("repo: acme/widgets"), []byte("repo: acme/gadgets"), 1), 0o644)
			}
			d.appendLog(killDefects()...)
			// More runs than maxRetries: a defect charged each time would be
			// abandoned by now.
			for i := 0; i < 4; i++ {
				res := d.run("run")
				if res.code == 0 {
					t.Fatalf("run %d: exit 0 on a setup failure\n%s", i, res.stderr)
				}
				for _, w := range tc.cause {
					if !strings.Contains(res.stderr, w) {
						t.Fatalf("run %d: stderr lacks %q:\n%s", i, w, res.stderr)
					}
				}
				if n := strings.Count(res.stderr, "GitHub setup:"); n != 1 {
					t.Fatalf("run %d: want the cause said once, said %d times:\n%s", i, n, res.stderr)
				}
				if strings.Contains(res.stderr, secretToken) || strings.Contains(res.stderr, secretToken[4:]) {
					t.Fatalf("the token leaked into stderr:\n%s", res.stderr)
				}
				if _, err := os.Stat(d.state); err == nil {
					if a := d.stateMap("attempts"); len(a) != 0 {
						t.Fatalf("run %d: retry counts moved: %v", i, a)
					}
					if a := d.stateMap("abandoned"); len(a) != 0 {
						t.Fatalf("run %d: abandoned: %v", i, a)
					}
				}
			}
			if gh.CountCreates() != 0 {
				t.Fatalf("filed %d issues despite the setup failure", gh.CountCreates())
			}
			if ev := d.events("diagnosis.failed"); len(ev) != 0 {
				t.Fatalf("a setup failure was recorded as a defect's failure: %v", ev)
			}
		})
	}
}

func TestSetupFixedFilesWhatWaited(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{env: []string{"GH_TOKEN=" + secretToken}})
	d.appendLog(killDefects()...)
	if res := d.run("run"); res.code == 0 {
		t.Fatalf("exit 0 with a rejected token\n%s", res.stderr)
	}
	d.env = append(d.env, "GH_TOKEN=test-token")
	if res := d.run("run"); res.code != 0 || gh.CountCreates() != 3 {
		t.Fatalf("after the token was fixed: exit %d, %d issues, want 3\n%s", res.code, gh.CountCreates(), res.stderr)
	}
}

func TestClosedAsCompletedIsReopenedWhenTheDefectRecurs(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{})
	errText := "queue full: dropped work item after 3 attempts"
	d.appendLog(failure(t0, "queue.failed", errText))
	if res := d.run("run", "--now", t0.Add(time.Minute).Format(time.RFC3339)); res.code != 0 || gh.CountCreates() != 1 {
		t.Fatalf("exit %d, %d issues\n%s", res.code, gh.CountCreates(), res.stderr)
	}
	gh.SetIssueState(1, "closed", "completed")
	d.appendLog(failure(t0.Add(48*time.Hour), "queue.failed", errText, "version", "3.1.0"))
	if res := d.run("run", "--now", t0.Add(48*time.Hour+time.Minute).Format(time.RFC3339)); res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	is, _ := gh.Issue(1)
	if is.State != "open" || is.StateReason != "reopened" {
		t.Fatalf("issue is %s/%s, want reopened", is.State, is.StateReason)
	}
	cs := gh.Comments(1)
	if len(cs) != 1 || !strings.Contains(cs[0].Body, "recurred") || !strings.Contains(cs[0].Body, "on 3.1.0") ||
		!strings.Contains(cs[0].Body, t0.Add(48*time.Hour).UTC().Format(time.RFC3339)) {
		t.Fatalf("want one comment saying when and in which version it recurred, got %d:\n%v", len(cs), cs)
	}
	if gh.CountCreates() != 1 {
		t.Fatalf("a recurrence filed a new issue: %d", gh.CountCreates())
	}
}

func TestClosedAsNotPlannedIsRespected(t *testing.T) {
	t.Parallel()
	errText := "worker crashed: nil pointer dereference in scheduler.pick"
	fp := expectedFingerprints(t, []string{failure(t0, "worker.crashed", errText)})[0]
	gh := newGitHub(t)
	// Another deployment filed it; a maintainer closed it as not planned.
	n := gh.AddIssue(fakegh.Issue{Title: "[self-diagnosed] worker crashed", Login: "loop-bot",
		Body: "dossier\n<!-- the-loop-diagnose fingerprint:" + fp + " -->\n", Labels: []string{"the-loop: self-diagnosed"},
		State: "closed", StateReason: "not_planned"})
	d := newDeployment(t, gh, deployOpts{})
	d.appendLog(failure(t0, "worker.crashed", errText))
	for i := 0; i < 2; i++ {
		if res := d.run("run"); res.code != 0 {
			t.Fatalf("exit %d\n%s", res.code, res.stderr)
		}
		d.appendLog(failure(t0.Add(time.Hour), "worker.crashed", errText))
	}
	if gh.CountCreates() != 0 {
		t.Fatalf("filed %d issues for a defect a maintainer dismissed", gh.CountCreates())
	}
	if is, _ := gh.Issue(n); is.State != "closed" || is.StateReason != "not_planned" || len(gh.Comments(n)) != 0 {
		t.Fatalf("the dismissed issue was touched: %s/%s, %d comments", is.State, is.StateReason, len(gh.Comments(n)))
	}
	var dis struct{ Reason, URL string }
	json.Unmarshal(d.stateMap("dismissed")[fp], &dis)
	if !strings.Contains(dis.Reason, "not planned") || !strings.HasSuffix(dis.URL, "/issues/1") {
		t.Fatalf("dismissal not recorded with its evidence: %s", d.readState()["dismissed"])
	}
	res := d.run("status")
	if res.code != 0 || !strings.Contains(res.stdout, "dismissed by a maintainer (1)") || !strings.Contains(res.stdout, fp) ||
		!strings.Contains(res.stdout, "closed as not planned") {
		t.Fatalf("status does not show the dismissal:\n%s", res.stdout)
	}
}

// A secondary rate limit on a create is GitHub refusing: it did nothing,
// so nothing is in doubt. A wait the scan may sleep through (maxWaitSeconds)
// is slept and the create sent again; a longer one defers the rest of the
// scan, and the next scan after the wait files the log's three defects,
// each once.
func TestASecondaryRateLimitOnACreateIsARefusalNotADoubt(t *testing.T) {
	t.Parallel()
	t.Run("longer than the scan waits", func(t *testing.T) {
		t.Parallel()
		gh := newGitHub(t)
		gh.Inject(fakegh.RouteCreateIssue, fakegh.SecondaryRateLimitAs(http.StatusTooManyRequests, 30*time.Second, -1))
		d := newDeployment(t, gh, deployOpts{extra: "  maxWaitSeconds: 1\n"})
		d.appendLog(killDefects()...)
		at := t0.Add(time.Hour) // the tool's clock, moved with --now
		res := d.run("run", "--now", at.Format(time.RFC3339))
		if res.code != 0 || gh.CountCreates() != 0 || len(gh.RequestsTo(fakegh.RouteCreateIssue)) != 1 || !strings.Contains(res.stderr, "rate limit") {
			t.Fatalf("exit %d, %d issues, %d creates, want 0, 0, 1 and the rate limit named\n%s", res.code, gh.CountCreates(), len(gh.RequestsTo(fakegh.RouteCreateIssue)), res.stderr)
		}
		if strings.Contains(string(d.readState()["intents"]), "in_doubt") || strings.Contains(res.stderr, "in doubt") {
			t.Fatalf("a refused create is in doubt: %s\n%s", d.readState()["intents"], res.stderr)
		}
		if len(d.stateMap("attempts")) != 0 || len(d.stateMap("deferred")) != 3 {
			t.Fatalf("the defects must wait uncharged: attempts %s deferred %s", d.readState()["attempts"], d.readState()["deferred"])
		}
		if st := d.run("status", "--now", at.Add(5*time.Second).Format(time.RFC3339)); !strings.Contains(st.stdout, "GitHub rate limit: it asked to be left alone until") {
			t.Fatalf("status does not say GitHub asked to wait:\n%s", st.stdout)
		}
		// A scan within the 30 s GitHub asked for sends it nothing.
		asked := len(gh.Requests())
		res = d.run("run", "--now", at.Add(10*time.Second).Format(time.RFC3339))
		if res.code != 0 || len(gh.Requests()) != asked || gh.CountCreates() != 0 || !strings.Contains(res.stderr, "asked to wait until") {
			t.Fatalf("a scan within the wait: exit %d, %d requests to GitHub, %d issues\n%s", res.code, len(gh.Requests())-asked, gh.CountCreates(), res.stderr)
		}
		// The next scan after the wait files the three, once each.
		res = d.run("run", "--now", at.Add(time.Minute).Format(time.RFC3339))
		if res.code != 0 || gh.CountCreates() != 3 || len(gh.RequestsTo(fakegh.RouteCreateIssue)) != 4 {
			t.Fatalf("after the wait: exit %d, %d issues, %d creates, want 0, 3, 4\n%s", res.code, gh.CountCreates(), len(gh.RequestsTo(fakegh.RouteCreateIssue)), res.stderr)
		}
		if res := d.run("run", "--now", at.Add(2*time.Minute).Format(time.RFC3339)); res.code != 0 || len(gh.Issues()) != 3 || len(d.stateMap("deferred")) != 0 {
			t.Fatalf("a fourth scan: exit %d, %d issues, deferred %s", res.code, len(gh.Issues()), d.readState()["deferred"])
		}
	})
	t.Run("within the scan's wait", func(t *testing.T) {
		t.Parallel()
		gh := newGitHub(t)
		gh.Inject(fakegh.RouteCreateIssue, fakegh.SecondaryRateLimit(time.Second))
		d := newDeployment(t, gh, deployOpts{})
		d.appendLog(killDefects()...)
		res := d.run("run")
		if res.code != 0 || gh.CountCreates() != 3 || len(gh.RequestsTo(fakegh.RouteCreateIssue)) != 4 {
			t.Fatalf("exit %d, %d issues, %d creates, want 0, 3, 4\n%s", res.code, gh.CountCreates(), len(gh.RequestsTo(fakegh.RouteCreateIssue)), res.stderr)
		}
	})
}

func TestPrimaryRateLimitDefersTheScanWithoutChargingAnyDefect(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	gh.Inject(fakegh.RouteCreateIssue, fakegh.PrimaryRateLimit(2*time.Hour))
	d := newDeployment(t, gh, deployOpts{})
	d.appendLog(killDefects()...)
	res := d.run("run")
	if res.code != 0 {
		t.Fatalf("a rate limit failed the run: exit %d\n%s", res.code, res.stderr)
	}
	if gh.CountCreates() != 0 || len(gh.RequestsTo(fakegh.RouteCreateIssue)) != 1 {
		t.Fatalf("kept creating after the quota ran out: %v", gh.RequestsTo(fakegh.RouteCreateIssue))
	}
	if a := d.stateMap("attempts"); len(a) != 0 {
		t.Fatalf("the rate limit was charged to retry counts: %v", a)
	}
	if def := d.stateMap("deferred"); len(def) != 3 {
		t.Fatalf("want all 3 defects deferred, got %v", def)
	}
	if !strings.Contains(res.stderr, "rate limit") {
		t.Fatalf("stderr does not say why nothing was filed:\n%s", res.stderr)
	}
	// The quota is back at its reset: the deferred defects are filed, once each.
	if res := d.run("run", "--now", time.Now().Add(2*time.Hour+time.Minute).UTC().Format(time.RFC3339)); res.code != 0 || gh.CountCreates() != 3 {
		t.Fatalf("after the reset: exit %d, %d issues\n%s", res.code, gh.CountCreates(), res.stderr)
	}
	if a := d.stateMap("attempts"); len(a) != 0 {
		t.Fatalf("retry counts: %v", a)
	}
}

func TestASetupFailureStopsTheScanBeforeAnyAgentRuns(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	runs := filepath.Join(t.TempDir(), "agent-runs.jsonl")
	d := newDeployment(t, gh, deployOpts{env: []string{"GH_TOKEN=wrong-token", "FAKE_AGENT_RECORD=" + runs}})
	d.appendLog(failure(t0, "dispatch.failed", "boom"))
	res := d.run("run")
	if res.code == 0 || !strings.Contains(res.stderr, "401") {
		t.Fatalf("exit %d, stderr %q", res.code, res.stderr)
	}
	if _, err := os.Stat(runs); err == nil {
		t.Fatal("the agent ran although GitHub was misconfigured: an LLM call wasted every scan")
	}
}
