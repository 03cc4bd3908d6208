package tracker

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/go-github/v66/github"
)

// NewClient is the GitHub client a command uses: the API URL and token
// resolved as Target does, every request held to that URL's host
// (hostGuard), over transport (nil: the default).
func NewClient(getenv func(string) string, cfgAPIURL string, transport http.RoundTripper) (*github.Client, error) {
	apiURL, env := Target(getenv, cfgAPIURL)
	return NewGitHubClientWithTransport(apiURL, env, hostGuard(apiURL, transport))
}

// Target resolves the GitHub API URL and the environment the client
// takes its token from.
//
// The URL: GITHUB_API_URL, else selfDiagnosis.apiURL, else from GH_HOST as
// the gh CLI does (https://HOST/api/v3/ for a host other than github.com),
// else api.github.com.
//
// An Enterprise token (GH_ENTERPRISE_TOKEN, GITHUB_ENTERPRISE_TOKEN) is
// only ever offered to its own host: GH_HOST's when GH_HOST names an
// Enterprise host, else (no GH_HOST, or github.com) the API URL's own when
// it is not api.github.com. With GH_HOST=ghe.example.com and the API
// pointed elsewhere (api.github.com, another host), the client sees no
// Enterprise token and takes GH_TOKEN / GITHUB_TOKEN. GH_HOST itself is
// consumed here: the URL carries the host.
func Target(getenv func(string) string, cfgAPIURL string) (apiURL string, env func(string) string) {
	ghHost := normHost(getenv("GH_HOST"))
	enterpriseHost := ghHost != "" && ghHost != "github.com"
	apiURL = getenv("GITHUB_API_URL")
	if apiURL == "" {
		apiURL = cfgAPIURL
	}
	if apiURL == "" {
		apiURL = DefaultGitHubAPI
		if enterpriseHost {
			apiURL = "https://" + ghHost + "/api/v3/"
		}
	}
	apiHost := ""
	if u, err := url.Parse(apiURL); err == nil {
		apiHost = normURLHost(u)
	}
	enterpriseOK := apiHost != "api.github.com" && apiHost != "github.com"
	if enterpriseHost {
		enterpriseOK = apiHost == ghHost
	}
	return apiURL, func(k string) string {
		switch k {
		case "GH_HOST":
			return ""
		case "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN":
			if !enterpriseOK {
				return ""
			}
		}
		return getenv(k)
	}
}

// normHost is a host as GH_HOST names it, compared case-insensitively and
// without https' default port; a pasted https:// prefix or trailing slash
// is dropped.
func normHost(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	h = strings.TrimPrefix(h, "https://")
	h = strings.TrimRight(h, "/")
	return strings.TrimSuffix(h, ":443")
}

func normURLHost(u *url.URL) string {
	h := strings.ToLower(u.Host)
	if (u.Scheme == "https" && strings.HasSuffix(h, ":443")) || (u.Scheme == "http" && strings.HasSuffix(h, ":80")) {
		h = h[:strings.LastIndexByte(h, ':')]
	}
	return h
}

// hostGuard refuses any request to a host other than apiURL's: the client
// sets the token on every request it sends, a redirect's included, so a
// redirect elsewhere would carry it there.
func hostGuard(apiURL string, next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	want := ""
	if u, err := url.Parse(apiURL); err == nil {
		want = normURLHost(u)
	}
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if got := normURLHost(req.URL); got != want {
			return nil, fmt.Errorf("refusing to send the GitHub token to %s: only %s is its API host", got, want)
		}
		return next.RoundTrip(req)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
