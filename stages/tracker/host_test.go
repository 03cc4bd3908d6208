package tracker

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestGitHubTarget(t *testing.T) {
	for _, tc := range []struct {
		name      string
		env       map[string]string
		cfgAPI    string
		wantURL   string
		wantToken string // what the client may read from GH_ENTERPRISE_TOKEN
	}{
		{"default", nil, "", "https://api.github.com/", ""},
		{"GH_HOST github.com", map[string]string{"GH_HOST": "github.com"}, "", "https://api.github.com/", ""},
		{"GH_HOST names an Enterprise host", map[string]string{"GH_HOST": "GHE.example.com"}, "", "https://ghe.example.com/api/v3/", "ent"},
		{"GH_HOST with a port", map[string]string{"GH_HOST": "ghe.example.com:8443"}, "", "https://ghe.example.com:8443/api/v3/", "ent"},
		{"apiURL wins over GH_HOST", map[string]string{"GH_HOST": "ghe.example.com"}, "https://api.github.com/", "https://api.github.com/", ""},
		{"GITHUB_API_URL wins over apiURL", map[string]string{"GITHUB_API_URL": "https://ghe.example.com/api/v3/"}, "https://other.example.com/api/v3/", "https://ghe.example.com/api/v3/", "ent"},
		{"GH_HOST and the API on another Enterprise host", map[string]string{"GH_HOST": "ghe.example.com", "GITHUB_API_URL": "https://evil.example.com/api/v3/"}, "", "https://evil.example.com/api/v3/", ""},
		{"GH_HOST and the API on the same host", map[string]string{"GH_HOST": "ghe.example.com"}, "https://ghe.example.com:443/api/v3/", "https://ghe.example.com:443/api/v3/", "ent"},
		{"no GH_HOST: the API's own Enterprise host", nil, "https://ghe.example.com/api/v3/", "https://ghe.example.com/api/v3/", "ent"},
	} {
		env := map[string]string{"GH_ENTERPRISE_TOKEN": "ent", "GITHUB_ENTERPRISE_TOKEN": "ent", "GH_TOKEN": "plain"}
		for k, v := range tc.env {
			env[k] = v
		}
		url, get := Target(func(k string) string { return env[k] }, tc.cfgAPI)
		if url != tc.wantURL {
			t.Errorf("%s: API URL %q, want %q", tc.name, url, tc.wantURL)
		}
		if got := get("GH_ENTERPRISE_TOKEN"); got != tc.wantToken || get("GITHUB_ENTERPRISE_TOKEN") != tc.wantToken {
			t.Errorf("%s: enterprise token offered %q, want %q", tc.name, got, tc.wantToken)
		}
		if get("GH_TOKEN") != "plain" || get("GH_HOST") != "" {
			t.Errorf("%s: GH_TOKEN %q GH_HOST %q", tc.name, get("GH_TOKEN"), get("GH_HOST"))
		}
	}
}

// A redirect to another host is refused before the token (set on every
// request by the client) goes out.
func TestHostGuardRefusesOtherHosts(t *testing.T) {
	var leaked string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { leaked = r.Header.Get("Authorization") }))
	defer other.Close()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, strings.Replace(other.URL, "127.0.0.1", "localhost", 1)+"/x", http.StatusFound)
	}))
	defer api.Close()
	c := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer secret")
		return hostGuard(api.URL+"/api/v3/", nil).RoundTrip(r)
	})}
	_, err := c.Get(api.URL + "/api/v3/user")
	if err == nil || !strings.Contains(err.Error(), "refusing to send the GitHub token") || leaked != "" {
		t.Fatalf("redirect: err %v, leaked %q", err, leaked)
	}
}
