package tracker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/rs/zerolog"

	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// GitHub's guidance, for the config that sets GitHubConfig.
const (
	// DefaultCallTimeout bounds one call when GitHubConfig.CallTimeout is
	// zero (selfDiagnosis.httpTimeoutSeconds unset).
	DefaultCallTimeout = 30 * time.Second
	// RetryBackoff is the first backoff before a retry; it doubles.
	RetryBackoff = time.Second
	// maxRateWaits bounds the rate-limit waits for one call.
	maxRateWaits = 3
)

// GitHubConfig is how GitHub paces and retries. Zero means none (no
// spacing, no wait slept through, no retry), as in the config; only
// CallTimeout's zero means DefaultCallTimeout. Negative values are refused.
type GitHubConfig struct {
	Repo string           // "owner/name"
	Now  func() time.Time // the clock the write spacing is measured on
	Log  zerolog.Logger
	// WriteSpacing is the least time between two writes.
	WriteSpacing time.Duration
	// SecondaryWait is the wait after a secondary rate limit that names none.
	SecondaryWait time.Duration
	// MaxWait is the longest rate-limit wait slept through; a longer one
	// (or any, at zero) defers the rest of the scan (*pipeline.DeferralError).
	MaxWait time.Duration
	// Retries is how often a 5xx or network failure is retried before it is
	// an outage (*pipeline.OutageError).
	Retries int
	// BackoffBase is the first backoff; it doubles per retry, with jitter.
	BackoffBase time.Duration
	// CallTimeout bounds one call.
	CallTimeout time.Duration
}

// GitHub is the Tracker on GitHub's REST API. It is one scan's: it
// remembers when it last wrote.
type GitHub struct {
	c           *github.Client
	cfg         GitHubConfig
	owner, name string
	lastWrite   time.Time
}

// NewGitHub is the Tracker on c for cfg.Repo; a cfg that cannot work is an
// error naming the field.
func NewGitHub(c *github.Client, cfg GitHubConfig) (*GitHub, error) {
	switch {
	case c == nil:
		return nil, errors.New("tracker: no GitHub client")
	case cfg.Now == nil:
		return nil, errors.New("tracker: GitHubConfig.Now is not set")
	case cfg.Retries < 0:
		return nil, fmt.Errorf("selfDiagnosis.httpRetries: %d must not be negative (0: no retries)", cfg.Retries)
	case cfg.WriteSpacing < 0, cfg.SecondaryWait < 0, cfg.MaxWait < 0, cfg.BackoffBase < 0, cfg.CallTimeout < 0:
		return nil, fmt.Errorf("tracker: a negative wait in %+v", cfg)
	}
	if cfg.CallTimeout == 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	owner, name, _ := strings.Cut(cfg.Repo, "/")
	return &GitHub{c: c, cfg: cfg, owner: owner, name: name}, nil
}

// call describes one API call for do.
type call struct {
	what      string
	write     bool // spaced ≥ WriteSpacing from the previous write
	repoLevel bool // 403/404/410 mean setup, not this request
	// once: a write that must not be repeated blind (a create): a failure
	// that leaves its outcome unknown returns InDoubtError at once.
	once bool
}

// do runs fn under the retry policy: 5xx and network failures back off
// (exponentially, with jitter) and retry up to Retries times, running
// recheck first when given (done=true ends the call as a success), then
// end the scan's use of GitHub (OutageError); rate limits wait up to
// MaxWait, uncounted (a create then runs recheck before it is sent
// again), or defer; the rest return. A once call that fails in a way that
// leaves its outcome unknown returns InDoubtError at once.
func (g *GitHub) do(ctx context.Context, c call, fn func(context.Context) error, recheck Recheck) error {
	retries, rateWaits := 0, 0
	lookFirst := false // run recheck before the next attempt
	for {
		if lookFirst && recheck != nil {
			done, err := recheck(ctx)
			if err != nil {
				return err
			}
			if done {
				return nil
			}
		}
		if c.write {
			if err := sleep(ctx, g.lastWrite.Add(g.cfg.WriteSpacing).Sub(g.cfg.Now())); err != nil {
				return err
			}
		}
		cctx, cancel := context.WithTimeout(ctx, g.cfg.CallTimeout)
		err := fn(cctx)
		cancel()
		if c.write {
			g.lastWrite = g.cfg.Now()
		}
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		f := ghClassify(err, g.cfg.Repo, c.repoLevel, g.cfg.SecondaryWait)
		// A rate limit, primary or secondary, is GitHub refusing: it did
		// not act, so the create is sent again after the wait it asks for.
		// Only an outcome really unknown (no answer, a 5xx) is in doubt.
		if c.once && f.kind == ghTransient {
			return &pipeline.InDoubtError{Err: fmt.Errorf("%s: %w", c.what, err)}
		}
		switch f.kind {
		case ghSetup:
			return f.setup
		case ghRateLimited:
			if g.cfg.MaxWait == 0 || f.wait > g.cfg.MaxWait || rateWaits >= maxRateWaits {
				return &pipeline.DeferralError{Reason: fmt.Sprintf("GitHub rate limit: retry after %s", f.wait.Round(time.Second)),
					Until: g.cfg.Now().Add(f.wait)}
			}
			rateWaits++
			g.cfg.Log.Info().Dur("wait", f.wait).Str("call", c.what).Msg("GitHub rate limit: waiting")
			if err := sleep(ctx, f.wait); err != nil {
				return err
			}
			lookFirst = c.once // a create is looked for before it is sent again
		case ghTransient:
			if retries >= g.cfg.Retries {
				return &pipeline.OutageError{Reason: fmt.Sprintf("%s: %v (gave up after %d attempts)", c.what, err, retries+1)}
			}
			retries++
			lookFirst = c.write
			backoff := g.cfg.BackoffBase << (retries - 1)
			backoff = backoff/2 + rand.N(backoff/2+1)
			g.cfg.Log.Debug().Err(err).Dur("backoff", backoff).Str("call", c.what).Msg("GitHub call failed; retrying")
			if err := sleep(ctx, backoff); err != nil {
				return err
			}
		default:
			var er *github.ErrorResponse
			errors.As(err, &er)
			return &Refused{Op: c.what, Status: er.Response.StatusCode, Message: er.Message, Err: err}
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *GitHub) Login(ctx context.Context) (string, error) {
	var u *github.User
	err := g.do(ctx, call{what: "get the token's user"}, func(ctx context.Context) error {
		var err error
		u, _, err = g.c.Users.Get(ctx, "")
		return err
	}, nil)
	if StatusOf(err) == http.StatusForbidden {
		return "", nil
	}
	return u.GetLogin(), err
}

func (g *GitHub) Issue(ctx context.Context, n int) (*Issue, error) {
	var is *github.Issue
	err := g.do(ctx, call{what: "get issue"}, func(ctx context.Context) error {
		var err error
		is, _, err = g.c.Issues.Get(ctx, g.owner, g.name, n)
		return err
	}, nil)
	var r *Refused
	if errors.As(err, &r) && !strings.Contains(r.Message, "disabled") &&
		(r.Status == http.StatusNotFound || r.Status == http.StatusGone) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return issueOf(is), nil
}

func (g *GitHub) ListIssues(ctx context.Context, q Query, each func(Issue) bool) error {
	opts := github.IssueListByRepoOptions{State: q.State, Creator: q.Creator, Sort: "created", Direction: "desc",
		ListOptions: github.ListOptions{PerPage: 100}}
	if q.Label != "" {
		opts.Labels = []string{q.Label}
	}
	if q.Oldest {
		opts.Direction = "asc"
	}
	for page := 1; ; page++ {
		var list []*github.Issue
		var resp *github.Response
		err := g.do(ctx, call{what: "list issues", repoLevel: true}, func(ctx context.Context) error {
			var err error
			list, resp, err = g.c.Issues.ListByRepo(ctx, g.owner, g.name, &opts)
			return err
		}, nil)
		if err != nil {
			return err
		}
		for _, is := range list {
			if !each(*issueOf(is)) {
				return nil
			}
		}
		if resp == nil || resp.NextPage == 0 || (q.Pages > 0 && page >= q.Pages) {
			return nil
		}
		opts.Page = resp.NextPage
	}
}

func (g *GitHub) Create(ctx context.Context, req NewIssue, recheck Recheck) (*Issue, error) {
	var created *github.Issue
	err := g.do(ctx, call{what: "create issue", write: true, repoLevel: true, once: true}, func(ctx context.Context) error {
		var err error
		created, _, err = g.c.Issues.Create(ctx, g.owner, g.name, &github.IssueRequest{
			Title: github.String(req.Title), Body: github.String(req.Body), Labels: &req.Labels,
		})
		if err != nil {
			created = nil
		}
		return err
	}, recheck)
	if err != nil || created == nil {
		return nil, err
	}
	return issueOf(created), nil
}

func (g *GitHub) Edit(ctx context.Context, n int, e Edit) (*Issue, error) {
	what := "edit issue"
	switch {
	case e.State != nil && *e.State == "open":
		what = "reopen issue"
	case e.State != nil && *e.State == "closed":
		what = "close a duplicate"
	}
	var is *github.Issue
	err := g.do(ctx, call{what: what, write: true}, func(ctx context.Context) error {
		var err error
		is, _, err = g.c.Issues.Edit(ctx, g.owner, g.name, n, &github.IssueRequest{Body: e.Body, State: e.State, StateReason: e.StateReason})
		return err
	}, nil)
	if err != nil {
		return nil, err
	}
	return issueOf(is), nil
}

func (g *GitHub) Comment(ctx context.Context, n int, body string, recheck Recheck) (*Comment, error) {
	var c *github.IssueComment
	err := g.do(ctx, call{what: "comment on the issue", write: true}, func(ctx context.Context) error {
		var err error
		c, _, err = g.c.Issues.CreateComment(ctx, g.owner, g.name, n, &github.IssueComment{Body: github.String(body)})
		if err != nil {
			c = nil
		}
		return err
	}, recheck)
	if err != nil || c == nil {
		return nil, err
	}
	return &Comment{ID: c.GetID(), Body: c.GetBody(), Author: c.GetUser().GetLogin()}, nil
}

func (g *GitHub) EditComment(ctx context.Context, id int64, body string) error {
	return g.do(ctx, call{what: "edit the occurrence comment", write: true}, func(ctx context.Context) error {
		_, _, err := g.c.Issues.EditComment(ctx, g.owner, g.name, id, &github.IssueComment{Body: github.String(body)})
		return err
	}, nil)
}

func (g *GitHub) ListComments(ctx context.Context, n int, each func(Comment) bool) error {
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	for {
		var list []*github.IssueComment
		var resp *github.Response
		err := g.do(ctx, call{what: "list comments"}, func(ctx context.Context) error {
			var err error
			list, resp, err = g.c.Issues.ListComments(ctx, g.owner, g.name, n, opts)
			return err
		}, nil)
		if err != nil {
			return err
		}
		for _, c := range list {
			if !each(Comment{ID: c.GetID(), Body: c.GetBody(), Author: c.GetUser().GetLogin()}) {
				return nil
			}
		}
		if resp == nil || resp.NextPage == 0 {
			return nil
		}
		opts.Page = resp.NextPage
	}
}

func (g *GitHub) EnsureLabel(ctx context.Context, l Label) error {
	err := g.do(ctx, call{what: "get label"}, func(ctx context.Context) error {
		_, _, err := g.c.Issues.GetLabel(ctx, g.owner, g.name, l.Name)
		return err
	}, nil)
	if StatusOf(err) != http.StatusNotFound {
		return err
	}
	err = g.do(ctx, call{what: "create label", write: true}, func(ctx context.Context) error {
		_, _, err := g.c.Issues.CreateLabel(ctx, g.owner, g.name, &github.Label{
			Name: github.String(l.Name), Color: github.String(l.Color), Description: github.String(l.Description),
		})
		return err
	}, nil)
	switch s := StatusOf(err); {
	case err == nil:
		return nil
	case s == http.StatusForbidden || s == http.StatusUnprocessableEntity:
		return ErrLabelForbidden
	}
	return fmt.Errorf("%w: %w", ErrLabelMissing, err)
}

// issueOf is go-github's issue as the protocol reads it.
func issueOf(is *github.Issue) *Issue {
	out := &Issue{Number: is.GetNumber(), URL: is.GetHTMLURL(), Title: is.GetTitle(), Body: is.GetBody(),
		State: is.GetState(), StateReason: is.GetStateReason(), Author: is.GetUser().GetLogin()}
	for _, l := range is.Labels {
		out.Labels = append(out.Labels, l.GetName())
	}
	return out
}
