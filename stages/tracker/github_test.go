package tracker

import (
	"context"
	"errors"
	"strings"
	"testing"

	fakegh "github.com/the-loop/the-loop-diagnose/fakes/github"
	"github.com/the-loop/the-loop-diagnose/pipeline"
)

func ghEnv(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestNewGitHubClientTokenPrecedence(t *testing.T) {
	srv := fakegh.New(fakegh.Options{Tokens: map[string]fakegh.Token{
		"gh": {Login: "from-gh-token"}, "github": {Login: "from-github-token"}, "ent": {Login: "from-enterprise"},
	}})
	t.Cleanup(srv.Close)
	login := func(t *testing.T, apiURL string, env map[string]string) string {
		t.Helper()
		c, err := NewGitHubClient(apiURL, ghEnv(env))
		if err != nil {
			t.Fatal(err)
		}
		u, _, err := c.Users.Get(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		return u.GetLogin()
	}
	// The fake's host is not api.github.com, so it is an Enterprise host.
	all := map[string]string{"GH_TOKEN": "gh", "GITHUB_TOKEN": "github", "GH_ENTERPRISE_TOKEN": "ent"}
	if got := login(t, srv.APIURL(), all); got != "from-enterprise" {
		t.Fatalf("enterprise host used %s", got)
	}
	if got := login(t, srv.APIURL(), map[string]string{"GH_TOKEN": "gh", "GITHUB_TOKEN": "github"}); got != "from-gh-token" {
		t.Fatalf("GH_TOKEN must win over GITHUB_TOKEN, used %s", got)
	}
	if got := login(t, srv.URL()+"/api/v3", map[string]string{"GITHUB_TOKEN": "github"}); got != "from-github-token" {
		t.Fatalf("API URL without trailing slash: %s", got)
	}
}

func TestNewGitHubClientPublicHost(t *testing.T) {
	c, err := NewGitHubClient("", ghEnv(map[string]string{"GH_ENTERPRISE_TOKEN": "ent", "GITHUB_TOKEN": "pub"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.BaseURL.String() != DefaultGitHubAPI {
		t.Fatalf("base %s", c.BaseURL)
	}
	// On github.com the enterprise variables do not count.
	_, err = NewGitHubClient("https://api.github.com/", ghEnv(map[string]string{"GH_ENTERPRISE_TOKEN": "ent"}))
	var se *pipeline.SetupError
	if !errors.As(err, &se) || !strings.Contains(se.Fix, "GH_TOKEN or GITHUB_TOKEN") || strings.Contains(se.Fix, "ENTERPRISE") {
		t.Fatalf("want a SetupError naming GH_TOKEN/GITHUB_TOKEN, got %v", err)
	}
	// GH_HOST makes it an Enterprise setup even through a proxy URL.
	_, err = NewGitHubClient("https://api.github.com/", ghEnv(map[string]string{"GH_HOST": "ghe.corp"}))
	if !errors.As(err, &se) || !strings.Contains(se.Fix, "GH_ENTERPRISE_TOKEN or GITHUB_ENTERPRISE_TOKEN or GH_TOKEN or GITHUB_TOKEN") {
		t.Fatalf("enterprise missing-token error: %v", err)
	}
	if _, err := NewGitHubClient("ftp://x", ghEnv(map[string]string{"GH_TOKEN": "secret-value"})); err == nil || strings.Contains(err.Error(), "secret-value") {
		t.Fatalf("bad URL: %v", err)
	}
}

// CheckSetup's answers for what the fake can model, each filing
// nothing: a working bot token, a GitHub App's (no /user), a classic
// token's scopes, the label there already, a reader (may not create
// issues, nor the label), a repository that does not exist.
func TestCheckSetup(t *testing.T) {
	srv := fakegh.New(fakegh.Options{})
	t.Cleanup(srv.Close)
	srv.AddToken("reader", fakegh.Token{Login: "reader", ReadOnly: true})
	srv.AddToken("classic", fakegh.Token{Login: "classic-bot", Triage: true, Scopes: []string{"repo", "read:org"}})
	check := func(token, repo string) map[string]pipeline.SetupCheck {
		t.Helper()
		c, err := NewGitHubClient(srv.APIURL(), ghEnv(map[string]string{"GH_ENTERPRISE_TOKEN": token}))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]pipeline.SetupCheck{}
		for _, ch := range CheckSetup(context.Background(), c, repo, "the-loop: self-diagnosed") {
			got[ch.Name] = ch
		}
		if len(got) != len(SetupChecks) {
			t.Fatalf("%d checks, want %d: %+v", len(got), len(SetupChecks), got)
		}
		return got
	}
	all := func(got map[string]pipeline.SetupCheck) bool {
		for _, ch := range got {
			if !ch.OK {
				return false
			}
		}
		return true
	}
	if got := check("test-token", "acme/widgets"); !all(got) || got["token"].Detail != "accepted: loop-bot" || !strings.Contains(got["label"].Detail, "the token may create it") {
		t.Fatalf("a working token: %+v", got)
	}
	if got := check("classic", "acme/widgets"); !all(got) || !strings.Contains(got["token"].Detail, "classic token, scopes: repo, read:org") {
		t.Fatalf("a classic token: %+v", got["token"])
	}
	srv.Inject(fakegh.RouteUser, fakegh.NoPermission())
	if got := check("test-token", "acme/widgets"); !all(got) || !strings.Contains(got["token"].Detail, "GitHub App") {
		t.Fatalf("a GitHub App's token: %+v", got["token"])
	}
	got := check("reader", "acme/widgets")
	if got["create issues"].OK || !strings.Contains(got["create issues"].Detail, "may not create issues") || got["create issues"].Fix == "" ||
		got["label"].OK || !strings.Contains(got["label"].Fix, "triage") || !got["repository"].OK {
		t.Fatalf("a reader: %+v", got)
	}
	if got := check("test-token", "acme/gadgets"); got["repository"].OK || !strings.Contains(got["repository"].Detail, "was not found") ||
		!got["create issues"].Skipped || !got["label"].Skipped {
		t.Fatalf("an unknown repository: %+v", got)
	}
	srv.AddLabel(fakegh.Label{Name: "the-loop: self-diagnosed"})
	if got := check("reader", "acme/widgets"); !got["label"].OK || !strings.Contains(got["label"].Detail, "exists") {
		t.Fatalf("an existing label: %+v", got["label"])
	}
	if len(srv.Issues()) != 0 {
		t.Fatalf("the checks filed %d issues", len(srv.Issues()))
	}
}
