package stages

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// NewPrint is the dry-run sink in place of post: it prints each would-be
// issue (target repo, title, body) and posts nothing.
func NewPrint(w io.Writer) pipeline.Stage[pipeline.Report, pipeline.Outcome] {
	var mu sync.Mutex
	return pipeline.Map(func(_ context.Context, r pipeline.Report) (pipeline.Outcome, bool, error) {
		if o, done := Settle(r); done {
			return o, true, nil
		}
		mu.Lock()
		defer mu.Unlock()
		repo := r.Repo
		if repo == "" {
			repo = "(selfDiagnosis.repo not set)"
		}
		_, err := fmt.Fprintf(w, "=== would file an issue in %s (label %q) ===\nTitle: %s\n\n%s\n", repo, r.Label, r.Title, r.Body)
		return pipeline.Outcome{Report: r, Status: pipeline.StatusDryRun}, true, err
	})
}
