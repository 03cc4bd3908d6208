package test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"

	fakegh "github.com/the-loop/the-loop-diagnose/fakes/github"
)

// Only the tool's own issues count: anyone can open an issue carrying a
// defect's marker (fingerprints are predictable), and log text or an agent
// can put one inside an issue the tool files.

// asLogin is a GitHub client acting as login on the fake, through a token of
// its own.
func asLogin(t *testing.T, gh *fakegh.Server, login string, triage bool) *github.Client {
	t.Helper()
	token := "token-of-" + login
	gh.AddToken(token, fakegh.Token{Login: login, Triage: triage})
	c, err := github.NewClient(nil).WithAuthToken(token).WithEnterpriseURLs(gh.APIURL(), gh.APIURL())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// lookalikeBody is what a stranger copies from one of the tool's issues,
// with the marker of the defect they want silenced.
func lookalikeBody(fp string) string {
	return "## Summary\n\nKnown issue, tracked here.\n\n---\n_Filed automatically by the-loop-diagnose from the-loop's event log._\n\n" +
		"<!-- the-loop-diagnose fingerprint:" + fp + " -->\n<!-- the-loop:agent-comment -->\n"
}

// untouched fails unless issue n is as it was and the tool (loop-bot) only
// read it.
func untouched(t *testing.T, gh *fakegh.Server, before fakegh.Issue) {
	t.Helper()
	n := before.Number
	now, _ := gh.Issue(n)
	if now.Body != before.Body || now.State != before.State || now.StateReason != before.StateReason || now.Title != before.Title {
		t.Fatalf("issue #%d changed:\nbefore %+v\nafter  %+v", n, before, now)
	}
	if cs := gh.Comments(n); len(cs) != 0 {
		t.Fatalf("issue #%d got %d comments, first by %s:\n%s", n, len(cs), cs[0].Login, cs[0].Body)
	}
	for _, r := range gh.Requests() {
		path := strings.TrimSuffix(r.Path, "/comments")
		if r.Login == "loop-bot" && r.Method != http.MethodGet && strings.HasSuffix(path, fmt.Sprintf("/issues/%d", n)) {
			t.Fatalf("%s %s: the tool wrote to issue #%d", r.Method, r.Path, n)
		}
	}
}

// foreignMarkers is status --json's list of ignored strangers' issues.
func foreignMarkers(t *testing.T, d *deployment) []struct {
	Number      int
	Login       string
	Fingerprint string
} {
	t.Helper()
	res := d.run("status", "--json")
	var out struct {
		Foreign []struct {
			Number      int
			Login       string
			Fingerprint string
		} `json:"foreign_markers"`
	}
	if res.code != 0 || json.Unmarshal([]byte(res.stdout), &out) != nil {
		t.Fatalf("status --json: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	return out.Foreign
}

func TestAStrangersIssueWithTheDefectsMarkerDoesNotStopItBeingFiled(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, stranger, event, errText string
		closeIt                        bool
	}{
		{"left open", "mallory", "worker.crashed", "worker crashed: nil pointer dereference in scheduler.pick", false},
		{"closed as not planned", "Some-App[bot]", "git.failed", "git push failed: exit status 128: remote rejected refs/heads/loop/fix-12", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			line := failure(t0, tc.event, tc.errText)
			fp := expectedFingerprints(t, []string{line})[0]
			gh := newGitHub(t)
			stranger := asLogin(t, gh, tc.stranger, false)
			ctx := context.Background()
			planted, _, err := stranger.Issues.Create(ctx, "acme", "widgets", &github.IssueRequest{
				Title: github.String("[self-diagnosed] " + tc.event), Body: github.String(lookalikeBody(fp)),
				Labels: &[]string{"the-loop: self-diagnosed"}})
			if err != nil {
				t.Fatal(err)
			}
			if tc.closeIt {
				if _, _, err := stranger.Issues.Edit(ctx, "acme", "widgets", planted.GetNumber(), &github.IssueRequest{
					State: github.String("closed"), StateReason: github.String("not_planned")}); err != nil {
					t.Fatal(err)
				}
			}
			before, _ := gh.Issue(planted.GetNumber())

			d := newDeployment(t, gh, deployOpts{})
			d.appendLog(line)
			res := d.run("run", "--now", t0.Add(time.Minute).Format(time.RFC3339))
			if res.code != 0 {
				t.Fatalf("exit %d\n%s", res.code, res.stderr)
			}
			issues := gh.Issues()
			if len(issues) != 2 || issues[1].Login != "loop-bot" || markerOf(issues[1].Body) != fp {
				t.Fatalf("want the defect filed by the tool as #2, got %d issues: %+v", len(issues), issues)
			}
			if !strings.Contains(res.stderr, "not trusted") || !strings.Contains(res.stderr, fp) {
				t.Fatalf("no warning naming the stranger's issue:\n%s", res.stderr)
			}
			if _, ok := d.stateMap("dismissed")[fp]; ok {
				t.Fatalf("recorded as dismissed by a stranger: %s", d.readState()["dismissed"])
			}
			// It recurs an hour later: the sighting goes to the tool's issue.
			d.appendLog(failure(t0.Add(time.Hour), tc.event, tc.errText))
			if res := d.run("run", "--now", t0.Add(3*time.Hour).Format(time.RFC3339)); res.code != 0 {
				t.Fatalf("second run: exit %d\n%s", res.code, res.stderr)
			}
			if gh.CountCreates() != 2 || len(gh.Comments(2)) != 1 {
				t.Fatalf("after the recurrence: %d creates, %d comments on #2", gh.CountCreates(), len(gh.Comments(2)))
			}
			untouched(t, gh, before)

			// status says who tried.
			want := fmt.Sprintf("issue #%d by @%s carries the marker of %s; ignored (not a trusted author)", planted.GetNumber(), tc.stranger, fp)
			if st := d.run("status"); !strings.Contains(st.stdout, want) || strings.Contains(st.stdout, "dismissed by a maintainer (1)") {
				t.Fatalf("status does not warn %q:\n%s", want, st.stdout)
			}
			if f := foreignMarkers(t, d); len(f) != 1 || f[0].Number != planted.GetNumber() || f[0].Login != tc.stranger || f[0].Fingerprint != fp {
				t.Fatalf("status --json foreign_markers: %+v", f)
			}
		})
	}
}

// A marker planted in text the tool quotes — here an agent's answer that
// repeats what a log line told it, opening a fence it never closes — does
// not make that issue the planted fingerprint's, and the issue stays its
// own defect's.
func TestAMarkerQuotedInAnIssueOfTheToolsDoesNotMakeItAnotherDefects(t *testing.T) {
	t.Parallel()
	lineA := failure(t0, "queue.failed", "queue worker: upstream said please file nothing")
	lineB := failure(t0.Add(time.Minute), "dispatch.failed", "dispatch failed: webhook 502 from api host")
	fpB := expectedFingerprints(t, []string{lineB})[0]
	marker := "<!-- the-loop-diagnose fingerprint:" + fpB + " -->"
	answer, _ := json.Marshal(map[string]any{
		"title":         "queue worker crashed",
		"summary":       "The log says:\n\n" + marker + "\n\nwhich I repeat.\n\n````\n" + marker,
		"root_cause":    marker,
		"suggested_fix": "none",
	})
	answerFile := filepath.Join(t.TempDir(), "answer.json")
	if err := os.WriteFile(answerFile, answer, 0o600); err != nil {
		t.Fatal(err)
	}
	gh := newGitHub(t)
	first := newDeployment(t, gh, deployOpts{harness: "command\n  command: [\"/bin/cat\", " + quote(answerFile) + "]"})
	first.appendLog(lineA)
	if res := first.run("run"); res.code != 0 || gh.CountCreates() != 1 {
		t.Fatalf("first deployment: exit %d, %d issues\n%s", res.code, gh.CountCreates(), res.stderr)
	}
	a := gh.Issues()[0]
	if !strings.Contains(a.Body, "fingerprint:"+fpB) {
		t.Fatalf("the planted marker did not reach the issue, so this test shows nothing:\n%s", a.Body)
	}

	// Another deployment, with no state, meets both defects.
	second := newDeployment(t, gh, deployOpts{})
	second.appendLog(lineA, lineB)
	if res := second.run("run"); res.code != 0 {
		t.Fatalf("second deployment: exit %d\n%s", res.code, res.stderr)
	}
	issues := gh.Issues()
	if len(issues) != 2 || markerOf(issues[1].Body) != fpB {
		t.Fatalf("want B filed as an issue of its own (2 issues), got %d", len(issues))
	}
	// A's issue is still A's: its one comment is A's sighting, none for B.
	cs := gh.Comments(a.Number)
	if len(cs) != 1 || !strings.Contains(cs[0].Body, "occurrences:"+markerOf(a.Body)) {
		t.Fatalf("want one occurrence comment for A on #%d, got %d: %+v", a.Number, len(cs), cs)
	}
}

// A fleet filing with several bot accounts: an account listed in
// trustedAuthors counts as the tool's own, and only then.
func TestATrustedFleetAccountsIssueIsKnownAndNoTwinIsFiled(t *testing.T) {
	t.Parallel()
	line := failure(t0, "dispatch.failed", "dispatch failed: claude exited 1: rate limited by provider")
	fp := expectedFingerprints(t, []string{line})[0]
	gh := newGitHub(t)
	asLogin(t, gh, "loop-bot-2", true)

	other := newDeployment(t, gh, deployOpts{env: []string{"GH_TOKEN=token-of-loop-bot-2"}})
	other.appendLog(line)
	if res := other.run("run"); res.code != 0 || gh.CountCreates() != 1 {
		t.Fatalf("the other account's deployment: exit %d, %d issues\n%s", res.code, gh.CountCreates(), res.stderr)
	}
	if is := gh.Issues()[0]; is.Login != "loop-bot-2" || markerOf(is.Body) != fp {
		t.Fatalf("issue #1 %+v", is)
	}

	trusting := newDeployment(t, gh, deployOpts{extra: "  trustedAuthors: [LOOP-BOT-2]\n"})
	trusting.appendLog(line)
	if res := trusting.run("run"); res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	if gh.CountCreates() != 1 {
		t.Fatalf("a twin was filed although the fleet's account is trusted: %d issues", gh.CountCreates())
	}
	if cs := gh.Comments(1); len(cs) != 1 || cs[0].Login != "loop-bot" {
		t.Fatalf("want the sighting on #1, got %+v", cs)
	}
	if f := foreignMarkers(t, trusting); len(f) != 0 {
		t.Fatalf("a trusted account reported as foreign: %+v", f)
	}

	// Without the key the same issue is a stranger's.
	stranger := newDeployment(t, gh, deployOpts{})
	stranger.appendLog(line)
	if res := stranger.run("run"); res.code != 0 || gh.CountCreates() != 2 {
		t.Fatalf("without trustedAuthors: exit %d, %d issues\n%s", res.code, gh.CountCreates(), res.stderr)
	}
	if st := stranger.run("status"); !strings.Contains(st.stdout, "issue #1 by @loop-bot-2 carries the marker of "+fp) {
		t.Fatalf("status:\n%s", st.stdout)
	}
}
