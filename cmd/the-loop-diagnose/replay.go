package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/the-loop/the-loop-diagnose/logread"
	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/stages"
	"github.com/the-loop/the-loop-diagnose/stages/group"
	"github.com/the-loop/the-loop-diagnose/store"
)

// cmdReplay runs the pipeline up to one stage over a fixture and prints that
// stage's outputs as JSONL, each carrying the line of its source record. It
// writes nothing and posts nothing.
func cmdReplay(ctx context.Context, args []string, io stdio) error {
	fs := newFlagSet("replay", io)
	var c commonFlags
	c.register(fs)
	stage := fs.String("stage", "", "last stage to run: "+strings.Join(stages.Ends, ", "))
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if !slices.Contains(stages.Ends, *stage) {
		return usageErr("replay: --stage %q is not one of %s", *stage, strings.Join(stages.Ends, ", "))
	}
	if c.log == "" {
		return usageErr("replay: --log FIXTURE is required")
	}
	if c.harness == "" && c.config == "" {
		c.harness = "builtin" // replay is offline unless told otherwise
	}
	c.offline = true
	cfg, now, err := c.resolve()
	if err != nil {
		return err
	}
	f, err := os.Open(cfg.EventLog)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	defer f.Close()
	st := store.OpenMemory()
	if c.state != "" { // dedup against a real state, read-only
		if st, err = store.Open(c.state, true); err != nil {
			return err
		}
	}
	log, err := c.logger(io.err)
	if err != nil {
		return err
	}
	sc, err := newScanner(cfg, now, io, log, true)
	if err != nil {
		return err
	}
	out := bufio.NewWriterSize(io.out, 64<<10)
	defer out.Flush()
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	emit := func(v any) error { return enc.Encode(v) }

	var stats logread.ReadStats
	r := pipeline.New(ctx)
	rc := sc.readConfig(*stage != "read", nil)
	rc.Source, rc.Name, rc.FinalPartialLine = f, cfg.EventLog, true
	// The pipeline is built only up to the chosen stage, whose output is
	// printed: nothing after it (an agent) runs for nothing. Replay writes
	// nothing and pays for nothing: no ledger, no fleet, no GitHub, and
	// its incidents come from the fixture alone.
	scan, err := stages.Build(r, logread.NewRead(rc, &stats), sc.stages, stages.Deps{
		Store: st, Now: now, Stats: &stats, Until: *stage,
	})
	if err != nil {
		return err
	}
	done := func() error { return finishReplay(r, &stats, io) }
	switch *stage {
	case "read":
		printEach(r, scan.Records, emit, func(v pipeline.Record) map[string]any {
			return map[string]any{"line": v.Line, "offset": v.Offset, "fields": v.Fields}
		})
	case "filter":
		printEach(r, scan.Candidates, emit, func(v pipeline.Candidate) map[string]any {
			if v.Reason == stages.ReasonSuccess {
				return nil
			}
			return map[string]any{"line": v.Line, "reason": v.Reason, "event": v.Str("event")}
		})
	case "fingerprint":
		// Each line's final fingerprint: a bare give-up's is its incident's,
		// and a template's is its family's once the scan's templates are
		// learned, so the lines are printed at the end.
		var lines []pipeline.Occurrence
		pipeline.Into(r, scan.Occurrences, func(_ context.Context, v pipeline.Occurrence) error {
			if v.Reason != stages.ReasonSuccess {
				// Only what the output needs is kept of the record.
				v.Candidate = pipeline.Candidate{Record: pipeline.Record{Line: v.Line,
					Fields: pipeline.FieldsOf(map[string]any{"event": v.Str("event")})}}
				lines = append(lines, v)
			}
			return nil
		})
		if err := done(); err != nil {
			return err
		}
		var memory store.State
		st.View(func(s *store.State) { memory.TemplateMemory = s.TemplateMemory.Clone() })
		for _, v := range group.ResolveFamilies(&memory, lines) {
			if err := emit(map[string]any{"line": v.Line, "fingerprint": v.Fingerprint, "template": v.Template}); err != nil {
				return err
			}
		}
		return nil
	case "dedup":
		printEach(r, scan.Groups, emit, groupLine)
	case "dossier":
		printEach(r, scan.Dossiers, emit, func(d pipeline.Dossier) map[string]any {
			m := groupLine(d.Group)
			m["dossier"], m["environment"] = d.Markdown, d.Environment
			return m
		})
	case "agent":
		printEach(r, scan.Findings, emit, func(f pipeline.Finding) map[string]any {
			m := groupLine(f.Group)
			m["answer"], m["failure"] = f.Answer, f.Failure
			return m
		})
	case "compose":
		printEach(r, scan.Reports, emit, func(rep pipeline.Report) map[string]any {
			m := groupLine(rep.Group)
			m["repo"], m["title"], m["body"], m["label"], m["failure"] = rep.Repo, rep.Title, rep.Body, rep.Label, rep.Failure
			return m
		})
	}
	return done()
}

// printEach ends the pipeline at ch, printing each item's JSON object (nil:
// not printed).
func printEach[T any](r *pipeline.Run, ch <-chan T, emit func(any) error, toJSON func(T) map[string]any) {
	pipeline.Into(r, ch, func(_ context.Context, v T) error {
		if m := toJSON(v); m != nil {
			return emit(m)
		}
		return nil
	})
}

// groupLine is a group's replay object, keyed by its first line.
func groupLine(g pipeline.Group) map[string]any {
	lines := make([]int64, 0, len(g.Samples))
	for _, s := range g.Samples {
		lines = append(lines, s.Line)
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i] < lines[j] })
	return map[string]any{"line": g.FirstLine, "fingerprint": g.Fingerprint, "verdict": g.Verdict,
		"count": g.Count, "event": g.Event, "template": g.Template, "sample_lines": lines,
		"reason": g.Reason, "settle": g.Settle, "healed": g.Healed}
}

func finishReplay(r *pipeline.Run, stats *logread.ReadStats, io stdio) error {
	if err := r.Wait(); err != nil {
		return err
	}
	if n := stats.Corrupt.Load(); n > 0 {
		fmt.Fprintf(io.err, "the-loop-diagnose: replay: skipped %d corrupt lines (first: %s)\n", n, stats.Examples[0])
	}
	return nil
}
