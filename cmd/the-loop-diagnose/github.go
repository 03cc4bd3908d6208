package main

import (
	"context"
	"os"

	"github.com/google/go-github/v66/github"

	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/stages"
	"github.com/the-loop/the-loop-diagnose/stages/source"
	"github.com/the-loop/the-loop-diagnose/stages/tracker"
)

// The scanner's GitHub: its client, made once, and the post stage's
// configuration; the builder adds each scan's store, fleet and preflight.

// githubClient is the scanner's GitHub client, made at its first scan and
// kept, so a watcher's scans reuse its connections.
func (s *scanner) githubClient() (*github.Client, error) {
	if s.gh != nil {
		return s.gh, nil
	}
	client, err := tracker.NewClient(os.Getenv, s.cfg.APIURL, s.metrics.transport(nil))
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
	gh, err := tracker.NewGitHub(client, tracker.GitHubConfig{
		Repo: s.cfg.Repo, Now: s.now, Log: s.log,
		WriteSpacing: s.cfg.WriteSpacing, SecondaryWait: s.cfg.SecondaryWait, MaxWait: s.cfg.MaxWait,
		Retries: s.cfg.HTTPRetries, BackoffBase: tracker.RetryBackoff, CallTimeout: s.cfg.HTTPTimeout,
	})
	if err != nil {
		return nil, &pipeline.SetupError{Err: err} // the config: a person must change it
	}
	return &stages.PostConfig{
		Tracker: gh, Repo: s.cfg.Repo, Label: s.cfg.Label,
		Version: s.cfg.Version, ToolVersion: version, Log: s.log,
		FixedUpstream: s.fixedUpstream(), TrustedAuthors: s.cfg.TrustedAuthors,
		// The builder runs this once per scan, before the first agent run
		// or post, whichever comes first.
		Preflight: func(ctx context.Context) error { return tracker.Check(ctx, client, s.cfg.Repo) },
	}, nil
}

// fixedUpstream asks the source checkout, when one is configured, whether a
// closed issue's fix shipped in a release newer than this deployment.
func (s *scanner) fixedUpstream() func(context.Context, int, string, pipeline.Group) (*pipeline.Settlement, error) {
	if s.cfg.SourceCheckout == "" {
		return nil
	}
	checkout := source.Checkout{Dir: s.cfg.SourceCheckout}
	return func(ctx context.Context, issue int, url string, g pipeline.Group) (*pipeline.Settlement, error) {
		return checkout.FixedUpstream(ctx, issue, url, source.DeployedVersion(g, s.cfg.Version))
	}
}
