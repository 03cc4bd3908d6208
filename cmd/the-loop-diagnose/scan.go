package main

import (
	"context"
	"fmt"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/rs/zerolog"

	"github.com/the-loop/the-loop-diagnose/fingerprint"
	"github.com/the-loop/the-loop-diagnose/logread"
	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/redact"
	"github.com/the-loop/the-loop-diagnose/stages"
	"github.com/the-loop/the-loop-diagnose/stages/incident"
	"github.com/the-loop/the-loop-diagnose/stages/source"
	"github.com/the-loop/the-loop-diagnose/store"
)

// scanner runs scans: one for `run`, one per wake-up for `watch`. What it
// keeps is what outlives a scan; each scan's own dependencies go to
// stages.Build as arguments.
type scanner struct {
	cfg    Config
	now    func() time.Time
	io     stdio
	log    zerolog.Logger
	dryRun bool

	red *redact.Redactor
	// stages are the stages as the config sets them up (stages.Build).
	stages stages.Config
	// eventsWarned: the read-only event log was said once.
	eventsWarned bool
	metrics      *metrics       // nil unless watch --metrics-addr
	gh           *github.Client // made at the first scan that posts (githubClient)
	dryState     *store.Store   // a dry-run watcher's in-memory state, kept across scans
	// state keeps a watcher's database open between its scans.
	state store.Cache
	// readBuf is the reader's buffer, reused by every scan of a watcher.
	readBuf []byte
	// incidents remembers recent failures so a bare give-up takes its
	// incident's fingerprint; a watcher keeps it across scans, and a cron
	// run starts from what the previous run saved in the state, so a
	// give-up links to a failure the previous scan read.
	incidents *incident.Index
	// skipBacklog is set by a watcher woken by new lines: the backlog is
	// retried on the interval, not on every append.
	skipBacklog bool
	// sayNothing: a scan that acted on nothing says so, as the-loop's
	// `diagnose` does (run; a watcher's silence says the same).
	sayNothing bool
	// jsonLog: --log-format json, the scan's report lines are log lines.
	jsonLog bool
	// progress shows the agent runs on a terminal (nil on anything else).
	progress *agentProgress
}

func newScanner(cfg Config, now func() time.Time, io stdio, log zerolog.Logger, dryRun bool) (*scanner, error) {
	fp, err := fingerprint.New(cfg.Rules)
	if err != nil {
		return nil, &ConfigError{File: "config", Key: "selfDiagnosis.fingerprintRules", Err: err}
	}
	red := redact.FromEnvironment(cfg.StateRoot)
	s := &scanner{cfg: cfg, now: now, io: io, log: log, dryRun: dryRun, red: red,
		progress: newAgentProgress(io.err, cfg.Harness), state: store.Cache{DSN: cfg.Store}}
	var finder *source.Finder
	src := resolveAgentSource(cfg)
	if src.Path != "" {
		finder, err = source.NewFinder(src.Path)
		if err != nil && cfg.SourcePath != "" {
			return nil, &ConfigError{File: "config", Key: "selfDiagnosis.sourcePath", Err: err}
		}
	}
	if finder == nil {
		src = AgentSource{} // not readable as a source tree: the agent gets none
	} else {
		src.Path = finder.Root()
	}
	acfg := agentConfig(cfg, src, log, red.Scrub)
	if s.progress != nil {
		acfg.Running = s.progress.running
	}
	// The agent stage is made by each scan, with that scan's hooks; made
	// once here, its errors, the config's, stop the command before any
	// scan (a watcher would retry them).
	if _, err := stages.NewAgent(acfg); err != nil {
		return nil, err
	}
	s.stages = stages.Config{
		Triage: &s.cfg.Triage, Format: cfg.Format, Fingerprinter: fp,
		Dedup: stages.DedupConfig{Policy: stages.Policy{
			MaxDiagnosesPerScan: cfg.MaxDiagnosesPerScan, MaxAgentCostPerDay: cfg.MaxAgentCostPerDay,
			MaxDiagnosesPerDay: cfg.MaxDiagnosesPerDay, Triage: cfg.Triage}},
		Dossier:   stages.DossierConfig{Scrubber: red, ToolVersion: version, Source: finder},
		Agent:     acfg,
		Gate:      stages.GateConfig{MaxIssuesPerDay: cfg.MaxIssuesPerDay, Confidence: cfg.Triage.Confidence, Preview: dryRun},
		Compose:   stages.ComposeConfig{Scrubber: red, Keywords: cfg.Keywords, Repo: cfg.Repo, Label: cfg.Label, Version: cfg.Version},
		Persist:   stages.PersistConfig{MaxRetries: cfg.MaxRetries, SettleFor: cfg.Triage.SettleFor, ToolVersion: version, Scrub: red.Scrub},
		Retention: cfg.Retention,
		Log:       log,
	}
	s.incidents = s.stages.NewIncidentIndex()
	return s, nil
}

// agentConfig is the agent as the config sets it up, for a scan and for
// doctor's probe alike.
func agentConfig(cfg Config, src AgentSource, log zerolog.Logger, scrub func(string) string) stages.AgentConfig {
	return stages.AgentConfig{
		SourcePath: src.Path, SourceVersion: src.Version,
		Harness: cfg.Harness, Command: cfg.Command, Model: cfg.Model,
		Timeout: cfg.Timeout, Parallel: cfg.AgentParallel, Env: cfg.AgentEnv, Log: log, Scrub: scrub,
		Endpoint: cfg.Endpoint, APIKeyEnv: cfg.APIKeyEnv,
		PricePerMillionInput: cfg.PricePerMillionInput, PricePerMillionOutput: cfg.PricePerMillionOutput,
	}
}

// readConfig is how a scan (prefilter) or a replay reads the log: the
// policy and format, decoding left to the decode stage.
func (s *scanner) readConfig(prefilter bool, stop <-chan struct{}) logread.ReadConfig {
	return logread.ReadConfig{Prefilter: prefilter, Policy: &s.cfg.Triage.Policy, Format: s.cfg.Format,
		Heal: logread.NewHealFilter(s.cfg.Triage.Policy, s.cfg.Format), Stop: stop, Buffer: s.readBuf}
}

// scan runs one pass over what is new in the event log. hard cancels
// everything; soft stops the reader at a line boundary and lets the rest drain.
func (s *scanner) scan(hard, soft context.Context, st *store.Store, started time.Time) (sum *stages.Summary, err error) {
	var prev *store.Cursor
	st.View(func(state *store.State) { prev = state.Cursor })
	src, err := logread.OpenLog(s.cfg.EventLog, prev)
	if err != nil {
		return nil, fmt.Errorf("%w (set eventLog.path or --log)", err)
	}
	defer src.Close()
	if src.Warning != "" {
		s.log.Warn().Str("log", s.cfg.EventLog).Msg(src.Warning)
	}
	if old := src.Rotated(); old != "" {
		s.log.Info().Str("log", s.cfg.EventLog).Str("rotated", old).Msg("event log was rotated: finishing the old file first")
	}
	// A pipe is no place to append diagnosis.* events to.
	eventLog := s.eventLogForEvents()
	if !src.Persistent() {
		eventLog = ""
	}
	st.SetEventLog(eventLog)
	post, err := s.postConfig()
	if err != nil {
		return nil, err
	}
	var stats logread.ReadStats
	r := pipeline.New(hard)
	if s.readBuf == nil {
		s.readBuf = logread.NewReadBuffer(s)
	}
	stopProgress := s.showProgress(src, &stats)
	s.progress.beforeFirstRun(stopProgress) // reading is over once an agent runs
	scan, err := stages.Build(r, src.Read(s.readConfig(true, soft.Done()), &stats), s.stages, stages.Deps{
		Store: st, Now: s.now, Stats: &stats, Incidents: s.incidents, Backlog: !s.skipBacklog,
		Ledger: true, Fleet: !s.dryRun, Post: post, Print: s.io.out,
		Observe: func(o pipeline.Outcome) {
			s.tell(o) // once recorded: a line printed is an outcome kept
			s.metrics.observe(o)
		},
	})
	if err != nil {
		stopProgress()
		return nil, err
	}
	defer scan.Close()
	runErr := scan.Wait()
	sum = scan.Summary
	defer func() { s.metrics.scanned(sum, sum.Candidates, time.Since(started), err) }()
	stopProgress()
	s.log.Debug().Int64("lines", stats.Lines.Load()).Int64("corrupt", stats.Corrupt.Load()).
		Int64("from", src.Start()).Int64("to", stats.End.Load()).Msg("read")
	if n := stats.Corrupt.Load(); n > 0 {
		ev := s.log.Warn().Int64("corrupt_lines", n).Str("log", s.cfg.EventLog)
		for _, ex := range stats.Examples {
			if ex != "" {
				ev = ev.Str("example", ex)
				break
			}
		}
		ev.Msg("skipped corrupt lines")
	}
	// A pipe has no cursor (nil keeps the stored one).
	return sum, scan.Finish(runErr, src.Cursor(&stats))
}
