package tracker

import (
	"context"
	"sync"
	"testing"
	"time"

	fakegh "github.com/the-loop/the-loop-diagnose/fakes/github"
)

// Writes are spaced on the injected clock (the scan's, which --now drives),
// not the wall clock: with an hour's spacing and the clock moved two hours
// between them, the second write goes out at once.
func TestGitHubSpacesWritesOnTheInjectedClock(t *testing.T) {
	srv := fakegh.New(fakegh.Options{})
	t.Cleanup(srv.Close)
	c, err := NewGitHubClient(srv.APIURL(), func(k string) string {
		return map[string]string{"GH_ENTERPRISE_TOKEN": "test-token"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	g, err := NewGitHub(c, GitHubConfig{Repo: srv.Repo(), Now: clock, WriteSpacing: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := g.Create(ctx, NewIssue{Title: "one", Body: "b"}, nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	if _, err := g.Create(ctx, NewIssue{Title: "two", Body: "b"}, nil); err != nil {
		t.Fatalf("the second write waited on the wall clock: %v", err)
	}
	if srv.CountCreates() != 2 {
		t.Fatalf("%d creates", srv.CountCreates())
	}
}

// NewGitHub validates and names what is wrong; it defaults only the call
// timeout, as the config documents.
func TestNewGitHubValidates(t *testing.T) {
	c, err := NewGitHubClient("", func(k string) string { return map[string]string{"GH_TOKEN": "x"}[k] })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewGitHub(c, GitHubConfig{Repo: "o/r", Now: time.Now, Retries: -1}); err == nil {
		t.Fatal("negative retries accepted")
	}
	if _, err := NewGitHub(c, GitHubConfig{Repo: "o/r"}); err == nil {
		t.Fatal("no clock accepted")
	}
	g, err := NewGitHub(c, GitHubConfig{Repo: "o/r", Now: time.Now})
	if err != nil || g.cfg.CallTimeout != DefaultCallTimeout {
		t.Fatalf("zero call timeout: %v, %v", g.cfg.CallTimeout, err)
	}
}
