package stages

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	fakegh "github.com/the-loop/the-loop-diagnose/fakes/github"
	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/stages/issue"
	"github.com/the-loop/the-loop-diagnose/stages/tracker"
	"github.com/the-loop/the-loop-diagnose/store"
)

// The post protocol's decisions over tracker.Memory: no HTTP, no JSON, no
// waits. The wire (pacing, retries, rate limits, GitHub's statuses) is
// proven against fakes/github in post_test.go and stages/tracker.

type memHarness struct {
	mem *tracker.Memory
	st  *store.Store
	cfg PostConfig
	now time.Time
}

func newMemHarness(t *testing.T) *memHarness {
	t.Helper()
	h := &memHarness{mem: tracker.NewMemory("acme/widgets", "loop-bot"), st: store.OpenMemory(),
		now: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}
	h.mem.CreateLabel(postTestLabel)
	h.cfg = PostConfig{Tracker: h.mem, Repo: "acme/widgets", Label: postTestLabel, Store: h.st,
		Now: func() time.Time { return h.now }, Version: "v1.2.3", Log: zerolog.Nop()}
	return h
}

func (h *memHarness) run(t *testing.T, reports ...pipeline.Report) ([]pipeline.Outcome, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return pipeline.Collect(ctx, NewPost(h.cfg), reports...)
}

func (h *memHarness) runOne(t *testing.T, r pipeline.Report) pipeline.Outcome {
	t.Helper()
	out, err := h.run(t, r)
	return onlyOutcome(t, out, err)
}

func (h *memHarness) advance(d time.Duration) { h.now = h.now.Add(d) }

func (h *memHarness) state() store.State {
	var c store.State
	h.st.View(func(st *store.State) { c = *st })
	return c
}

// Exactly once: a create that landed but whose answer was lost is found by
// its marker and recorded, never sent again.
func TestPostCreateWhoseAnswerIsLostIsFoundNotRepeated(t *testing.T) {
	h := newMemHarness(t)
	h.mem.FailAfter(tracker.OpCreate, &pipeline.InDoubtError{Err: errors.New("create issue: EOF")})
	o := h.runOne(t, postReport("fp-lost"))
	if o.Status != pipeline.StatusFiled || o.Number != 1 {
		t.Fatalf("outcome %+v, want filed #1", o)
	}
	if n := h.mem.Count(tracker.OpCreate); n != 1 || len(h.mem.Issues()) != 1 {
		t.Fatalf("%d creates, %d issues: want one of each", n, len(h.mem.Issues()))
	}
	if st := h.state(); len(st.Intents) != 0 || st.Reported.At("fp-lost").Number != 1 {
		t.Fatalf("state not reconciled: intents %v reported %+v", st.Intents, st.Reported.At("fp-lost"))
	}
}

// Exactly once: a create in doubt that GitHub does not list waits, its
// intent marked; within postCreateSettle it is looked for, not sent; after
// it, filed again.
func TestPostCreateInDoubtWaitsBeforeItIsFiledAgain(t *testing.T) {
	h := newMemHarness(t)
	h.mem.Fail(tracker.OpCreate, &pipeline.InDoubtError{Err: errors.New("create issue: 502")})
	o := h.runOne(t, postReport("fp-d"))
	if o.Status != pipeline.StatusDeferred || o.Wait == nil || o.Wait.For != pipeline.WaitGitHub || o.Error != "" {
		t.Fatalf("outcome %+v, want deferred waiting for GitHub", o)
	}
	if !h.state().Intents["fp-d"].InDoubt {
		t.Fatal("the intent is not marked in doubt")
	}
	h.now = h.now.Add(time.Minute)
	if o = h.runOne(t, postReport("fp-d")); o.Status != pipeline.StatusDeferred || h.mem.Count(tracker.OpCreate) != 1 {
		t.Fatalf("within the settle time: %+v, %d creates", o, h.mem.Count(tracker.OpCreate))
	}
	h.now = h.now.Add(postCreateSettle)
	if o = h.runOne(t, postReport("fp-d")); o.Status != pipeline.StatusFiled || o.Number != 1 || len(h.mem.Issues()) != 1 {
		t.Fatalf("after the settle time: %+v, %d issues", o, len(h.mem.Issues()))
	}
}

// Two open issues for one defect (a create in doubt that did happen): the
// oldest stays, the other is closed as its duplicate with a comment.
func TestPostTwinIssuesSettleOnTheOldest(t *testing.T) {
	h := newMemHarness(t)
	for range 2 {
		h.mem.Add(tracker.Issue{Title: "t", Body: postBody("fp-t", "x"), Author: "loop-bot", Labels: []string{postTestLabel}})
	}
	o := h.runOne(t, postReport("fp-t"))
	if o.Status != pipeline.StatusKnown || o.Number != 1 {
		t.Fatalf("outcome %+v, want known #1", o)
	}
	twin, _ := h.mem.Get(2)
	if twin.State != "closed" || twin.StateReason != "not_planned" || strings.Contains(twin.Body, issue.FingerprintMarker("fp-t")) {
		t.Fatalf("the younger twin: %+v", twin)
	}
	if cs := h.mem.CommentsOn(2); len(cs) != 1 || !strings.Contains(cs[0].Body, "Duplicate of #1") {
		t.Fatalf("the twin's comment: %+v", cs)
	}
	if first, _ := h.mem.Get(1); first.State != "open" || h.mem.Count(tracker.OpCreate) != 0 {
		t.Fatalf("the oldest: %+v, %d creates", first, h.mem.Count(tracker.OpCreate))
	}
}

func TestPostReopensIssueClosedAsCompleted(t *testing.T) {
	h := newMemHarness(t)
	h.runOne(t, postReport("fp-r"))
	h.mem.SetState(1, "closed", "completed")

	h.now = h.now.Add(postOccurrenceEvery) // the issue is looked at again hourly
	o := h.runOne(t, known(postReport("fp-r")))
	if o.Status != pipeline.StatusKnown || !strings.Contains(o.Reason, "reopened #1") {
		t.Fatalf("outcome %+v", o)
	}
	if is, _ := h.mem.Get(1); is.State != "open" {
		t.Fatalf("issue state %q", is.State)
	}
	c := h.mem.CommentsOn(1)
	if len(c) != 1 || !strings.Contains(c[0].Body, "recurred") || !strings.Contains(c[0].Body, "v1.2.3") || !strings.Contains(c[0].Body, issue.SelfAuthoredMarker) {
		t.Fatalf("recurrence comment %+v", c)
	}
	if h.mem.Count(tracker.OpCreate) != 1 {
		t.Fatal("a recurrence must not file a new issue")
	}
}

// A token without triage rights may not reopen a maintainer's close: the
// recurrence is said in a comment instead.
func TestPostRecurrenceTheTokenMayNotReopenIsCommented(t *testing.T) {
	h := newMemHarness(t)
	n := h.mem.Add(tracker.Issue{Title: "t", Body: postBody("fp-n", "x"), Author: "loop-bot", State: "closed", StateReason: "completed"})
	h.mem.Fail(tracker.OpEdit, &tracker.Refused{Op: "reopen issue", Status: http.StatusForbidden, Err: errors.New("403 Resource not accessible")})
	o := h.runOne(t, postReport("fp-n"))
	if o.Status != pipeline.StatusKnown || !strings.Contains(o.Reason, "may not reopen") {
		t.Fatalf("outcome %+v", o)
	}
	if is, _ := h.mem.Get(n); is.State != "closed" || len(h.mem.CommentsOn(n)) != 1 {
		t.Fatalf("issue %+v, comments %+v", is, h.mem.CommentsOn(n))
	}
}

func TestPostRespectsMaintainerDismissal(t *testing.T) {
	for name, is := range map[string]tracker.Issue{
		"not planned":   {Title: "t", Body: postBody("fp-d", "x"), Author: "loop-bot", State: "closed", StateReason: "not_planned"},
		"wontfix label": {Title: "t", Body: postBody("fp-d", "x"), Author: "loop-bot", State: "closed", StateReason: "completed", Labels: []string{"wontfix"}},
	} {
		t.Run(name, func(t *testing.T) {
			h := newMemHarness(t)
			n := h.mem.Add(is)
			o := h.runOne(t, postReport("fp-d"))
			if o.Status != pipeline.StatusSettled || !strings.Contains(o.Reason, "dismissed") || o.Number != n {
				t.Fatalf("outcome %+v", o)
			}
			for _, op := range h.mem.Calls() {
				switch op {
				case tracker.OpCreate, tracker.OpEdit, tracker.OpComment, tracker.OpEditComment:
					t.Fatalf("touched a dismissed issue: %v", h.mem.Calls())
				}
			}
			d := h.state().Dismissed["fp-d"]
			if d.URL == "" || d.Reason == "" || d.At.IsZero() {
				t.Fatalf("dismissal not recorded with evidence: %+v", d)
			}
		})
	}
}

// A GitHub App's token may not read /user: it learns who it is from the
// issue it creates, and the next scan recognises that issue.
func TestPostGitHubAppLearnsItsLoginFromItsFirstIssue(t *testing.T) {
	h := newMemHarness(t)
	h.mem.HideLogin, h.mem.Me = true, "loop-app[bot]"
	if o := h.runOne(t, postReport("fp-app")); o.Status != pipeline.StatusFiled {
		t.Fatalf("outcome %+v", o)
	}
	if got := h.state().IssueLogin; got != "loop-app[bot]" {
		t.Fatalf("IssueLogin %q", got)
	}
	fresh := *h
	fresh.st = store.OpenMemory()
	_ = fresh.st.Update(func(st *store.State) error { st.IssueLogin = "loop-app[bot]"; return nil })
	fresh.cfg.Store = fresh.st
	if o := fresh.runOne(t, postReport("fp-app")); o.Status != pipeline.StatusKnown || o.Number != 1 {
		t.Fatalf("the next scan: %+v, want known #1", o)
	}
}

// The preflight runs before the stage first asks the tracker anything: an
// outage there makes the defect wait, a setup error stops the scan.
func TestPostPreflightGatesTheTracker(t *testing.T) {
	h := newMemHarness(t)
	h.cfg.Preflight = func(context.Context) error {
		return &pipeline.OutageError{Reason: "GitHub is not answering (HTTP 502)"}
	}
	o := h.runOne(t, postReport("fp-p"))
	if o.Status != pipeline.StatusDeferred || o.Wait == nil || len(h.mem.Calls()) != 0 {
		t.Fatalf("outcome %+v, calls %v", o, h.mem.Calls())
	}
	h.cfg.Preflight = func(context.Context) error {
		return &pipeline.SetupError{Area: "GitHub", Cause: "repository acme/widgets was not found", Fix: "check selfDiagnosis.repo", Status: 404}
	}
	var setup *pipeline.SetupError
	if _, err := h.run(t, postReport("fp-p")); !errors.As(err, &setup) {
		t.Fatalf("want the setup error, got %v", err)
	}
}

// NewPost defaults nothing: what it cannot work without is an error naming it.
func TestPostValidatesItsConfig(t *testing.T) {
	h := newMemHarness(t)
	h.cfg.Label = ""
	if _, err := h.run(t, postReport("fp-v")); err == nil || !strings.Contains(err.Error(), "selfDiagnosis.label") {
		t.Fatalf("no label: %v", err)
	}
	h = newMemHarness(t)
	h.cfg.Tracker = nil
	if _, err := h.run(t, postReport("fp-v")); err == nil || !strings.Contains(err.Error(), "tracker") {
		t.Fatalf("no tracker: %v", err)
	}
}

func TestPostPassesThroughWhatItMustNotPost(t *testing.T) {
	h := newMemHarness(t)
	failed := postReport("fp-f")
	failed.Failure = "agent timed out"
	deferred := postReport("fp-d")
	deferred.Verdict = pipeline.VerdictDeferred
	abandoned := postReport("fp-a")
	abandoned.Verdict = pipeline.VerdictAbandoned
	settled := postReport("fp-s")
	settled.Verdict = pipeline.VerdictSettled
	out, err := h.run(t, failed, deferred, abandoned, settled, known(postReport("fp-k")))
	if err != nil {
		t.Fatal(err)
	}
	want := []pipeline.Status{pipeline.StatusFailed, pipeline.StatusDeferred, pipeline.StatusSkipped, pipeline.StatusSettled, pipeline.StatusKnown}
	for i, o := range out {
		if o.Status != want[i] {
			t.Errorf("%s: status %s, want %s", o.Fingerprint, o.Status, want[i])
		}
	}
	if out[0].Error != "agent timed out" {
		t.Fatalf("failure not carried: %+v", out[0])
	}
	if n := len(h.mem.Calls()); n != 0 {
		t.Fatalf("%d requests for reports that must not be posted", n)
	}
}

func TestPostCrashAfterCreateIsReconciledFromIntent(t *testing.T) {
	h := newMemHarness(t)
	// A previous run wrote its intent, created the issue, and died.
	_ = h.st.Update(func(st *store.State) error {
		st.Intents["fp-c"] = store.Intent{At: h.now, Title: "t"}
		return nil
	})
	h.mem.Add(tracker.Issue{Title: "t", Body: postBody("fp-c", "x"), Author: "loop-bot"})
	o := h.runOne(t, postReport("fp-c"))
	if o.Status != pipeline.StatusFiled || o.Number != 1 || h.mem.Count(tracker.OpCreate) != 0 {
		t.Fatalf("outcome %+v creates %d", o, h.mem.Count(tracker.OpCreate))
	}
	if len(h.state().Intents) != 0 {
		t.Fatal("intent not cleared")
	}
}

// A recurring known defect costs no GitHub request within the hour after its
// issue was last looked at: its sightings are counted in the state and
// reach the issue with the next hourly look, which also notices a close.
func TestPostLooksAtAKnownIssueAtMostHourly(t *testing.T) {
	h := newMemHarness(t)
	h.runOne(t, postReport("fp-k"))
	before, counted := len(h.mem.Calls()), h.state().Issues.At("fp-k").Occurrences
	h.mem.SetState(1, "closed", "completed")
	for i := 0; i < 3; i++ {
		h.advance(10 * time.Minute)
		if o := h.runOne(t, known(postReport("fp-k"))); o.Status != pipeline.StatusKnown || o.Number != 1 {
			t.Fatalf("scan %d: outcome %+v, want known #1", i, o)
		}
	}
	if got := h.mem.Calls()[before:]; len(got) != 0 {
		t.Fatalf("%d GitHub requests within the hour, want none: %+v", len(got), got)
	}
	if n := h.state().Issues.At("fp-k").Occurrences - counted; n != 9 {
		t.Fatalf("occurrences counted %d, want 9 (3 sightings of 3)", n)
	}
	h.advance(postOccurrenceEvery)
	h.runOne(t, known(postReport("fp-k")))
	if is, _ := h.mem.Get(1); is.State != "open" {
		t.Fatalf("after the hour the close was not noticed: issue is %s", is.State)
	}
}

// memIssue is a fakes/github fixture as tracker.Memory holds it.
func memIssue(is fakegh.Issue) tracker.Issue {
	return tracker.Issue{Title: is.Title, Body: is.Body, Author: is.Login, State: is.State, StateReason: is.StateReason, Labels: is.Labels}
}

func TestPostATrustedFleetAccountsIssueIsKnown(t *testing.T) {
	h := newMemHarness(t)
	h.cfg.TrustedAuthors = []string{"LOOP-BOT-2"}
	is := strangerIssue("fp-k", false)
	is.Login = "loop-bot-2"
	n := h.mem.Add(memIssue(is))
	if o := h.runOne(t, postReport("fp-k")); o.Status != pipeline.StatusKnown || o.Number != n || h.mem.Count(tracker.OpCreate) != 0 {
		t.Fatalf("outcome %+v, %d creates: want the fleet's issue known", o, h.mem.Count(tracker.OpCreate))
	}
	if len(h.state().ForeignMarkers) != 0 {
		t.Fatalf("a trusted author's issue was reported as foreign: %+v", h.state().ForeignMarkers)
	}
}

func TestPostAStrangersOccurrenceCommentIsNeverEdited(t *testing.T) {
	h := newMemHarness(t)
	n := h.mem.Add(tracker.Issue{Title: "t", Body: postBody("fp-o", "x"), Author: "loop-bot"})
	planted := h.mem.AddComment(n, "mallory", issue.OccurrenceMarker("fp-o")+"\n<!-- the-loop-diagnose tally:{\"deployments\":{\"aaaa\":{\"count\":99999}}} -->\n")
	h.runOne(t, postReport("fp-o"))
	cs := h.mem.CommentsOn(n)
	if len(cs) != 2 || cs[0].ID != planted || cs[0].Author != "mallory" || cs[1].Author != "loop-bot" || occurrenceCount(t, cs[1].Body) != 3 {
		t.Fatalf("want the planted comment untouched and our own with our 3 sightings: %+v", cs)
	}
}

func TestPostForeignMarkersAreBoundedNewestKept(t *testing.T) {
	h := newMemHarness(t)
	for i := range postMaxForeign + 20 {
		h.mem.Add(memIssue(strangerIssue(fmt.Sprintf("fp-spam-%d", i), false)))
	}
	h.runOne(t, postReport("fp-new"))
	got := h.state().ForeignMarkers
	if len(got) != postMaxForeign {
		t.Fatalf("%d foreign markers kept, want %d", len(got), postMaxForeign)
	}
	// Lists arrive newest first, so the oldest issues are the ones dropped.
	for _, f := range got {
		if f.Number <= 20 {
			t.Fatalf("kept #%d over newer ones", f.Number)
		}
	}
}
