package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/rs/zerolog"
	"golang.org/x/term"

	"github.com/the-loop/the-loop-diagnose/fingerprint"
	"github.com/the-loop/the-loop-diagnose/logread"
	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/redact"
	"github.com/the-loop/the-loop-diagnose/stages"
	"github.com/the-loop/the-loop-diagnose/stages/tracker"
	"github.com/the-loop/the-loop-diagnose/store"
)

// scanner runs scans: one for `run`, one per wake-up for `watch`.
type scanner struct {
	cfg    Config
	now    func() time.Time
	io     stdio
	log    zerolog.Logger
	dryRun bool

	fp    *fingerprint.Fingerprinter
	red   *redact.Redactor
	agent pipeline.Stage[pipeline.Dossier, pipeline.Finding]
	// source reads selfDiagnosis.sourcePath for the dossier (nil: unset).
	source *stages.SourceFinder
	// chargeRun charges an agent run to this scan's state before it starts
	// (stages.ChargeAgentRun); set by each scan.
	chargeRun func(pipeline.Dossier) error
	// fleet is this scan's claims and fleet-wide budgets (nil in a dry run
	// or without a database); set by each scan.
	fleet *stages.FleetScan
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
	incidents *stages.IncidentIndex
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
	sink     func(*store.Store, *githubPreflight) (pipeline.Stage[pipeline.Report, pipeline.Outcome], error)
}

func newScanner(cfg Config, now func() time.Time, io stdio, log zerolog.Logger, dryRun bool) (*scanner, error) {
	fp, err := fingerprint.New(cfg.Rules)
	if err != nil {
		return nil, &ConfigError{File: "config", Key: "selfDiagnosis.fingerprintRules", Err: err}
	}
	red := redact.FromEnvironment(cfg.StateRoot)
	s := &scanner{cfg: cfg, now: now, io: io, log: log, dryRun: dryRun, fp: fp, red: red,
		incidents: stages.NewIncidentIndex(stages.IncidentKeysWith(cfg.Triage.CorrelationKeys), stages.IncidentMaxFailures),
		progress:  newAgentProgress(io.err, cfg.Harness),
		state:     store.Cache{DSN: cfg.Store}}
	var running func(pipeline.Dossier) func()
	if s.progress != nil {
		running = s.progress.running
	}
	src := resolveAgentSource(cfg)
	if src.Path != "" {
		s.source, err = stages.NewSourceFinder(src.Path)
		if err != nil && cfg.SourcePath != "" {
			return nil, &ConfigError{File: "config", Key: "selfDiagnosis.sourcePath", Err: err}
		}
	}
	if s.source == nil {
		src = AgentSource{} // not readable as a source tree: the agent gets none
	} else {
		src.Path = s.source.Root()
	}
	acfg := agentConfig(cfg, src, log, red.Scrub)
	acfg.Admit = func(ctx context.Context, d pipeline.Dossier) (pipeline.Dossier, error) {
		return s.fleet.Admit(ctx, d) // nil (replay, a dry run): admits everything
	}
	acfg.BeforeRun = func(d pipeline.Dossier) error {
		if s.chargeRun == nil { // replay: nothing is charged
			return nil
		}
		if err := s.chargeRun(d); err != nil {
			return err
		}
		s.fleet.Started(d.Fingerprint) // the fleet's reservation is spent from here on
		return nil
	}
	acfg.Running = running
	s.agent, err = stages.NewAgent(acfg)
	if err != nil {
		return nil, err
	}
	if dryRun {
		s.sink = func(*store.Store, *githubPreflight) (pipeline.Stage[pipeline.Report, pipeline.Outcome], error) {
			return stages.NewPrint(io.out), nil
		}
	} else {
		s.sink = s.newPost
	}
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

// The stages between fingerprint and post, built from the config once here
// for both run and replay: they differ only in their wiring.

func (s *scanner) newDedup(st *store.Store, backlog bool, candidates *atomic.Int64) pipeline.Stage[pipeline.Occurrence, pipeline.Group] {
	return stages.NewDedup(stages.DedupConfig{Store: st, Now: s.now, Candidates: candidates, Format: s.cfg.Format, Policy: stages.Policy{
		MaxDiagnosesPerScan: s.cfg.MaxDiagnosesPerScan, MaxAgentCostPerDay: s.cfg.MaxAgentCostPerDay,
		MaxDiagnosesPerDay: s.cfg.MaxDiagnosesPerDay, Backlog: backlog, Triage: s.cfg.Triage}})
}

func (s *scanner) newDossier(st *store.Store) pipeline.Stage[pipeline.Group, pipeline.Dossier] {
	return stages.NewDossier(stages.DossierConfig{Scrubber: s.red, ToolVersion: version, Load: st.LoadDossier, Now: s.now, Source: s.source})
}

func (s *scanner) gate(st *store.Store) stages.GateConfig {
	return stages.GateConfig{Store: st, Now: s.now, MaxIssuesPerDay: s.cfg.MaxIssuesPerDay, Confidence: s.cfg.Triage.Confidence, Preview: s.dryRun}
}

func (s *scanner) newCompose() pipeline.Stage[pipeline.Finding, pipeline.Report] {
	return stages.NewCompose(stages.ComposeConfig{Scrubber: s.red, Keywords: s.cfg.Keywords, Repo: s.cfg.Repo, Label: s.cfg.Label, Version: s.cfg.Version})
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
	check, err := s.newPreflight()
	if err != nil {
		return nil, err
	}
	s.fleet = s.newFleet(st)
	defer s.fleet.Close()
	sink, err := s.sink(st, check)
	if err != nil {
		return nil, err
	}
	var stats logread.ReadStats
	sum = &stages.Summary{}
	r := pipeline.New(hard)
	if s.readBuf == nil {
		s.readBuf = logread.NewReadBuffer(s)
	}
	records := pipeline.From(r, src.Read(s.readConfig(true, soft.Done()), &stats))
	records = pipeline.Then(r, records, logread.NewDecode(s.cfg.Format, &stats))
	stopProgress := s.showProgress(src, &stats)
	s.progress.beforeFirstRun(stopProgress) // reading is over once an agent runs
	candidates := pipeline.Then(r, records, stages.NewFilter(&s.cfg.Triage, s.cfg.Format))
	var candidateCount atomic.Int64
	fp := s.fp
	st.View(func(state *store.State) {
		s.incidents.LoadFrom(state) // a cron run: the previous run's recent failures
		if !state.HoldsOlderVersions() {
			fp = fp.WithoutAliases() // nothing written by the-loop or an older release to match
		}
	})
	occurrences := pipeline.Then(r, candidates, stages.NewFingerprint(fp, s.incidents))
	groups := pipeline.Then(r, occurrences, s.newDedup(st, !s.skipBacklog, &candidateCount))
	dossiers := pipeline.Then(r, groups, s.newDossier(st))
	dossiers = pipeline.Then(r, dossiers, check.beforeAgent())
	answerKey := stages.AgentAnswerKey(s.cfg.Harness, s.cfg.Model)
	dossiers = pipeline.Then(r, dossiers, stages.NewReuseAnswers(st, answerKey))
	s.chargeRun = stages.ChargeAgentRun(st, s.now)
	findings := pipeline.Then(r, dossiers, s.agent)
	findings = pipeline.Then(r, findings, stages.NewKeepAnswers(st, s.now, answerKey))
	findings = pipeline.Then(r, findings, stages.NewGate(s.gate(st)))
	reports := pipeline.Then(r, findings, s.newCompose())
	outcomes := pipeline.Then(r, reports, sink)
	persist := stages.NewPersist(stages.PersistConfig{
		Store: st, Now: s.now, MaxRetries: s.cfg.MaxRetries, SettleFor: s.cfg.Triage.SettleFor,
		ToolVersion: version, Summary: sum, Scrub: s.red.Scrub,
	})
	pipeline.Into(r, outcomes, func(ctx context.Context, o pipeline.Outcome) error {
		if err := persist(ctx, o); err != nil {
			return err
		}
		// Only once the outcome is durable does the claim go.
		if err := s.fleet.Done(ctx, o); err != nil {
			return err
		}
		s.tell(o) // once recorded: a line printed is an outcome kept
		s.metrics.observe(o)
		return nil
	})
	runErr := r.Wait()
	counted := candidateCount.Load()
	sum.Candidates = counted
	defer func() { s.metrics.scanned(sum, counted, time.Since(started), err) }()
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
	if runErr != nil {
		// Outcomes already committed stay, their events are appended; the
		// cursor does not move, so the records of unfinished groups are
		// read again next scan.
		if err := st.FlushEvents(); err != nil {
			s.log.Warn().Err(err).Msg("diagnosis.* events stay in the outbox for the next scan")
		}
		return sum, runErr
	}
	// Only now, with every outcome committed, may the cursor move past the
	// records read. A pipe has none (nil keeps the stored one).
	keep := s.cfg.Retention
	keep.PerDay = s.cfg.MaxIssuesPerDay // the backlog may wait as long as the cap needs to drain it
	if err := stages.FinishScan(st, src.Cursor(&stats), s.incidents, sum, s.now(), keep); err != nil {
		return sum, err
	}
	sum.Lines, sum.Corrupt = stats.Lines.Load(), stats.Corrupt.Load()
	return sum, nil
}

// newFleet is the scan's part in the fleet sharing its store: its claims
// last twice the agent's timeout unrenewed, so only a dead deployment's
// expire. A dry run, which writes nothing, claims nothing.
func (s *scanner) newFleet(st *store.Store) *stages.FleetScan {
	if s.dryRun || st.DB() == nil {
		return nil
	}
	deployment := st.Scope()
	if deployment == "" {
		deployment = "local" // a store of its own (SQLite): no other deployment to tell apart
	}
	timeout := s.cfg.Timeout
	if timeout <= 0 {
		timeout = stages.AgentDefaultTimeout
	}
	return stages.NewFleetScan(stages.FleetConfig{
		Fleet: store.NewFleet(st.DB(), deployment), Store: st, Now: s.now, Lease: 2 * timeout,
		MaxIssuesPerDay: s.cfg.MaxIssuesPerDay, MaxDiagnosesPerDay: s.cfg.MaxDiagnosesPerDay,
		MaxAgentCostPerDay: s.cfg.MaxAgentCostPerDay, AnswerKey: stages.AgentAnswerKey(s.cfg.Harness, s.cfg.Model),
		HeldBack: s.gate(st).HoldsBack, Log: s.log,
	})
}

// eventLogForEvents is where diagnosis.* events go: the log itself, as the-loop
// does, except in a dry run, which writes nothing, and when the operator
// turned the-loop's event log off (eventLog.enabled: false), as the-loop's
// emit then writes nothing either.
func (s *scanner) eventLogForEvents() string {
	if s.dryRun || !s.cfg.EventLogEnabled {
		return ""
	}
	return s.eventsTarget(s.cfg.EventLog)
}

// eventsTarget is where a scan's diagnosis.* events go: the event log when
// this user may append to it, else selfDiagnosis.eventsPath, else nowhere
// (said once): a log the tool may only read is no reason to fail a run
// whose issues were filed.
func (s *scanner) eventsTarget(log string) string {
	if target := eventsTargetFor(log, s.cfg.EventsPath); target != "" {
		return target
	}
	if !s.eventsWarned {
		s.eventsWarned = true
		s.log.Warn().Str("log", log).Msg("the event log is not writable by this user: diagnosis.* events are not appended (set selfDiagnosis.eventsPath to keep them elsewhere)")
	}
	return ""
}

// eventsTargetFor is where diagnosis.* events go (eventsTarget's rule,
// without its warning): the event log when this user may append to it (or
// it is missing: it is created), else eventsPath ("" for nowhere).
func eventsTargetFor(log, eventsPath string) string {
	f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0)
	if err == nil {
		f.Close()
		return log
	}
	if !errors.Is(err, fs.ErrPermission) && !errors.Is(err, syscall.EROFS) {
		return log // a missing log is created; other errors say themselves
	}
	return eventsPath
}

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

// newPreflight is this scan's GitHub check; nil in a dry run, which never
// talks to GitHub. A missing token fails here, before the scan starts.
func (s *scanner) newPreflight() (*githubPreflight, error) {
	if s.dryRun {
		return nil, nil
	}
	client, err := s.githubClient()
	if err != nil {
		return nil, err
	}
	return &githubPreflight{check: func(ctx context.Context) error {
		return tracker.Check(ctx, client, s.cfg.Repo)
	}}, nil
}

func (s *scanner) newPost(st *store.Store, check *githubPreflight) (pipeline.Stage[pipeline.Report, pipeline.Outcome], error) {
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
	return stages.NewPost(stages.PostConfig{
		Tracker: gh, Repo: s.cfg.Repo, Label: s.cfg.Label, Store: st, Now: s.now,
		Version: s.cfg.Version, ToolVersion: version, Log: s.log,
		FixedUpstream: s.fixedUpstream(), Preflight: check.run, TrustedAuthors: s.cfg.TrustedAuthors,
		Fleet: s.fleet,
	}), nil
}

// githubPreflight is a scan's GitHub check (tracker.Check), made once,
// just before the scan first needs GitHub: the first agent run or the first
// post, whichever comes first. A scan with nothing new asks GitHub nothing,
// and a misconfiguration still stops the scan before any agent runs.
type githubPreflight struct {
	check func(context.Context) error
	once  sync.Once
	err   error
}

// run makes the check the first time and returns its result every time; a
// second caller waits for the first. A nil preflight (dry run) passes.
func (p *githubPreflight) run(ctx context.Context) error {
	if p == nil {
		return nil
	}
	p.once.Do(func() { p.err = p.check(ctx) })
	return p.err
}

// beforeAgent passes dossiers through to the agent stage, running the check
// before the first one the agent will diagnose.
func (p *githubPreflight) beforeAgent() pipeline.Stage[pipeline.Dossier, pipeline.Dossier] {
	return pipeline.Map(func(ctx context.Context, d pipeline.Dossier) (pipeline.Dossier, bool, error) {
		if stages.AgentWillRun(d) {
			if err := p.run(ctx); err != nil {
				var down *pipeline.OutageError
				if !errors.As(err, &down) {
					return d, false, err
				}
				// GitHub is down: no agent runs for an issue that cannot
				// be filed; the defect waits.
				d.Wait = &pipeline.Wait{For: pipeline.WaitGitHub, Reason: down.Reason}
			}
		}
		return d, true, nil
	})
}

// showProgress draws "bytes read of total" on stderr, rewritten in place a
// few times a second, when stderr is a terminal and the backlog is large
// enough to take a while. It returns a function that stops and erases it.
func (s *scanner) showProgress(src *logread.LogSource, stats *logread.ReadStats) (stop func()) {
	f, ok := unlocked(s.io.err).(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) || src.Backlog() < progressMinBacklog {
		return func() {}
	}
	return logread.ShowProgress(f, s.cfg.EventLog, src.Backlog(), &stats.Bytes, 250*time.Millisecond)
}

// progressMinBacklog is the backlog worth a progress line: below it a scan
// is over in well under a second.
const progressMinBacklog = 64 << 20

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
