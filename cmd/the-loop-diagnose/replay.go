package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/stages"
	"github.com/the-loop/the-loop-diagnose/store"
)

var replayStages = []string{"read", "filter", "fingerprint", "dedup", "dossier", "agent", "compose"}

// cmdReplay runs the pipeline up to one stage over a fixture and prints that
// stage's outputs as JSONL, each carrying the line of its source record. It
// writes nothing and posts nothing.
func cmdReplay(ctx context.Context, args []string, io stdio) error {
	fs := newFlagSet("replay", io)
	var c commonFlags
	c.register(fs)
	stage := fs.String("stage", "", "last stage to run: "+strings.Join(replayStages, ", "))
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if !contains(replayStages, *stage) {
		return usageErr("replay: --stage %q is not one of %s", *stage, strings.Join(replayStages, ", "))
	}
	if c.log == "" {
		return usageErr("replay: --log FIXTURE is required")
	}
	if c.harness == "" && c.config == "" {
		c.harness = "builtin" // replay is offline unless told otherwise
	}
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
	log := newLogger(io.err, c.verbose)
	sc, err := newScanner(cfg, now, io, log, true)
	if err != nil {
		return err
	}
	out := bufio.NewWriterSize(io.out, 64<<10)
	defer out.Flush()
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	emit := func(v any) error { return enc.Encode(v) }

	var stats stages.ReadStats
	r := pipeline.New(ctx)
	records := pipeline.From(r, stages.NewRead(stages.ReadConfig{
		Source: f, Name: cfg.EventLog, Prefilter: *stage != "read", FinalPartialLine: true,
		Heal: stages.NewHealFilter(cfg.Triage),
	}, &stats))
	if *stage == "read" {
		pipeline.Into(r, records, func(_ context.Context, v pipeline.Record) error {
			return emit(map[string]any{"line": v.Line, "offset": v.Offset, "fields": v.Fields})
		})
		return finishReplay(r, &stats, io)
	}
	candidates := pipeline.Then(r, records, stages.NewFilter(&cfg.Triage))
	if *stage == "filter" {
		pipeline.Into(r, candidates, func(_ context.Context, v pipeline.Candidate) error {
			if v.Reason == stages.ReasonSuccess {
				return nil
			}
			return emit(map[string]any{"line": v.Line, "reason": v.Reason, "event": v.Str("event")})
		})
		return finishReplay(r, &stats, io)
	}
	occurrences := pipeline.Then(r, candidates, stages.NewFingerprint(sc.fp))
	if *stage == "fingerprint" {
		pipeline.Into(r, occurrences, func(_ context.Context, v pipeline.Occurrence) error {
			if v.Reason == stages.ReasonSuccess {
				return nil
			}
			return emit(map[string]any{"line": v.Line, "fingerprint": v.Fingerprint, "template": v.Template})
		})
		return finishReplay(r, &stats, io)
	}
	groups := pipeline.Then(r, occurrences, stages.NewDedup(stages.DedupConfig{
		Store: st, Now: now, Policy: sc.policy(false),
	}))
	groupLine := func(g pipeline.Group) map[string]any {
		lines := make([]int64, 0, len(g.Samples))
		for _, s := range g.Samples {
			lines = append(lines, s.Line)
		}
		sort.Slice(lines, func(i, j int) bool { return lines[i] < lines[j] })
		return map[string]any{"line": g.FirstLine, "fingerprint": g.Fingerprint, "verdict": g.Verdict,
			"count": g.Count, "event": g.Event, "template": g.Template, "sample_lines": lines,
			"reason": g.Reason, "settle": g.Settle, "healed": g.Healed}
	}
	if *stage == "dedup" {
		pipeline.Into(r, groups, func(_ context.Context, g pipeline.Group) error { return emit(groupLine(g)) })
		return finishReplay(r, &stats, io)
	}
	dossiers := pipeline.Then(r, groups, stages.NewDossier(stages.DossierConfig{Scrubber: sc.red, ToolVersion: version}))
	if *stage == "dossier" {
		pipeline.Into(r, dossiers, func(_ context.Context, d pipeline.Dossier) error {
			m := groupLine(d.Group)
			m["dossier"], m["environment"] = d.Markdown, d.Environment
			return emit(m)
		})
		return finishReplay(r, &stats, io)
	}
	findings := pipeline.Then(r, pipeline.Then(r, dossiers, sc.agent), stages.NewGate(stages.GateConfig{
		Store: st, Now: now, MaxIssuesPerDay: cfg.MaxIssuesPerDay, Confidence: cfg.Triage.Confidence,
	}))
	if *stage == "agent" {
		pipeline.Into(r, findings, func(_ context.Context, f pipeline.Finding) error {
			m := groupLine(f.Group)
			m["answer"], m["failure"] = f.Answer, f.Failure
			return emit(m)
		})
		return finishReplay(r, &stats, io)
	}
	reports := pipeline.Then(r, findings, stages.NewCompose(stages.ComposeConfig{
		Scrubber: sc.red, Keywords: cfg.Keywords, Repo: cfg.Repo, Label: cfg.Label,
	}))
	pipeline.Into(r, reports, func(_ context.Context, rep pipeline.Report) error {
		m := groupLine(rep.Group)
		m["repo"], m["title"], m["body"], m["label"], m["failure"] = rep.Repo, rep.Title, rep.Body, rep.Label, rep.Failure
		return emit(m)
	})
	return finishReplay(r, &stats, io)
}

func finishReplay(r *pipeline.Run, stats *stages.ReadStats, io stdio) error {
	if err := r.Wait(); err != nil {
		return err
	}
	if n := stats.Corrupt.Load(); n > 0 {
		fmt.Fprintf(io.err, "the-loop-diagnose: replay: skipped %d corrupt lines (first: %s)\n", n, stats.Examples[0])
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
