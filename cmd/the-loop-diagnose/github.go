package main

import (
	"context"
	"os"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/stages"
)

// The scanner's GitHub: its client, made once, and the post stage's
// configuration; the builder adds each scan's store, fleet and preflight.

// githubClient is the scanner's GitHub client, made at its first scan and
// kept, so a watcher's scans reuse its connections.
func (s *scanner) githubClient() (*github.Client, error) {
	if s.gh != nil {
		return s.gh, nil
	}
	apiURL, env := githubTarget(os.Getenv, s.cfg.APIURL)
	client, err := stages.NewGitHubClientWithTransport(apiURL, env, hostGuard(apiURL, s.metrics.transport(nil)))
	if err != nil {
		return nil, &pipeline.SetupError{Err: err} // no token, or a bad API URL: the environment will not change by itself
	}
	s.gh = client
	return client, nil
}

// postConfig is where a scan's reports go; nil in a dry run, which never
// talks to GitHub. A missing token fails here, before the scan starts.
func (s *scanner) postConfig() (*stages.PostConfig, error) {
	if s.dryRun {
		return nil, nil
	}
	client, err := s.githubClient()
	if err != nil {
		return nil, err
	}
	return &stages.PostConfig{
		Client: client, Repo: s.cfg.Repo, Label: s.cfg.Label,
		WriteSpacing: orNone(s.cfg.WriteSpacing), SecondaryWait: max(s.cfg.SecondaryWait, time.Nanosecond),
		MaxWait: orNone(s.cfg.MaxWait), Retries: orNoRetries(s.cfg.HTTPRetries), CallTimeout: s.cfg.HTTPTimeout,
		Version: s.cfg.Version, ToolVersion: version, Log: s.log,
		FixedUpstream: s.fixedUpstream(), TrustedAuthors: s.cfg.TrustedAuthors,
	}, nil
}

// The post stage reads a zero as "GitHub's default" and a negative as
// "none"; in the config a zero means none.
func orNone(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

func orNoRetries(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// fixedUpstream asks the source checkout, when one is configured, whether a
// closed issue's fix shipped in a release newer than this deployment.
func (s *scanner) fixedUpstream() func(context.Context, int, string, pipeline.Group) (*pipeline.Settlement, error) {
	if s.cfg.SourceCheckout == "" {
		return nil
	}
	checkout := stages.SourceCheckout{Dir: s.cfg.SourceCheckout}
	return func(ctx context.Context, issue int, url string, g pipeline.Group) (*pipeline.Settlement, error) {
		return checkout.FixedUpstream(ctx, issue, url, stages.DeployedVersion(g, s.cfg.Version))
	}
}
