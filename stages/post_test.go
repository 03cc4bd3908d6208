package stages

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-github/v66/github"
	"github.com/rs/zerolog"

	fakegh "github.com/the-loop/the-loop-diagnose/fakes/github"
	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/stages/issue"
	"github.com/the-loop/the-loop-diagnose/stages/tracker"
	"github.com/the-loop/the-loop-diagnose/store"
)

// postLog is a goroutine-safe log sink the tests read back.
type postLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *postLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *postLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

type postHarness struct {
	srv    *fakegh.Server
	st     *store.Store
	log    *postLog
	cfg    PostConfig
	client *github.Client
	gh     tracker.GitHubConfig // the tracker's pacing; Repo, Now and Log come from cfg

	mu  sync.Mutex
	now time.Time
}

func (h *postHarness) clock() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.now
}

func (h *postHarness) advance(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.now = h.now.Add(d)
}

func newPostHarness(t *testing.T, opts fakegh.Options, token string) *postHarness {
	t.Helper()
	srv := fakegh.New(opts)
	t.Cleanup(srv.Close)
	if token == "" {
		token = "test-token"
	}
	client, err := github.NewClient(nil).WithAuthToken(token).WithEnterpriseURLs(srv.APIURL(), srv.APIURL())
	if err != nil {
		t.Fatal(err)
	}
	h := &postHarness{srv: srv, st: store.OpenMemory(), log: &postLog{}, client: client, now: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}
	h.cfg = PostConfig{
		Repo:    srv.Repo(),
		Label:   postTestLabel,
		Store:   h.st,
		Now:     h.clock,
		Version: "v1.2.3",
		Log:     zerolog.New(h.log),
	}
	h.gh = tracker.GitHubConfig{
		SecondaryWait: 20 * time.Millisecond,
		MaxWait:       3 * time.Second,
		Retries:       3,
		BackoffBase:   time.Millisecond,
	}
	return h
}

// postTestLabel is the config's default label.
const postTestLabel = "the-loop: self-diagnosed"

// stage is the post stage on the fake GitHub, with a fresh tracker (one
// per scan, as a scan makes one).
func (h *postHarness) stage(t *testing.T) pipeline.Stage[pipeline.Report, pipeline.Outcome] {
	t.Helper()
	gc := h.gh
	gc.Repo, gc.Now, gc.Log = h.cfg.Repo, h.cfg.Now, h.cfg.Log
	gh, err := tracker.NewGitHub(h.client, gc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := h.cfg
	cfg.Tracker = gh
	return NewPost(cfg)
}

// withFreshState is another deployment: same repository and token, its own
// empty state.
func (h *postHarness) withFreshState() *postHarness {
	other := &postHarness{srv: h.srv, st: store.OpenMemory(), log: h.log, cfg: h.cfg, client: h.client, gh: h.gh, now: h.clock()}
	other.cfg.Store = other.st
	other.cfg.Now = other.clock
	return other
}

func (h *postHarness) run(t *testing.T, reports ...pipeline.Report) ([]pipeline.Outcome, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return pipeline.Collect(ctx, h.stage(t), reports...)
}

func (h *postHarness) runOne(t *testing.T, r pipeline.Report) pipeline.Outcome {
	t.Helper()
	out, err := h.run(t, r)
	return onlyOutcome(t, out, err)
}

// onlyOutcome is a one-report run's outcome; the run must not fail.
func onlyOutcome(t *testing.T, out []pipeline.Outcome, err error) pipeline.Outcome {
	t.Helper()
	if err != nil {
		t.Fatalf("post: %v", err)
	}
	if len(out) != 1 {
		t.Fatalf("want 1 outcome, got %d", len(out))
	}
	return out[0]
}

func (h *postHarness) state() *store.State {
	var copyOf store.State
	h.st.View(func(st *store.State) { copyOf = *st })
	return &copyOf
}

// postBody renders a body shaped like compose's, with trigger as the dossier.
func postBody(fp, trigger string) string {
	return "## Summary\n\nThe widget frobnicator panics.\n\n## Trigger\n\n" + trigger +
		"\n## Environment\n\nlinux/amd64\n---\n_Filed automatically. Intended label: `" + postTestLabel + "`._\n\n" +
		issue.FingerprintMarker(fp) + "\n" + issue.SelfAuthoredMarker + "\n"
}

func postReport(fp string) pipeline.Report {
	var r pipeline.Report
	r.Fingerprint = fp
	r.Event = "tool.failed"
	r.Count = 3
	r.FirstSeen = time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	r.LastSeen = time.Date(2025, 6, 1, 11, 0, 0, 0, time.UTC)
	r.Verdict = pipeline.VerdictNew
	r.Answer = &pipeline.Answer{Title: "frobnicator panics"}
	r.Title = "[self-diagnosed] frobnicator panics on " + fp
	r.Body = postBody(fp, "```\npanic: nil map\n```\n")
	r.Label = postTestLabel
	r.Repo = "acme/widgets"
	return r
}

func known(r pipeline.Report) pipeline.Report {
	r.Verdict = pipeline.VerdictKnown
	r.Answer, r.Title, r.Body = nil, "", ""
	return r
}

func TestPostFilesNewDefectOnceWithLabelAndMarker(t *testing.T) {
	h := newPostHarness(t, fakegh.Options{}, "")
	o := h.runOne(t, postReport("fp-aaa"))
	if o.Status != pipeline.StatusFiled || o.Number != 1 || o.URL != h.srv.URL()+"/acme/widgets/issues/1" {
		t.Fatalf("outcome %+v", o)
	}
	issues := h.srv.Issues()
	if len(issues) != 1 {
		t.Fatalf("%d issues", len(issues))
	}
	is := issues[0]
	if len(is.Labels) != 1 || is.Labels[0] != postTestLabel {
		t.Fatalf("labels %v", is.Labels)
	}
	if !strings.Contains(is.Body, issue.FingerprintMarker("fp-aaa")) || !strings.Contains(is.Body, issue.SelfAuthoredMarker) {
		t.Fatalf("markers missing from body:\n%s", is.Body)
	}
	if labels := h.srv.Labels(); len(labels) != 1 || labels[0].Color != "d93f0b" {
		t.Fatalf("the label should be created with its colour: %+v", labels)
	}
	st := h.state()
	if st.Reported.At("fp-aaa").Number != 1 || st.Issues.At("fp-aaa").Number != 1 || len(st.Intents) != 0 {
		t.Fatalf("state: reported %+v issues %+v intents %+v", st.Reported, st.Issues, st.Intents)
	}

	// Seen as new again (say, the persist stage never ran): the cache finds
	// the issue, nothing is filed twice.
	if o := h.runOne(t, postReport("fp-aaa")); o.Status != pipeline.StatusKnown || o.Number != 1 {
		t.Fatalf("second scan: %+v", o)
	}
	// A deployment with empty state finds it by its marker.
	other := h.withFreshState()
	if o := other.runOne(t, postReport("fp-aaa")); o.Status != pipeline.StatusKnown || o.Number != 1 {
		t.Fatalf("fresh state: %+v", o)
	}
	if h.srv.CountCreates() != 1 {
		t.Fatalf("CountCreates = %d, want 1", h.srv.CountCreates())
	}
}

func TestPostMarkerLookupUsesListEndpointNotSearch(t *testing.T) {
	h := newPostHarness(t, fakegh.Options{}, "")
	if _, err := h.run(t, postReport("fp-1"), postReport("fp-2")); err != nil {
		t.Fatal(err)
	}
	for _, r := range h.srv.Requests() {
		if strings.Contains(r.Path, "/search/") {
			t.Fatalf("search API used: %s", r.Path)
		}
	}
	lists := h.srv.RequestsTo(fakegh.RouteListIssues)
	if len(lists) == 0 || lists[0].Query.Get("state") != "all" || lists[0].Query.Get("labels") != postTestLabel ||
		lists[0].Query.Get("sort") != "created" || lists[0].Query.Get("direction") != "desc" {
		t.Fatalf("first lookup %+v", lists)
	}
	// One scan's index serves every fingerprint: label, creator and recent
	// queries each run once, not once per defect; each create adds one
	// check for a twin filed at the same moment (open issues, oldest first).
	lookups, twinChecks := 0, 0
	for _, l := range lists {
		if l.Query.Get("state") == "open" && l.Query.Get("direction") == "asc" {
			twinChecks++
		} else {
			lookups++
		}
	}
	if lookups != 3 || twinChecks != 2 {
		t.Fatalf("%d lookups and %d twin checks for two defects, want 3 and 2", lookups, twinChecks)
	}
}

// Two deployments that looked before either filed, then filed the same
// defect at the same moment: the later issue closes itself in favour of the
// earlier, its marker taken out so no lookup finds it again.
func TestPostTwinFiledAtTheSameMomentStandsDown(t *testing.T) {
	h := newPostHarness(t, fakegh.Options{}, "")
	h.cfg.TrustedAuthors = []string{"other-deployment"} // the fleet's other account
	// The other deployment's issue appears between our lookup and our create.
	h.srv.Inject(fakegh.RouteCreateIssue, fakegh.Fault{Before: func() {
		h.srv.AddIssue(fakegh.Issue{Title: "filed elsewhere", Body: postBody("fp-twin", "x"), Login: "other-deployment", Labels: []string{postTestLabel}})
	}})
	o := h.runOne(t, postReport("fp-twin"))
	if o.Status != pipeline.StatusKnown || o.Number != 1 {
		t.Fatalf("outcome %+v: want the earlier issue #1 recorded", o)
	}
	ours, _ := h.srv.Issue(2)
	if ours.State != "closed" || strings.Contains(ours.Body, issue.FingerprintMarker("fp-twin")) {
		t.Fatalf("our twin #2 stays findable: state %s, body %q", ours.State, ours.Body)
	}
	if c := h.srv.Comments(2); len(c) != 1 || !strings.Contains(c[0].Body, "#1") {
		t.Fatalf("the twin does not say which issue to follow: %+v", c)
	}
	// Later scans, on any deployment, find only #1.
	if o := h.withFreshState().runOne(t, postReport("fp-twin")); o.Number != 1 {
		t.Fatalf("a fresh deployment found %+v", o)
	}
}

func TestPostExistingOpenIssueKeepsOneOccurrenceComment(t *testing.T) {
	h := newPostHarness(t, fakegh.Options{}, "")
	h.cfg.TrustedAuthors = []string{"Other-Deployment"} // logins compare case-insensitively
	n := h.srv.AddIssue(fakegh.Issue{Title: "filed elsewhere", Body: postBody("fp-x", "x"), Login: "other-deployment", Labels: []string{postTestLabel}})

	o := h.runOne(t, postReport("fp-x"))
	if o.Status != pipeline.StatusKnown || o.Number != n || !strings.HasSuffix(o.URL, "/issues/1") {
		t.Fatalf("outcome %+v", o)
	}
	if h.srv.CountCreates() != 0 {
		t.Fatal("an issue was filed although one with the marker exists")
	}
	comments := h.srv.Comments(n)
	if len(comments) != 1 || !strings.Contains(comments[0].Body, "| Occurrences | 3 |") || !strings.Contains(comments[0].Body, "v1.2.3") {
		t.Fatalf("occurrence comment: %+v", comments)
	}

	// Ten minutes later: tallied locally, not edited (one edit an hour).
	h.advance(10 * time.Minute)
	h.runOne(t, known(postReport("fp-x")))
	if got := h.srv.Comments(n); len(got) != 1 || got[0].Body != comments[0].Body {
		t.Fatalf("edited within the hour: %+v", got)
	}
	if h.state().Issues.At("fp-x").Occurrences != 6 {
		t.Fatalf("tally %d, want 6", h.state().Issues.At("fp-x").Occurrences)
	}

	// Past the hour, with a new version: the same comment is edited.
	h.advance(time.Hour)
	h.cfg.Version = "v1.3.0"
	h.runOne(t, known(postReport("fp-x")))
	got := h.srv.Comments(n)
	if len(got) != 1 || !strings.Contains(got[0].Body, "| Occurrences | 9 |") || !strings.Contains(got[0].Body, "v1.2.3, v1.3.0") {
		t.Fatalf("after the hour: %+v", got)
	}
	if edits := h.srv.RequestsTo(fakegh.RouteEditComment); len(edits) != 1 {
		t.Fatalf("%d comment edits, want 1", len(edits))
	}
}

func TestPostOccurrenceCommentFoundAgainAfterLostState(t *testing.T) {
	h := newPostHarness(t, fakegh.Options{}, "")
	n := h.srv.AddIssue(fakegh.Issue{Title: "t", Body: postBody("fp-y", "x"), Login: "loop-bot", Labels: []string{postTestLabel}})
	h.runOne(t, postReport("fp-y"))
	first := h.srv.Comments(n)
	if len(first) != 1 {
		t.Fatalf("%d comments after the first sighting", len(first))
	}
	// State lost (a crash before the comment id was saved, say).
	h.st = store.OpenMemory()
	h.cfg.Store = h.st
	h.runOne(t, postReport("fp-y"))
	// The lost state took the deployment's id with it, so the comment
	// cannot tell this run from another deployment's: its sightings are
	// added to the earlier entry, never written over it (overwriting is
	// what made a fleet's totals go backwards).
	got := h.srv.Comments(n)
	if len(got) != 1 || got[0].ID != first[0].ID || !strings.Contains(got[0].Body, "| Occurrences | 6 |") ||
		!strings.Contains(got[0].Body, "| Deployments reporting | 2 |") {
		t.Fatalf("want the one comment edited with both entries, got %+v", got)
	}
}

// occurrenceCount is the visible total in an occurrence comment, or -1.
func occurrenceCount(t *testing.T, body string) int {
	t.Helper()
	m := regexp.MustCompile(`\| Occurrences \| (\d+) \|`).FindStringSubmatch(body)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func TestPostFleetOccurrenceCommentShowsTheFleetTotals(t *testing.T) {
	a := newPostHarness(t, fakegh.Options{}, "")
	a.cfg.TrustedAuthors = []string{"other-deployment"}
	n := a.srv.AddIssue(fakegh.Issue{Title: "filed elsewhere", Body: postBody("fp-f", "x"), Login: "other-deployment", Labels: []string{postTestLabel}})
	b := a.withFreshState()
	b.cfg.Version = "v2.0.0"
	var shown []int
	comment := func() fakegh.Comment {
		t.Helper()
		cs := a.srv.Comments(n)
		if len(cs) != 1 {
			t.Fatalf("%d comments, want one occurrence comment", len(cs))
		}
		shown = append(shown, occurrenceCount(t, cs[0].Body))
		return cs[0]
	}

	a.runOne(t, postReport("fp-f")) // 3 sightings, 10:00–11:00
	comment()

	// Ten minutes later another deployment edits the same comment: its own
	// hourly budget is untouched by a's edit.
	b.advance(10 * time.Minute)
	r := postReport("fp-f")
	r.Count, r.FirstSeen, r.LastSeen = 2, time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC), time.Date(2025, 6, 1, 11, 30, 0, 0, time.UTC)
	b.runOne(t, r)
	c := comment()
	for _, want := range []string{"| Occurrences | 5 |", "| Deployments reporting | 2 |", "| First seen | 2025-06-01T09:00:00Z |",
		"| Last seen | 2025-06-01T11:30:00Z |", "v1.2.3", "v2.0.0"} {
		if !strings.Contains(c.Body, want) {
			t.Fatalf("fleet totals lack %q:\n%s", want, c.Body)
		}
	}

	// a, within its hour: counted, not written.
	a.advance(20 * time.Minute)
	a.runOne(t, known(postReport("fp-f")))
	if comment().Body != c.Body {
		t.Fatal("a deployment edited twice within the hour")
	}
	// An hour on, a's edit adds to b's entry instead of replacing it.
	a.advance(time.Hour)
	a.runOne(t, known(postReport("fp-f")))
	if c := comment(); !strings.Contains(c.Body, "| Occurrences | 11 |") || !strings.Contains(c.Body, "| Deployments reporting | 2 |") {
		t.Fatalf("after a's second edit:\n%s", c.Body)
	}
	if !slices.Equal(shown, []int{3, 5, 5, 11}) {
		t.Fatalf("visible counts %v, want 3 5 5 11", shown)
	}
	if creates := a.srv.RequestsTo(fakegh.RouteCreateComment); len(creates) != 1 {
		t.Fatalf("%d comments created, want 1", len(creates))
	}

	// Each deployment's id is random, kept in its state, and the only
	// thing the public tally says about it.
	idA, idB := a.state().Deployment, b.state().Deployment
	hexID := regexp.MustCompile(`^[0-9a-f]{32}$`)
	if !hexID.MatchString(idA) || !hexID.MatchString(idB) || idA == idB {
		t.Fatalf("deployment ids %q and %q", idA, idB)
	}
	body := a.srv.Comments(n)[0].Body
	if !strings.Contains(body, `"`+idA+`":{"count":9`) || !strings.Contains(body, `"`+idB+`":{"count":2`) {
		t.Fatalf("tally does not hold each deployment's own count:\n%s", body)
	}
	if host, _ := os.Hostname(); host != "" && strings.Contains(body, host) {
		t.Fatalf("the public comment names the host %q", host)
	}
}

func TestPostOccurrenceTallyEditedByAHumanNeverFailsThePost(t *testing.T) {
	head := issue.OccurrenceMarker("fp-h") + "\nedited by hand\n"
	cases := []struct {
		name, body         string
		count, deployments int
		has                []string
	}{
		{"no tally", head + "| Occurrences | 40 |", 3, 1, nil},
		{"broken JSON", head + `<!-- the-loop-diagnose tally:{"deployments":{"aaaa":{"count":4 -->`, 3, 1, nil},
		{"not an object", head + `<!-- the-loop-diagnose tally:[1,2,3] -->`, 3, 1, nil},
		{"some entries mangled", head + `<!-- the-loop-diagnose tally:{"deployments":{` +
			`"aaaa":{"count":4,"first":"2025-05-01T00:00:00Z"},` +
			`"bad id!":{"count":7},` +
			`"bbbb":{"count":"lots"},` +
			`"cccc":{"count":2,"first":"yesterday","last":17,"versions":[1,"v0.9",null]},` +
			`"dddd":{"count":-5}}} -->`,
			9, 3, []string{"| First seen | 2025-05-01T00:00:00Z |", "v0.9"}},
		{"reformatted across lines", head + "<!--  the-loop-diagnose tally:{\n  \"deployments\": {\"aaaa\": {\"count\": 4}}\n}\n-->", 7, 2, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newPostHarness(t, fakegh.Options{}, "")
			n := h.srv.AddIssue(fakegh.Issue{Title: "t", Body: postBody("fp-h", "x"), Login: "loop-bot", Labels: []string{postTestLabel}})
			id := h.srv.AddComment(n, "loop-bot", tc.body)
			if o := h.runOne(t, postReport("fp-h")); o.Status != pipeline.StatusKnown {
				t.Fatalf("outcome %+v", o)
			}
			cs := h.srv.Comments(n)
			if len(cs) != 1 || cs[0].ID != id {
				t.Fatalf("want the hand-edited comment edited in place, got %d comments", len(cs))
			}
			if got := occurrenceCount(t, cs[0].Body); got != tc.count ||
				!strings.Contains(cs[0].Body, fmt.Sprintf("| Deployments reporting | %d |", tc.deployments)) {
				t.Fatalf("count %d, want %d with %d deployments:\n%s", got, tc.count, tc.deployments, cs[0].Body)
			}
			for _, w := range tc.has {
				if !strings.Contains(cs[0].Body, w) {
					t.Fatalf("lacks %q:\n%s", w, cs[0].Body)
				}
			}
			// What was written reads back whole.
			if tally := issue.ParseTally(cs[0].Body); tally.Totals().Count != tc.count {
				t.Fatalf("written tally reads back as %+v", tally)
			}
		})
	}
}

func TestPostDeletedOccurrenceCommentIsRecreated(t *testing.T) {
	t.Run("deleted before the scan", func(t *testing.T) {
		h := newPostHarness(t, fakegh.Options{}, "")
		n := h.srv.AddIssue(fakegh.Issue{Title: "t", Body: postBody("fp-d", "x"), Login: "loop-bot", Labels: []string{postTestLabel}})
		// The state remembers a comment a maintainer has since deleted.
		h.st.Mutate(func(st *store.State) {
			st.Issues.Set("fp-d", store.IssueRef{Number: n, State: "open", CommentID: 4242, CommentEditedAt: h.clock().Add(-2 * time.Hour), Occurrences: 5})
		})
		h.runOne(t, postReport("fp-d"))
		cs := h.srv.Comments(n)
		if len(cs) != 1 || occurrenceCount(t, cs[0].Body) != 8 {
			t.Fatalf("want one fresh comment with this deployment's 8 sightings, got %+v", cs)
		}
		if edits := h.srv.RequestsTo(fakegh.RouteEditComment); len(edits) != 0 {
			t.Fatalf("edited a comment known to be gone: %+v", edits)
		}
		if got := h.state().Issues.At("fp-d").CommentID; got != cs[0].ID {
			t.Fatalf("state keeps comment %d, want %d", got, cs[0].ID)
		}
	})
	t.Run("deleted between read and edit", func(t *testing.T) {
		h := newPostHarness(t, fakegh.Options{}, "")
		n := h.srv.AddIssue(fakegh.Issue{Title: "t", Body: postBody("fp-d", "x"), Login: "loop-bot", Labels: []string{postTestLabel}})
		other := h.withFreshState()
		other.runOne(t, postReport("fp-d"))
		h.runOne(t, postReport("fp-d")) // the comment now tallies 3 + 3
		h.advance(2 * time.Hour)
		h.srv.Inject(fakegh.RouteEditComment, fakegh.Fault{Status: http.StatusNotFound, Message: "Not Found"})
		if o := h.runOne(t, known(postReport("fp-d"))); o.Status != pipeline.StatusKnown {
			t.Fatalf("outcome %+v", o)
		}
		cs := h.srv.Comments(n)
		latest := cs[len(cs)-1]
		// The fresh comment keeps the other deployment's entry it just read.
		if occurrenceCount(t, latest.Body) != 9 || !strings.Contains(latest.Body, "| Deployments reporting | 2 |") {
			t.Fatalf("recreated comment:\n%s", latest.Body)
		}
		if got := h.state().Issues.At("fp-d").CommentID; got != latest.ID || got == cs[0].ID {
			t.Fatalf("state keeps comment %d, want the new %d", got, latest.ID)
		}
	})
}

func TestPostAmbiguousCreateIsReconciledNotDuplicated(t *testing.T) {
	for name, fault := range map[string]fakegh.Fault{
		"5xx after create":     fakegh.ServerErrorAfter(502),
		"timeout after create": fakegh.SlowAfter(2 * time.Second),
	} {
		t.Run(name, func(t *testing.T) {
			h := newPostHarness(t, fakegh.Options{}, "")
			h.gh.CallTimeout = 200 * time.Millisecond
			h.srv.Inject(fakegh.RouteCreateIssue, fault)
			o := h.runOne(t, postReport("fp-amb"))
			if o.Status != pipeline.StatusFiled || o.Number != 1 {
				t.Fatalf("outcome %+v", o)
			}
			if h.srv.CountCreates() != 1 || len(h.srv.Issues()) != 1 {
				t.Fatalf("duplicate: %d creates", h.srv.CountCreates())
			}
			if len(h.state().Intents) != 0 || h.state().Reported.At("fp-amb").Number != 1 {
				t.Fatalf("state not reconciled: %+v", h.state())
			}
		})
	}
}

// A create that fails in a way that leaves its outcome unknown (a 5xx) is
// never sent again blind: the scan looks for it, and when GitHub does not
// list it the defect waits, uncharged, with its intent in doubt. Only after
// CreateSettle with nothing listed is it created again; an applied create
// behind a 5xx is found, not repeated.
func TestPostNeverRepeatsACreateBlind(t *testing.T) {
	h := newPostHarness(t, fakegh.Options{}, "")
	h.srv.Inject(fakegh.RouteCreateIssue, fakegh.ServerError(500), fakegh.ServerErrorAfter(502))
	o := h.runOne(t, postReport("fp-5"))
	if o.Status != pipeline.StatusDeferred || o.Wait == nil || o.Wait.For != pipeline.WaitGitHub || o.Error != "" {
		t.Fatalf("a create in doubt: outcome %+v, want deferred, waiting for GitHub", o)
	}
	if in := h.state().Intents["fp-5"]; !in.InDoubt {
		t.Fatalf("the intent is not marked in doubt: %+v", in)
	}
	// Within CreateSettle: looked for, not sent.
	h.now = h.now.Add(time.Minute)
	if o = h.runOne(t, postReport("fp-5")); o.Status != pipeline.StatusDeferred {
		t.Fatalf("within the settle time: %+v", o)
	}
	if n := len(h.srv.RequestsTo(fakegh.RouteCreateIssue)); n != 1 {
		t.Fatalf("%d create requests within the settle time, want 1", n)
	}
	// Past it, nothing listed: created again; that create's 5xx came after
	// the work, and the lookup finds the issue.
	h.now = h.now.Add(postCreateSettle)
	if o = h.runOne(t, postReport("fp-5")); o.Status != pipeline.StatusFiled || o.Number != 1 {
		t.Fatalf("after the settle time: %+v", o)
	}
	if n := len(h.srv.RequestsTo(fakegh.RouteCreateIssue)); n != 2 || h.srv.CountCreates() != 1 || len(h.state().Intents) != 0 {
		t.Fatalf("%d create requests, %d issues, intents %v", n, h.srv.CountCreates(), h.state().Intents)
	}
}

// GitHub down past the retries (a list that keeps failing) is an outage:
// this defect and the rest of the scan wait, nothing is counted as a
// failure, and no later report asks GitHub anything.
func TestPostOutageDefersTheRestOfTheScan(t *testing.T) {
	h := newPostHarness(t, fakegh.Options{}, "")
	h.gh.Retries = 1
	h.srv.Inject(fakegh.RouteListIssues, fakegh.ServerError(503), fakegh.ServerError(503))
	out, err := h.run(t, postReport("fp-1"), postReport("fp-2"))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out {
		if o.Status != pipeline.StatusDeferred || o.Wait == nil || o.Error != "" || !strings.Contains(o.Reason, "waiting for GitHub") {
			t.Fatalf("outcome %+v, want deferred waiting for GitHub", o)
		}
	}
	if n := len(h.srv.RequestsTo(fakegh.RouteListIssues)); n != 2 || h.srv.CountCreates() != 0 {
		t.Fatalf("%d list requests, %d creates: the scan kept asking GitHub", n, h.srv.CountCreates())
	}
}

func TestPostRateLimits(t *testing.T) {
	t.Run("secondary without Retry-After waits SecondaryWait", func(t *testing.T) {
		h := newPostHarness(t, fakegh.Options{}, "")
		h.gh.SecondaryWait = 150 * time.Millisecond
		h.srv.Inject(fakegh.RouteListIssues, fakegh.SecondaryRateLimit(-1))
		o := h.runOne(t, postReport("fp-s"))
		if o.Status != pipeline.StatusFiled {
			t.Fatalf("outcome %+v", o)
		}
		lists := h.srv.RequestsTo(fakegh.RouteListIssues)
		if len(lists) < 2 || lists[1].At.Sub(lists[0].At) < 150*time.Millisecond {
			t.Fatalf("the wait was not honoured: %d lists", len(lists))
		}
	})
	t.Run("secondary Retry-After is honoured", func(t *testing.T) {
		h := newPostHarness(t, fakegh.Options{}, "")
		h.srv.Inject(fakegh.RouteListIssues, fakegh.SecondaryRateLimit(time.Second))
		o := h.runOne(t, postReport("fp-s"))
		lists := h.srv.RequestsTo(fakegh.RouteListIssues)
		if o.Status != pipeline.StatusFiled || len(lists) < 2 || lists[1].At.Sub(lists[0].At) < time.Second {
			t.Fatalf("outcome %+v, %d lists", o, len(lists))
		}
	})
	// A secondary limit on a create is GitHub refusing, in each of its
	// shapes: it is sent again after the wait GitHub asks for, never in
	// doubt, and files one issue.
	for name, fault := range map[string]fakegh.Fault{
		"403 Retry-After":              fakegh.SecondaryRateLimit(time.Second),
		"429 Retry-After":              fakegh.SecondaryRateLimitAs(http.StatusTooManyRequests, time.Second, -1),
		"403 x-ratelimit-remaining: 0": fakegh.SecondaryRateLimitAs(http.StatusForbidden, -1, time.Second),
		"429 x-ratelimit-remaining: 0": fakegh.SecondaryRateLimitAs(http.StatusTooManyRequests, -1, time.Second),
	} {
		t.Run("a secondary limit on a create is sent again after the wait: "+name, func(t *testing.T) {
			h := newPostHarness(t, fakegh.Options{}, "")
			h.srv.Inject(fakegh.RouteCreateIssue, fault)
			o := h.runOne(t, postReport("fp-s"))
			creates := h.srv.RequestsTo(fakegh.RouteCreateIssue)
			if o.Status != pipeline.StatusFiled || len(creates) != 2 || h.srv.CountCreates() != 1 || len(h.state().Intents) != 0 {
				t.Fatalf("outcome %+v, %d create requests, %d issues, intents %+v", o, len(creates), h.srv.CountCreates(), h.state().Intents)
			}
			// x-ratelimit-reset has one-second resolution.
			resume := creates[0].At.Add(time.Second).Truncate(time.Second)
			if fault.Header.Get("Retry-After") != "" {
				resume = creates[0].At.Add(time.Second)
			}
			if creates[1].At.Before(resume) {
				t.Fatalf("sent again at %v, before %v, when GitHub asked", creates[1].At, resume)
			}
		})
	}
	t.Run("primary waits for x-ratelimit-reset", func(t *testing.T) {
		h := newPostHarness(t, fakegh.Options{}, "")
		h.srv.Inject(fakegh.RouteCreateIssue, fakegh.PrimaryRateLimit(time.Second))
		o := h.runOne(t, postReport("fp-p"))
		creates := h.srv.RequestsTo(fakegh.RouteCreateIssue)
		if o.Status != pipeline.StatusFiled || len(creates) != 2 {
			t.Fatalf("outcome %+v, %d creates", o, len(creates))
		}
		reset := creates[0].At.Add(time.Second).Truncate(time.Second)
		if creates[1].At.Before(reset) {
			t.Fatalf("retried at %v, before the reset %v", creates[1].At, reset)
		}
	})
	t.Run("a wait beyond MaxWait defers the rest of the scan", func(t *testing.T) {
		h := newPostHarness(t, fakegh.Options{}, "")
		h.gh.MaxWait = 100 * time.Millisecond
		h.srv.Inject(fakegh.RouteCreateIssue, fakegh.SecondaryRateLimit(2*time.Minute))
		out, err := h.run(t, postReport("fp-1"), postReport("fp-2"), known(postReport("fp-3")))
		if err != nil {
			t.Fatal(err)
		}
		if out[0].Status != pipeline.StatusDeferred || out[1].Status != pipeline.StatusDeferred || out[2].Status != pipeline.StatusKnown {
			t.Fatalf("statuses %s %s %s", out[0].Status, out[1].Status, out[2].Status)
		}
		if !strings.Contains(out[1].Reason, "rate limit") || out[0].Error != "" {
			t.Fatalf("deferral must not read as a failure: %+v", out[1])
		}
		if n := len(h.srv.RequestsTo(fakegh.RouteCreateIssue)); n != 1 || h.srv.CountCreates() != 0 {
			t.Fatalf("%d create requests after the deferral", n)
		}
	})
}

func TestPostSetupFailuresStopTheScan(t *testing.T) {
	cases := []struct {
		name   string
		route  fakegh.Route
		fault  fakegh.Fault
		status int
		cause  string
	}{
		{"401", fakegh.RouteUser, fakegh.Unauthorized(), 401, "token was rejected"},
		{"404", fakegh.RouteListIssues, fakegh.RepoNotFound(), 404, "was not found"},
		{"410", fakegh.RouteListIssues, fakegh.IssuesDisabled(), 410, "issues are disabled"},
		{"403", fakegh.RouteCreateIssue, fakegh.NoPermission(), 403, "may not create issues"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newPostHarness(t, fakegh.Options{}, "")
			h.srv.Inject(tc.route, tc.fault)
			out, err := h.run(t, postReport("fp-1"), postReport("fp-2"))
			var se *pipeline.SetupError
			if !errors.As(err, &se) || se.Status != tc.status || !strings.Contains(se.Cause, tc.cause) || se.Fix == "" {
				t.Fatalf("want a SetupError %d about %q, got %v", tc.status, tc.cause, err)
			}
			if len(out) != 0 {
				t.Fatalf("a setup failure must not produce outcomes (they would count as retries): %+v", out)
			}
			if n := len(h.srv.RequestsTo(tc.route)); n != 1 {
				t.Fatalf("setup failure retried: %d requests", n)
			}
		})
	}
	t.Run("wrong token never appears", func(t *testing.T) {
		h := newPostHarness(t, fakegh.Options{}, "ghp_SuperSecretValue123")
		_, err := h.run(t, postReport("fp-1"))
		var se *pipeline.SetupError
		if !errors.As(err, &se) || se.Status != 401 {
			t.Fatalf("want 401 SetupError, got %v", err)
		}
		if strings.Contains(err.Error(), "SuperSecret") || strings.Contains(h.log.String(), "SuperSecret") {
			t.Fatal("the token leaked into an error or a log line")
		}
	})
	t.Run("read-only token", func(t *testing.T) {
		h := newPostHarness(t, fakegh.Options{Tokens: map[string]fakegh.Token{"ro": {Login: "reader", ReadOnly: true}}}, "ro")
		_, err := h.run(t, postReport("fp-1"))
		var se *pipeline.SetupError
		if !errors.As(err, &se) || se.Status != 403 {
			t.Fatalf("want 403 SetupError, got %v", err)
		}
	})
}

func TestPostValidationFailureFailsWithoutRetry(t *testing.T) {
	h := newPostHarness(t, fakegh.Options{}, "")
	h.srv.Inject(fakegh.RouteCreateIssue, fakegh.Unprocessable("body is invalid"))
	out, err := h.run(t, postReport("fp-422"), postReport("fp-ok"))
	if err != nil {
		t.Fatal(err)
	}
	if out[0].Status != pipeline.StatusFailed || !strings.Contains(out[0].Error, "422") {
		t.Fatalf("outcome %+v", out[0])
	}
	if out[1].Status != pipeline.StatusFiled {
		t.Fatalf("the next defect must still be filed: %+v", out[1])
	}
	if n := len(h.srv.RequestsTo(fakegh.RouteCreateIssue)); n != 2 {
		t.Fatalf("%d create requests, want 2 (no retry of the 422)", n)
	}
}

func TestPostCutsOversizedBodyKeepingMarkers(t *testing.T) {
	h := newPostHarness(t, fakegh.Options{}, "")
	r := postReport("fp-big")
	r.Body = postBody("fp-big", "```\n"+strings.Repeat("log line é\n", 12000)+"```\n")
	r.Title = strings.Repeat("t", 400)
	o := h.runOne(t, r)
	if o.Status != pipeline.StatusFiled {
		t.Fatalf("outcome %+v", o)
	}
	is := h.srv.Issues()[0]
	if n := utf8.RuneCountInString(is.Body); n > tracker.MaxBody {
		t.Fatalf("body %d characters", n)
	}
	if utf8.RuneCountInString(is.Title) > tracker.MaxTitle {
		t.Fatal("title too long")
	}
	for _, want := range []string{issue.FingerprintMarker("fp-big"), issue.SelfAuthoredMarker, "was cut to fit", "## Environment", "## Summary"} {
		if !strings.Contains(is.Body, want) {
			t.Fatalf("body lost %q", want)
		}
	}
	if strings.Count(is.Body, "```")%2 != 0 {
		t.Fatal("a code fence was left open")
	}
}

func TestPostDroppedLabelLoggedOnce(t *testing.T) {
	h := newPostHarness(t, fakegh.Options{Tokens: map[string]fakegh.Token{"weak": {Login: "drive-by"}}}, "weak")
	out, err := h.run(t, postReport("fp-1"), postReport("fp-2"))
	if err != nil {
		t.Fatal(err)
	}
	if out[0].Status != pipeline.StatusFiled || out[1].Status != pipeline.StatusFiled {
		t.Fatalf("outcomes %+v", out)
	}
	for _, is := range h.srv.Issues() {
		if len(is.Labels) != 0 {
			t.Fatalf("fake kept labels: %v", is.Labels)
		}
	}
	if n := strings.Count(h.log.String(), "did not apply the label"); n != 1 {
		t.Fatalf("label warning logged %d times:\n%s", n, h.log.String())
	}
	if n := len(h.srv.RequestsTo(fakegh.RouteCreateLabel)); n != 1 {
		t.Fatalf("label creation tried %d times", n)
	}
	// Without the label, the creator query still finds our issues.
	fresh := h.withFreshState()
	if o := fresh.runOne(t, postReport("fp-2")); o.Status != pipeline.StatusKnown || h.srv.CountCreates() != 2 {
		t.Fatalf("unlabelled issue not found: %+v, %d creates", o, h.srv.CountCreates())
	}
}

func TestPostHonoursCancellationDuringBackoff(t *testing.T) {
	h := newPostHarness(t, fakegh.Options{}, "")
	h.gh.BackoffBase = time.Hour
	h.srv.Inject(fakegh.RouteListIssues, fakegh.ServerError(503))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := pipeline.Collect(ctx, h.stage(t), postReport("fp-1"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want the context's error, got %v", err)
	}
}

func TestPostSpacesWrites(t *testing.T) {
	h := newPostHarness(t, fakegh.Options{}, "")
	h.gh.WriteSpacing = 120 * time.Millisecond
	if _, err := h.run(t, postReport("fp-1"), postReport("fp-2")); err != nil {
		t.Fatal(err)
	}
	var writes []fakegh.Request
	for _, r := range h.srv.Requests() {
		if r.Method != http.MethodGet {
			writes = append(writes, r)
		}
	}
	if len(writes) != 3 { // the label, then two issues
		t.Fatalf("%d writes", len(writes))
	}
	for i := 1; i < len(writes); i++ {
		if gap := writes[i].At.Sub(writes[i-1].At); gap < 120*time.Millisecond {
			t.Fatalf("writes %d and %d only %v apart", i-1, i, gap)
		}
	}
}
