package stages

import (
	"context"
	"errors"
	"strings"
	"testing"

	fakegh "github.com/the-loop/the-loop-diagnose/fakes/github"
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
	var se *SetupError
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
