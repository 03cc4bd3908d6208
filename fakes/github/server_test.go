package github_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"

	fakegh "github.com/the-loop/the-loop-diagnose/fakes/github"
)

func newClient(t *testing.T, srv *fakegh.Server, token string) *github.Client {
	t.Helper()
	c, err := github.NewClient(nil).WithAuthToken(token).WithEnterpriseURLs(srv.APIURL(), srv.APIURL())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func start(t *testing.T, opts fakegh.Options) (*fakegh.Server, *github.Client) {
	t.Helper()
	srv := fakegh.New(opts)
	t.Cleanup(srv.Close)
	return srv, newClient(t, srv, "test-token")
}

func TestCreateGetEditIssueRoundTrip(t *testing.T) {
	srv, c := start(t, fakegh.Options{})
	ctx := context.Background()
	is, resp, err := c.Issues.Create(ctx, "acme", "widgets", &github.IssueRequest{
		Title: github.String("boom"), Body: github.String("body"), Labels: &[]string{"bug"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusCreated || is.GetNumber() != 1 || is.GetState() != "open" {
		t.Fatalf("create: status %d, issue %+v", resp.StatusCode, is)
	}
	if is.GetUser().GetLogin() != "loop-bot" || len(is.Labels) != 1 || is.Labels[0].GetName() != "bug" {
		t.Fatalf("create: user %q labels %v", is.GetUser().GetLogin(), is.Labels)
	}
	if want := srv.URL() + "/acme/widgets/issues/1"; is.GetHTMLURL() != want {
		t.Fatalf("html_url %q, want %q", is.GetHTMLURL(), want)
	}
	if is.IsPullRequest() {
		t.Fatal("an issue must not look like a pull request")
	}
	got, _, err := c.Issues.Get(ctx, "acme", "widgets", 1)
	if err != nil || got.GetBody() != "body" {
		t.Fatalf("get: %v %+v", err, got)
	}
	closed, _, err := c.Issues.Edit(ctx, "acme", "widgets", 1, &github.IssueRequest{
		State: github.String("closed"), StateReason: github.String("not_planned"),
	})
	if err != nil || closed.GetState() != "closed" || closed.GetStateReason() != "not_planned" {
		t.Fatalf("close: %v state %q reason %q", err, closed.GetState(), closed.GetStateReason())
	}
	reopened, _, err := c.Issues.Edit(ctx, "acme", "widgets", 1, &github.IssueRequest{State: github.String("open")})
	if err != nil || reopened.GetState() != "open" || reopened.GetStateReason() != "reopened" {
		t.Fatalf("reopen: %v state %q reason %q", err, reopened.GetState(), reopened.GetStateReason())
	}
	if srv.CountCreates() != 1 {
		t.Fatalf("CountCreates = %d", srv.CountCreates())
	}
}

func TestListIssuesFiltersSortsAndPaginates(t *testing.T) {
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	srv, c := start(t, fakegh.Options{})
	for i := range 7 {
		srv.AddIssue(fakegh.Issue{Title: "t", Labels: []string{"auto"}, Login: "loop-bot", CreatedAt: base.Add(time.Duration(i) * time.Hour)})
	}
	srv.AddIssue(fakegh.Issue{Title: "unlabelled", Login: "human", CreatedAt: base.Add(100 * time.Hour)})
	srv.SetIssueState(2, "closed", "completed")

	ctx := context.Background()
	opts := &github.IssueListByRepoOptions{State: "all", Labels: []string{"auto"}, Sort: "created", Direction: "desc", ListOptions: github.ListOptions{PerPage: 3}}
	var numbers []int
	pages := 0
	for {
		list, resp, err := c.Issues.ListByRepo(ctx, "acme", "widgets", opts)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, is := range list {
			numbers = append(numbers, is.GetNumber())
		}
		if resp.NextPage == 0 {
			if resp.FirstPage != 1 || resp.PrevPage != 2 {
				t.Fatalf("last page links: first %d prev %d", resp.FirstPage, resp.PrevPage)
			}
			break
		}
		if pages == 1 && resp.LastPage != 3 {
			t.Fatalf("LastPage = %d, want 3", resp.LastPage)
		}
		opts.Page = resp.NextPage
	}
	if want := []int{7, 6, 5, 4, 3, 2, 1}; !equal(numbers, want) {
		t.Fatalf("numbers %v, want %v", numbers, want)
	}

	open, _, err := c.Issues.ListByRepo(ctx, "acme", "widgets", &github.IssueListByRepoOptions{Creator: "human"})
	if err != nil || len(open) != 1 || open[0].GetTitle() != "unlabelled" {
		t.Fatalf("creator filter: %v %v", err, open)
	}
	closed, _, err := c.Issues.ListByRepo(ctx, "acme", "widgets", &github.IssueListByRepoOptions{State: "closed"})
	if err != nil || len(closed) != 1 || closed[0].GetNumber() != 2 || closed[0].GetStateReason() != "completed" {
		t.Fatalf("closed filter: %v %v", err, closed)
	}
	asc, _, err := c.Issues.ListByRepo(ctx, "acme", "widgets", &github.IssueListByRepoOptions{Direction: "asc"})
	if err != nil || asc[0].GetNumber() != 1 {
		t.Fatalf("asc: %v first %d", err, asc[0].GetNumber())
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCommentsAndLabels(t *testing.T) {
	srv, c := start(t, fakegh.Options{})
	ctx := context.Background()
	n := srv.AddIssue(fakegh.Issue{Title: "x"})
	cm, _, err := c.Issues.CreateComment(ctx, "acme", "widgets", n, &github.IssueComment{Body: github.String("first")})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Issues.EditComment(ctx, "acme", "widgets", cm.GetID(), &github.IssueComment{Body: github.String("edited")}); err != nil {
		t.Fatal(err)
	}
	list, _, err := c.Issues.ListComments(ctx, "acme", "widgets", n, nil)
	if err != nil || len(list) != 1 || list[0].GetBody() != "edited" {
		t.Fatalf("comments: %v %v", err, list)
	}
	if got := srv.Comments(n); len(got) != 1 || got[0].Body != "edited" || got[0].Login != "loop-bot" {
		t.Fatalf("Comments(): %+v", got)
	}

	_, _, err = c.Issues.GetLabel(ctx, "acme", "widgets", "the-loop: self-diagnosed")
	if status(err) != http.StatusNotFound {
		t.Fatalf("missing label: %v", err)
	}
	if _, _, err := c.Issues.CreateLabel(ctx, "acme", "widgets", &github.Label{Name: github.String("the-loop: self-diagnosed"), Color: github.String("b60205")}); err != nil {
		t.Fatal(err)
	}
	l, _, err := c.Issues.GetLabel(ctx, "acme", "widgets", "the-loop: self-diagnosed")
	if err != nil || l.GetColor() != "b60205" {
		t.Fatalf("label: %v %+v", err, l)
	}
	_, _, err = c.Issues.CreateLabel(ctx, "acme", "widgets", &github.Label{Name: github.String("The-Loop: Self-Diagnosed")})
	if status(err) != http.StatusUnprocessableEntity {
		t.Fatalf("duplicate label: %v", err)
	}
}

func status(err error) int {
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.StatusCode
	}
	return 0
}

func TestTokenWithoutTriageLosesLabelsSilently(t *testing.T) {
	srv := fakegh.New(fakegh.Options{Tokens: map[string]fakegh.Token{"weak": {Login: "drive-by"}}})
	t.Cleanup(srv.Close)
	c := newClient(t, srv, "weak")
	ctx := context.Background()
	is, _, err := c.Issues.Create(ctx, "acme", "widgets", &github.IssueRequest{Title: github.String("t"), Labels: &[]string{"bug"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(is.Labels) != 0 {
		t.Fatalf("labels should be dropped, got %v", is.Labels)
	}
	_, _, err = c.Issues.CreateLabel(ctx, "acme", "widgets", &github.Label{Name: github.String("bug")})
	if status(err) != http.StatusForbidden {
		t.Fatalf("label create without triage: %v", err)
	}
	// An author may not reopen what a maintainer closed.
	srv.SetIssueState(is.GetNumber(), "closed", "completed")
	_, _, err = c.Issues.Edit(ctx, "acme", "widgets", is.GetNumber(), &github.IssueRequest{State: github.String("open")})
	if status(err) != http.StatusForbidden {
		t.Fatalf("reopen of maintainer-closed issue: %v", err)
	}
}

func TestAuthentication(t *testing.T) {
	srv, _ := start(t, fakegh.Options{})
	bad := newClient(t, srv, "wrong")
	_, _, err := bad.Users.Get(context.Background(), "")
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response.StatusCode != http.StatusUnauthorized || er.Message != "Bad credentials" {
		t.Fatalf("wrong token: %v", err)
	}
	anon, _ := github.NewClient(nil).WithEnterpriseURLs(srv.APIURL(), srv.APIURL())
	if _, _, err := anon.Users.Get(context.Background(), ""); status(err) != http.StatusUnauthorized {
		t.Fatalf("no token: %v", err)
	}
	if strings.Contains(err.Error(), "wrong") {
		t.Fatalf("error leaks the token: %v", err)
	}
	good := newClient(t, srv, "test-token")
	u, _, err := good.Users.Get(context.Background(), "")
	if err != nil || u.GetLogin() != "loop-bot" {
		t.Fatalf("/user: %v %v", err, u)
	}
	// Both schemes GitHub accepts.
	req, _ := http.NewRequest("GET", srv.APIURL()+"user", nil)
	req.Header.Set("Authorization", "token test-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("token scheme: %v %v", err, resp)
	}
	resp.Body.Close()
}

func TestOutsidePrefixIs404(t *testing.T) {
	srv, _ := start(t, fakegh.Options{})
	c, _ := github.NewClient(nil).WithAuthToken("test-token").WithEnterpriseURLs(srv.APIURL(), srv.APIURL())
	// A client whose base lacks the prefix must not reach the handlers.
	c.BaseURL.Path = "/"
	_, _, err := c.Issues.Get(context.Background(), "acme", "widgets", 1)
	if status(err) != http.StatusNotFound {
		t.Fatalf("outside prefix: %v", err)
	}
	if got := srv.Requests(); len(got) != 1 || got[0].Route != "" {
		t.Fatalf("recorded %+v", got)
	}
}

func TestWrongRepoAndDisabledIssues(t *testing.T) {
	srv, c := start(t, fakegh.Options{})
	ctx := context.Background()
	_, _, err := c.Issues.Create(ctx, "acme", "nope", &github.IssueRequest{Title: github.String("t")})
	if status(err) != http.StatusNotFound {
		t.Fatalf("wrong repo: %v", err)
	}
	srv.SetIssuesDisabled(true)
	_, _, err = c.Issues.Create(ctx, "acme", "widgets", &github.IssueRequest{Title: github.String("t")})
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response.StatusCode != http.StatusGone || er.Message != "Issues are disabled for this repo" {
		t.Fatalf("disabled: %v", err)
	}
}

func TestValidationLimits(t *testing.T) {
	srv, c := start(t, fakegh.Options{})
	ctx := context.Background()
	cases := map[string]*github.IssueRequest{
		"long title": {Title: github.String(strings.Repeat("é", fakegh.MaxTitle+1))},
		"long body":  {Title: github.String("t"), Body: github.String(strings.Repeat("x", fakegh.MaxBody+1))},
		"no title":   {Body: github.String("b")},
	}
	for name, req := range cases {
		_, _, err := c.Issues.Create(ctx, "acme", "widgets", req)
		var er *github.ErrorResponse
		if !errors.As(err, &er) || er.Response.StatusCode != http.StatusUnprocessableEntity || er.Message != "Validation Failed" || len(er.Errors) != 1 {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Exactly at the limits is fine; the limit counts characters, not bytes.
	if _, _, err := c.Issues.Create(ctx, "acme", "widgets", &github.IssueRequest{
		Title: github.String(strings.Repeat("é", fakegh.MaxTitle)), Body: github.String(strings.Repeat("é", fakegh.MaxBody)),
	}); err != nil {
		t.Fatal(err)
	}
	if srv.CountCreates() != 1 {
		t.Fatalf("CountCreates = %d", srv.CountCreates())
	}
}

func TestFaultsSurfaceAsGoGitHubErrors(t *testing.T) {
	ctx := context.Background()
	create := func(c *github.Client) error {
		_, _, err := c.Issues.Create(ctx, "acme", "widgets", &github.IssueRequest{Title: github.String("t")})
		return err
	}

	t.Run("primary rate limit", func(t *testing.T) {
		srv, c := start(t, fakegh.Options{})
		srv.Inject(fakegh.RouteCreateIssue, fakegh.PrimaryRateLimit(time.Hour))
		err := create(c)
		var rl *github.RateLimitError
		if !errors.As(err, &rl) {
			t.Fatalf("want *RateLimitError, got %T %v", err, err)
		}
		if until := time.Until(rl.Rate.Reset.Time); until < 59*time.Minute || until > time.Hour+time.Second {
			t.Fatalf("reset in %v", until)
		}
		if !strings.HasPrefix(rl.Message, "API rate limit exceeded for") {
			t.Fatalf("message %q", rl.Message)
		}
		if srv.CountCreates() != 0 {
			t.Fatal("a rate-limited create must not create")
		}
	})
	t.Run("secondary rate limit with Retry-After", func(t *testing.T) {
		srv, c := start(t, fakegh.Options{})
		srv.Inject(fakegh.RouteCreateIssue, fakegh.SecondaryRateLimit(7*time.Second))
		err := create(c)
		var ab *github.AbuseRateLimitError
		if !errors.As(err, &ab) || ab.RetryAfter == nil || *ab.RetryAfter != 7*time.Second {
			t.Fatalf("want *AbuseRateLimitError with 7s, got %T %v", err, err)
		}
	})
	t.Run("secondary rate limit without Retry-After", func(t *testing.T) {
		srv, c := start(t, fakegh.Options{})
		srv.Inject(fakegh.RouteCreateIssue, fakegh.SecondaryRateLimit(-1))
		err := create(c)
		var ab *github.AbuseRateLimitError
		if !errors.As(err, &ab) || ab.RetryAfter != nil {
			t.Fatalf("want *AbuseRateLimitError without RetryAfter, got %T %v", err, err)
		}
	})
	statuses := []struct {
		name   string
		fault  fakegh.Fault
		status int
	}{
		{"500", fakegh.ServerError(500), 500},
		{"502", fakegh.ServerError(502), 502},
		{"503", fakegh.ServerError(503), 503},
		{"401", fakegh.Unauthorized(), 401},
		{"404", fakegh.RepoNotFound(), 404},
		{"410", fakegh.IssuesDisabled(), 410},
		{"403", fakegh.NoPermission(), 403},
		{"422", fakegh.Unprocessable("nope"), 422},
	}
	for _, tc := range statuses {
		t.Run(tc.name, func(t *testing.T) {
			srv, c := start(t, fakegh.Options{})
			srv.Inject(fakegh.RouteCreateIssue, tc.fault)
			err := create(c)
			var er *github.ErrorResponse
			if !errors.As(err, &er) || er.Response.StatusCode != tc.status {
				t.Fatalf("want *ErrorResponse %d, got %T %v", tc.status, err, err)
			}
			var rl *github.RateLimitError
			var ab *github.AbuseRateLimitError
			if errors.As(err, &rl) || errors.As(err, &ab) {
				t.Fatal("a plain status must not read as a rate limit")
			}
			if srv.CountCreates() != 0 {
				t.Fatal("the fault fired before the work: nothing may be created")
			}
			// The fault fires once; the next request is served.
			if err := create(c); err != nil {
				t.Fatalf("after the fault: %v", err)
			}
		})
	}
	t.Run("5xx after the create", func(t *testing.T) {
		srv, c := start(t, fakegh.Options{})
		srv.Inject(fakegh.RouteCreateIssue, fakegh.ServerErrorAfter(502))
		err := create(c)
		if status(err) != 502 {
			t.Fatalf("want 502, got %v", err)
		}
		if srv.CountCreates() != 1 || len(srv.Issues()) != 1 {
			t.Fatalf("the issue must exist despite the error: %d", srv.CountCreates())
		}
	})
	t.Run("slow response honours the client timeout", func(t *testing.T) {
		srv, c := start(t, fakegh.Options{})
		srv.Inject(fakegh.RouteCreateIssue, fakegh.Slow(5*time.Second))
		tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		_, _, err := c.Issues.Create(tctx, "acme", "widgets", &github.IssueRequest{Title: github.String("t")})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("want deadline exceeded, got %v", err)
		}
		_ = srv
	})
	t.Run("slow response then served", func(t *testing.T) {
		srv, c := start(t, fakegh.Options{})
		srv.Inject(fakegh.RouteCreateIssue, fakegh.Slow(30*time.Millisecond))
		began := time.Now()
		if err := create(c); err != nil {
			t.Fatal(err)
		}
		if time.Since(began) < 30*time.Millisecond || srv.CountCreates() != 1 {
			t.Fatal("slow fault did not delay, or did not serve")
		}
	})
	t.Run("RouteAny hits the next request", func(t *testing.T) {
		srv, c := start(t, fakegh.Options{})
		srv.Inject(fakegh.RouteAny, fakegh.ServerError(503))
		_, _, err := c.Users.Get(ctx, "")
		if status(err) != 503 || srv.PendingFaults() != 0 {
			t.Fatalf("RouteAny: %v pending %d", err, srv.PendingFaults())
		}
	})
}

func TestRequestsAreRecorded(t *testing.T) {
	srv, c := start(t, fakegh.Options{})
	ctx := context.Background()
	_, _, _ = c.Issues.Create(ctx, "acme", "widgets", &github.IssueRequest{Title: github.String("t")})
	_, _, _ = c.Issues.ListByRepo(ctx, "acme", "widgets", &github.IssueListByRepoOptions{State: "all"})
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	if reqs[0].Route != fakegh.RouteCreateIssue || reqs[0].Status != 201 || !strings.Contains(string(reqs[0].Body), `"title":"t"`) || reqs[0].Login != "loop-bot" {
		t.Fatalf("create recorded as %+v", reqs[0])
	}
	if reqs[1].Route != fakegh.RouteListIssues || reqs[1].Query.Get("state") != "all" {
		t.Fatalf("list recorded as %+v", reqs[1])
	}
	if got := srv.RequestsTo(fakegh.RouteListIssues); len(got) != 1 {
		t.Fatalf("RequestsTo: %d", len(got))
	}
}

// Anyone may open an issue: each token acts as its own login, the author of
// what it creates, and may close its own issue as not planned but not edit
// another's.
func TestEachTokenActsAsItsOwnLogin(t *testing.T) {
	srv, bot := start(t, fakegh.Options{})
	srv.AddToken("mallory-token", fakegh.Token{Login: "mallory"})
	mallory := newClient(t, srv, "mallory-token")
	ctx := context.Background()
	for c, want := range map[*github.Client]string{bot: "loop-bot", mallory: "mallory"} {
		if u, _, err := c.Users.Get(ctx, ""); err != nil || u.GetLogin() != want {
			t.Fatalf("/user: %v %q, want %q", err, u.GetLogin(), want)
		}
	}
	ours, _, err := bot.Issues.Create(ctx, "acme", "widgets", &github.IssueRequest{Title: github.String("ours")})
	if err != nil {
		t.Fatal(err)
	}
	planted, _, err := mallory.Issues.Create(ctx, "acme", "widgets", &github.IssueRequest{
		Title: github.String("planted"), Body: github.String("<!-- marker -->"), Labels: &[]string{"the-loop: self-diagnosed"}})
	if err != nil || planted.GetUser().GetLogin() != "mallory" || len(planted.Labels) != 0 {
		t.Fatalf("stranger's create: %v, author %q, labels %v", err, planted.GetUser().GetLogin(), planted.Labels)
	}
	closed, _, err := mallory.Issues.Edit(ctx, "acme", "widgets", planted.GetNumber(), &github.IssueRequest{
		State: github.String("closed"), StateReason: github.String("not_planned")})
	if err != nil || closed.GetStateReason() != "not_planned" || closed.GetClosedBy().GetLogin() != "mallory" {
		t.Fatalf("closing her own issue: %v %+v", err, closed)
	}
	if _, _, err := mallory.Issues.Edit(ctx, "acme", "widgets", ours.GetNumber(), &github.IssueRequest{State: github.String("closed")}); status(err) != http.StatusForbidden {
		t.Fatalf("a stranger closed our issue: %v", err)
	}
	list, _, err := bot.Issues.ListByRepo(ctx, "acme", "widgets", &github.IssueListByRepoOptions{State: "all", Creator: "Mallory"})
	if err != nil || len(list) != 1 || list[0].GetUser().GetLogin() != "mallory" {
		t.Fatalf("creator filter: %v %v", err, list)
	}
	if reqs := srv.RequestsTo(fakegh.RouteCreateIssue); len(reqs) != 2 || reqs[1].Login != "mallory" {
		t.Fatalf("requests do not record who asked: %+v", reqs)
	}
}

func TestRemovedTokenAndOutageAreSwitches(t *testing.T) {
	srv, c := start(t, fakegh.Options{})
	ctx := context.Background()
	status := func() int {
		_, resp, _ := c.Issues.ListByRepo(ctx, "acme", "widgets", nil)
		if resp == nil {
			return 0
		}
		return resp.StatusCode
	}
	srv.RemoveToken("test-token")
	if a, b := status(), status(); a != http.StatusUnauthorized || b != http.StatusUnauthorized {
		t.Fatalf("revoked token: %d, %d; want 401 until it is let in again", a, b)
	}
	srv.AddToken("test-token", fakegh.Token{Login: "loop-bot", Triage: true})
	if s := status(); s != http.StatusOK {
		t.Fatalf("token let in again: %d", s)
	}
	srv.SetOutage(http.StatusServiceUnavailable)
	if a, b := status(), status(); a != http.StatusServiceUnavailable || b != http.StatusServiceUnavailable {
		t.Fatalf("outage: %d, %d", a, b)
	}
	if rs := srv.RequestsTo(fakegh.RouteListIssues); rs[len(rs)-1].Status != http.StatusServiceUnavailable {
		t.Fatal("an outage's answers must be recorded under their route")
	}
	srv.SetOutage(0)
	if s := status(); s != http.StatusOK {
		t.Fatalf("after the outage: %d", s)
	}
}

// The repository as each token sees it: has_issues, and what the token may
// do in permissions; a classic token's scopes come back in X-OAuth-Scopes.
func TestGetRepoShowsIssuesAndTheTokensPermissions(t *testing.T) {
	srv, c := start(t, fakegh.Options{})
	srv.AddToken("reader", fakegh.Token{Login: "reader", ReadOnly: true, Scopes: []string{"read:org"}})
	ctx := context.Background()
	r, resp, err := c.Repositories.Get(ctx, "acme", "widgets")
	if err != nil || !r.GetHasIssues() || !r.GetPermissions()["triage"] || resp.Header.Get("X-OAuth-Scopes") != "" {
		t.Fatalf("the bot's view: %v %+v %v", err, r, resp.Header)
	}
	r, resp, err = newClient(t, srv, "reader").Repositories.Get(ctx, "acme", "widgets")
	if err != nil || r.GetPermissions()["push"] || r.GetPermissions()["triage"] || !r.GetPermissions()["pull"] || resp.Header.Get("X-OAuth-Scopes") != "read:org" {
		t.Fatalf("a reader's view: %v %+v %v", err, r.GetPermissions(), resp.Header)
	}
	srv.SetIssuesDisabled(true)
	if r, _, err = c.Repositories.Get(ctx, "acme", "widgets"); err != nil || r.GetHasIssues() {
		t.Fatalf("issues disabled: %v has_issues %v", err, r.GetHasIssues())
	}
}

// A secondary rate limit comes in GitHub's shapes: 403 or 429, its message
// and documentation URL, Retry-After or x-ratelimit-remaining: 0 with the
// reset time.
func TestSecondaryRateLimitShapes(t *testing.T) {
	srv, c := start(t, fakegh.Options{})
	ctx := context.Background()
	srv.Inject(fakegh.RouteCreateIssue, fakegh.SecondaryRateLimitAs(http.StatusTooManyRequests, 30*time.Second, -1))
	_, resp, err := c.Issues.Create(ctx, "acme", "widgets", &github.IssueRequest{Title: github.String("t")})
	if err == nil || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "30" || !strings.Contains(err.Error(), "secondary rate limit") {
		t.Fatalf("429: %v %v", err, resp.Header)
	}
	srv.Inject(fakegh.RouteCreateIssue, fakegh.SecondaryRateLimitAs(http.StatusForbidden, -1, time.Minute))
	_, resp, err = c.Issues.Create(ctx, "acme", "widgets", &github.IssueRequest{Title: github.String("t")})
	if err == nil || resp.StatusCode != http.StatusForbidden || resp.Header.Get("X-Ratelimit-Remaining") != "0" || resp.Header.Get("Retry-After") != "" || resp.Header.Get("X-Ratelimit-Reset") == "" {
		t.Fatalf("403 with the reset: %v %v", err, resp.Header)
	}
	if srv.CountCreates() != 0 {
		t.Fatal("a rate-limited create was applied")
	}
}
