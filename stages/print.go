package stages

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// NewPrint is the dry-run sink in place of post: it prints each would-be
// issue and posts nothing, in the-loop's words (diagnose_cmd.py _print):
//
//	--- would file on <repo> ---
//	<title>
//
//	<body>
//
// ("--- would file on <repo> (held back: daily issue cap reached; ...) ---"
// for a defect the cap would defer: the dry run shows it all the same),
// and, for a defect the agent could not diagnose, the dossier it was given:
//
//	--- would diagnose (agent unavailable: <reason>) ---
//	<dossier>
//
// A dry run previews; an agent that is missing or failing is part of what
// it shows, not a failed scan (the-loop's dry run returns the dossier with
// the error and exits 0).
func NewPrint(w io.Writer) pipeline.Stage[pipeline.Report, pipeline.Outcome] {
	var mu sync.Mutex
	return pipeline.Map(func(_ context.Context, r pipeline.Report) (pipeline.Outcome, bool, error) {
		if undiagnosed(r) {
			mu.Lock()
			defer mu.Unlock()
			_, err := fmt.Fprintf(w, "--- would diagnose (agent unavailable: %s) ---\n%s\n", r.Failure, r.Markdown)
			o := pipeline.Outcome{Report: r, Status: pipeline.StatusDryRun, Error: r.Failure}
			o.Wait = nil // previewed, not waiting: the dry run is complete
			return o, true, err
		}
		if o, done := OutcomeWithoutPost(r); done {
			return o, true, nil
		}
		mu.Lock()
		defer mu.Unlock()
		repo := r.Repo
		if repo == "" {
			repo = "(selfDiagnosis.repo not set)"
		}
		held := ""
		if r.Reason == CapReason { // the gate's preview: over today's cap
			held = " (held back: " + CapReason + "; filed by a later scan)"
		}
		_, err := fmt.Fprintf(w, "--- would file on %s%s ---\n%s\n\n%s\n", repo, held, r.Title, r.Body)
		return pipeline.Outcome{Report: r, Status: pipeline.StatusDryRun}, true, err
	})
}

// undiagnosed: a new defect the agent failed on, or did not run for because
// it was found down this scan.
func undiagnosed(r pipeline.Report) bool {
	return r.Verdict == pipeline.VerdictNew && r.Failure != "" &&
		(r.Wait == nil || r.Wait.For == pipeline.WaitAgent)
}
