package tracker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// DefaultGitHubAPI is github.com's REST root.
const DefaultGitHubAPI = "https://api.github.com/"

// ghRequestTimeout bounds one HTTP exchange in a client NewGitHubClient
// builds; GitHub also bounds each call with its own deadline (CallTimeout).
const ghRequestTimeout = 60 * time.Second

// NewGitHubClient builds a go-github client for apiURL (the caller resolves
// GITHUB_API_URL > selfDiagnosis.apiURL > DefaultGitHubAPI). The token comes
// from GH_TOKEN, then GITHUB_TOKEN; for an Enterprise host (GH_HOST set to
// one, or an API host other than api.github.com) GH_ENTERPRISE_TOKEN, then
// GITHUB_ENTERPRISE_TOKEN, are tried first. Errors name variables, never
// the token.
func NewGitHubClient(apiURL string, env func(string) string) (*github.Client, error) {
	return NewGitHubClientWithTransport(apiURL, env, nil)
}

// NewGitHubClientWithTransport is NewGitHubClient over a given transport
// (nil: the default), e.g. one that counts requests for metrics.
func NewGitHubClientWithTransport(apiURL string, env func(string) string, transport http.RoundTripper) (*github.Client, error) {
	if apiURL == "" {
		apiURL = DefaultGitHubAPI
	}
	u, err := url.Parse(apiURL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("GitHub API URL %q is not an http(s) URL: set GITHUB_API_URL or selfDiagnosis.apiURL", apiURL)
	}
	enterprise := !strings.EqualFold(u.Hostname(), "api.github.com")
	if h := env("GH_HOST"); h != "" && !strings.EqualFold(h, "github.com") {
		enterprise = true
	}
	vars := []string{"GH_TOKEN", "GITHUB_TOKEN"}
	if enterprise {
		vars = append([]string{"GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN"}, vars...)
	}
	var token string
	for _, v := range vars {
		if token = strings.TrimSpace(env(v)); token != "" {
			break
		}
	}
	if token == "" {
		return nil, &pipeline.SetupError{Area: "GitHub",
			Cause:  "no GitHub token is set",
			Fix:    "set " + strings.Join(vars, " or ") + " to a token that may create issues in the repository",
			Status: http.StatusUnauthorized,
		}
	}
	c := github.NewClient(&http.Client{Timeout: ghRequestTimeout, Transport: transport}).WithAuthToken(token)
	c.UserAgent = "the-loop-diagnose"
	if !enterprise {
		base := *u
		if !strings.HasSuffix(base.Path, "/") {
			base.Path += "/"
		}
		c.BaseURL = &base
		return c, nil
	}
	c, err = c.WithEnterpriseURLs(u.String(), u.String())
	if err != nil {
		return nil, fmt.Errorf("GitHub API URL %q: %w", apiURL, err)
	}
	return c, nil
}

// ghKind is how the post stage reacts to a failed call.
type ghKind int

const (
	ghRejected    ghKind = iota // a 4xx about this request: fail the defect, no retry
	ghTransient                 // 5xx or the network: back off and retry
	ghRateLimited               // wait, or defer the rest of the scan
	ghSetup                     // configuration: stop the scan
)

// ghFailure classifies err. repoLevel marks routes where 403/404/410 can
// only mean the repository or token is wrong (list and create issues).
type ghFailure struct {
	kind ghKind
	// wait is for ghRateLimited: any rate limit, primary or secondary, is
	// GitHub refusing the request without acting on it.
	wait   time.Duration
	status int
	setup  *pipeline.SetupError
}

func ghClassify(err error, repo string, repoLevel bool, secondaryWait time.Duration) ghFailure {
	var rl *github.RateLimitError
	if errors.As(err, &rl) {
		wait := time.Until(rl.Rate.Reset.Time)
		if ra, ok := ghRetryAfter(rl.Response); ok {
			wait = ra
		}
		return ghFailure{kind: ghRateLimited, wait: max(wait, 0), status: http.StatusForbidden}
	}
	var ab *github.AbuseRateLimitError
	if errors.As(err, &ab) {
		return ghFailure{kind: ghRateLimited, wait: ghSecondaryWait(ab.Response, ab.RetryAfter, secondaryWait), status: http.StatusForbidden}
	}
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response == nil {
		// No HTTP answer: the network, a timeout, a malformed body. The
		// request may or may not have reached GitHub.
		return ghFailure{kind: ghTransient}
	}
	status := er.Response.StatusCode
	f := ghFailure{status: status}
	switch {
	case status == http.StatusTooManyRequests ||
		(status == http.StatusForbidden && er.Response.Header.Get("Retry-After") != ""):
		f.kind, f.wait = ghRateLimited, ghSecondaryWait(er.Response, nil, secondaryWait)
	case status >= 500:
		f.kind = ghTransient
	case status == http.StatusUnauthorized, repoLevel && (status == http.StatusNotFound || status == http.StatusGone || status == http.StatusForbidden):
		f.kind, f.setup = ghSetup, ghSetupError(status, repo, er.Message)
	default:
		f.kind = ghRejected
	}
	return f
}

// ghSetupError is what a status that only a misconfiguration gives means,
// and its fix: the one wording for a scan and for doctor.
func ghSetupError(status int, repo, message string) *pipeline.SetupError {
	e := &pipeline.SetupError{Area: "GitHub", Status: status}
	switch status {
	case http.StatusUnauthorized:
		e.Cause = "the GitHub token was rejected (" + message + ")"
		e.Fix = "set GH_TOKEN or GITHUB_TOKEN (GH_ENTERPRISE_TOKEN on an Enterprise host) to a valid, unexpired token"
	case http.StatusNotFound:
		e.Cause = "repository " + repo + " was not found, or the token cannot see it"
		e.Fix = "check selfDiagnosis.repo, and give the token access to " + repo + " (a private repository needs the repo scope or Issues access)"
	case http.StatusGone:
		e.Cause = "issues are disabled for " + repo
		e.Fix = "enable Issues in " + repo + "'s settings, or point selfDiagnosis.repo at a repository that has them"
	default:
		e.Cause = "the token may not create issues in " + repo + " (" + message + ")"
		e.Fix = "grant the token Issues: read and write (fine-grained) or the repo/public_repo scope (classic)"
	}
	return e
}

// ghRetryAfter reads a Retry-After header in seconds.
func ghRetryAfter(resp *http.Response) (time.Duration, bool) {
	if resp == nil {
		return 0, false
	}
	v := resp.Header.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	secs, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || secs < 0 {
		return 0, false
	}
	return time.Duration(secs) * time.Second, true
}

// ghSecondaryWait follows GitHub's guidance for secondary limits: honour
// Retry-After; else, when the quota is spent, wait for x-ratelimit-reset;
// else wait at least floor. known is go-github's own estimate, used only
// when it synthesised the error without asking GitHub (no headers at all).
func ghSecondaryWait(resp *http.Response, known *time.Duration, floor time.Duration) time.Duration {
	if ra, ok := ghRetryAfter(resp); ok {
		return ra
	}
	if resp != nil && resp.Header.Get("X-RateLimit-Remaining") == "0" {
		if secs, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64); err == nil {
			return max(time.Until(time.Unix(secs, 0)), 0)
		}
	}
	if known != nil && (resp == nil || len(resp.Header) == 0) {
		return max(*known, floor)
	}
	return floor
}

// Check is the scan's preflight: one list-issues request that fails
// with the SetupError a misconfiguration (bad token, unknown repository,
// issues disabled) would give at the first post — but before any agent has
// run, so a misconfigured cron job costs no LLM call per scan. A GitHub
// that is down (5xx, the network) is an *OutageError: no agent runs for an
// issue that cannot be filed, and the scan's defects wait. Rate limits are
// the GitHub tracker's business at the first post.
func Check(ctx context.Context, c *github.Client, repo string) error {
	owner, name, ok := strings.Cut(repo, "/")
	if !ok {
		return &pipeline.SetupError{Area: "GitHub", Cause: fmt.Sprintf("repository %q is not owner/name", repo),
			Fix: "set selfDiagnosis.repo to the repository issues go to, as owner/name"}
	}
	_, _, err := c.Issues.ListByRepo(ctx, owner, name, &github.IssueListByRepoOptions{State: "open", ListOptions: github.ListOptions{PerPage: 1}})
	if err == nil {
		return nil
	}
	switch f := ghClassify(err, repo, true, 0); f.kind {
	case ghSetup:
		return f.setup
	case ghTransient:
		if f.status != 0 {
			return &pipeline.OutageError{Reason: "GitHub is not answering (HTTP " + strconv.Itoa(f.status) + ")"}
		}
		return &pipeline.OutageError{Reason: "GitHub cannot be reached: " + err.Error()}
	}
	return nil
}

// SetupChecks name CheckSetup's checks, in order.
var SetupChecks = []string{"token", "repository", "create issues", "label"}

// CheckSetup checks, filing nothing, what filing needs: the token is
// accepted (and whose it is), repo exists with issues enabled, the token
// may create issues there, and label exists or may be created. May the
// token create issues is asked of GitHub itself: a create without a title,
// which GitHub refuses as forbidden (403, 404) before it looks at the body,
// and as invalid (422) only when the token may create issues. A check that
// cannot run for an earlier one's failure is skipped.
func CheckSetup(ctx context.Context, c *github.Client, repo, label string) []pipeline.SetupCheck {
	fail := func(name string, err error) pipeline.SetupCheck {
		f := ghClassify(err, repo, name != "token", 0)
		switch {
		case f.setup != nil:
			return pipeline.SetupCheck{Name: name, Detail: f.setup.Cause, Fix: f.setup.Fix}
		case f.kind == ghTransient:
			return pipeline.SetupCheck{Name: name, Detail: "GitHub cannot be reached: " + err.Error(), Fix: "check selfDiagnosis.apiURL (GITHUB_API_URL, GH_HOST) and the network, then run doctor again"}
		case f.kind == ghRateLimited:
			return pipeline.SetupCheck{Name: name, Detail: "GitHub's rate limit: " + err.Error(), Fix: fmt.Sprintf("run doctor again in %s", max(f.wait, time.Minute).Round(time.Second))}
		}
		return pipeline.SetupCheck{Name: name, Detail: err.Error(), Fix: "see GitHub's message above"}
	}
	var out []pipeline.SetupCheck
	rest := func(why string) []pipeline.SetupCheck {
		for _, n := range SetupChecks[len(out):] {
			out = append(out, pipeline.SetupCheck{Name: n, Skipped: true, Detail: "not checked: " + why})
		}
		return out
	}
	owner, name, ok := strings.Cut(repo, "/")
	user, resp, err := c.Users.Get(ctx, "")
	var er *github.ErrorResponse
	switch {
	case err == nil:
		who := "accepted: " + user.GetLogin()
		if resp != nil && resp.Header.Get("X-OAuth-Scopes") != "" {
			who += " (classic token, scopes: " + resp.Header.Get("X-OAuth-Scopes") + ")"
		}
		out = append(out, pipeline.SetupCheck{Name: "token", OK: true, Detail: who})
	case errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusForbidden:
		// A GitHub App's installation token may not read /user.
		out = append(out, pipeline.SetupCheck{Name: "token", OK: true, Detail: "accepted (a GitHub App's token: it may not read /user; its login is learned at its first issue)"})
	default:
		out = append(out, fail("token", err))
		return rest("the token is not accepted")
	}
	if !ok || owner == "" || name == "" {
		out = append(out, pipeline.SetupCheck{Name: "repository", Detail: fmt.Sprintf("repository %q is not owner/name", repo),
			Fix: "set selfDiagnosis.repo to the repository issues go to, as owner/name"})
		return rest("no repository")
	}
	r, _, err := c.Repositories.Get(ctx, owner, name)
	switch {
	case err != nil:
		out = append(out, fail("repository", err))
		return rest("no repository")
	case !r.GetHasIssues():
		e := ghSetupError(http.StatusGone, repo, "")
		out = append(out, pipeline.SetupCheck{Name: "repository", Detail: e.Cause, Fix: e.Fix})
		return rest("issues are disabled")
	case r.GetArchived():
		out = append(out, pipeline.SetupCheck{Name: "repository", Detail: repo + " is archived: it takes no new issues",
			Fix: "unarchive " + repo + ", or point selfDiagnosis.repo at a repository that takes issues"})
		return rest("the repository is archived")
	}
	out = append(out, pipeline.SetupCheck{Name: "repository", OK: true, Detail: repo + " exists, issues enabled"})

	created, _, err := c.Issues.Create(ctx, owner, name, &github.IssueRequest{Title: github.String("")})
	switch {
	case errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusUnprocessableEntity:
		out = append(out, pipeline.SetupCheck{Name: "create issues", OK: true,
			Detail: "the token may create issues in " + repo + " (a create without a title was refused as invalid, not as forbidden: nothing was filed)"})
	case err != nil:
		out = append(out, fail("create issues", err))
	default:
		out = append(out, pipeline.SetupCheck{Name: "create issues",
			Detail: fmt.Sprintf("GitHub filed an issue without a title (#%d), which it should have refused", created.GetNumber()),
			Fix:    "close " + created.GetHTMLURL()})
	}

	_, _, err = c.Issues.GetLabel(ctx, owner, name, label)
	perms := r.GetPermissions()
	switch {
	case err == nil:
		out = append(out, pipeline.SetupCheck{Name: "label", OK: true, Detail: fmt.Sprintf("label %q exists", label)})
	case !errors.As(err, &er) || er.Response == nil || er.Response.StatusCode != http.StatusNotFound:
		out = append(out, fail("label", err))
	case perms == nil:
		out = append(out, pipeline.SetupCheck{Name: "label", OK: true, Detail: fmt.Sprintf("label %q does not exist yet; the first issue creates it if the token may (GitHub does not say what this token may do)", label)})
	case perms["triage"] || perms["push"] || perms["maintain"] || perms["admin"]:
		out = append(out, pipeline.SetupCheck{Name: "label", OK: true, Detail: fmt.Sprintf("label %q does not exist yet; the token may create it (the first issue does)", label)})
	default:
		out = append(out, pipeline.SetupCheck{Name: "label", Detail: fmt.Sprintf("label %q does not exist and the token may not create it (no triage access): issues would be filed without it", label),
			Fix: fmt.Sprintf("create the label %q in %s, or give the token triage (or write) access", label, repo)})
	}
	return out
}
