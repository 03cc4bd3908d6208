package stages

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/the-loop/the-loop-diagnose/fingerprint"
	"github.com/the-loop/the-loop-diagnose/logread"
	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/stages/agent"
	"github.com/the-loop/the-loop-diagnose/stages/budget"
	"github.com/the-loop/the-loop-diagnose/stages/incident"
	"github.com/the-loop/the-loop-diagnose/store"
)

// Config is the stages as the configuration sets them up: made once, the
// same for every scan. Build fills in, on its own copy, what each scan
// brings (Deps): the stages' Store and Now, dedup's counter, format and
// backlog, the dossier's loader, the agent's Admit and BeforeRun, the
// persist's summary, and the post's store, fleet and preflight. Those
// fields are left unset here.
type Config struct {
	Triage        *TriageConfig   // the candidate rule (filter); its correlation keys (incidents)
	Format        *logread.Format // how the log writes its fields (decode, filter, dedup)
	Fingerprinter *fingerprint.Fingerprinter
	Dedup         DedupConfig
	Dossier       DossierConfig
	Agent         AgentConfig
	Gate          GateConfig
	Compose       ComposeConfig
	Persist       PersistConfig
	// Retention is what the scan's last transaction keeps (FinishScan);
	// its PerDay is the gate's cap, so the backlog may wait as long as the
	// cap needs to drain it.
	Retention store.Retention
	Log       zerolog.Logger
}

// Deps are what one scan brings: the state it reads and writes, and what
// it may touch beyond it. The differences between run, watch, dry run and
// replay are all here, none in the topology:
//
//	          Ledger  Fleet  Post   Print  Incidents  Until
//	run/watch  yes    yes    yes    -      kept       -
//	dry run    yes    -      -      yes    kept       -
//	replay     -      -      -      -      -          --stage
type Deps struct {
	Store *store.Store
	Now   func() time.Time
	// Stats counts what decode reads (lines, corrupt lines).
	Stats *logread.ReadStats
	// Incidents links a bare give-up to its incident's failure. The
	// caller keeps it across scans (a watcher), it starts from what the
	// state saved when empty (a cron run), and Finish saves it. nil: the
	// scan's own, from the lines it reads alone (replay).
	Incidents *incident.Index
	// Backlog: dedup retries the defects the caps held back in earlier
	// scans (a watcher woken by new lines leaves them to its interval).
	Backlog bool
	// Ledger: the scan pays for a diagnosis once (agent_ledger.go): each
	// run is charged before it starts, an answer kept for the same
	// harness, model and prompt is reused instead of a run, and each new
	// answer is kept at once. Replay runs the agent and keeps nothing.
	Ledger bool
	// Fleet: the scan takes part in the fleet sharing its store's
	// database (claims, fleet-wide caps: fleet.go). A store without one
	// has no fleet.
	Fleet bool
	// Post files the reports; Build adds the scan's store, clock and
	// fleet, and the GitHub preflight, made once before the first agent
	// run or post. nil: Print.
	Post *PostConfig
	// Print writes each would-be issue instead (a dry run).
	Print io.Writer
	// Observe sees each outcome once it is durable (persisted, its fleet
	// claim released): the scan's report line, metrics.
	Observe func(pipeline.Outcome)
	// Until ends the pipeline after this stage (one of Ends), leaving its
	// output in the Scan for the caller (replay prints it). "": to the
	// sink and persist.
	Until string
}

// NewIncidentIndex is an empty index of recent failures, correlated by the
// configured keys (Deps.Incidents).
func (c Config) NewIncidentIndex() *incident.Index {
	return incident.NewIndex(incident.KeysWith(c.Triage.CorrelationKeys), incident.MaxFailures)
}

// Ends are the stages Build can end after (Deps.Until), in order.
var Ends = []string{"read", "filter", "fingerprint", "dedup", "dossier", "agent", "compose"}

// Scan is a built pipeline. When Build ended early, the output of the
// stage it ended after is set, for the caller to drain; otherwise the
// pipeline ends in persist.
type Scan struct {
	Records     <-chan pipeline.Record     // read
	Candidates  <-chan pipeline.Candidate  // filter
	Occurrences <-chan pipeline.Occurrence // fingerprint
	Groups      <-chan pipeline.Group      // dedup
	Dossiers    <-chan pipeline.Dossier    // dossier
	Findings    <-chan pipeline.Finding    // agent (and gate)
	Reports     <-chan pipeline.Report     // compose
	// Summary is what persist counted, and, once Wait returned, how many
	// candidates the filter selected.
	Summary *Summary

	r          *pipeline.Run
	cfg        Config
	deps       Deps
	incidents  *incident.Index
	fleet      *budget.FleetScan
	candidates atomic.Int64
}

// Build wires one scan's pipeline on r, from read (the event log's
// records, logread), for run, watch, dry run and replay alike:
//
//	read → decode → filter → fingerprint → dedup → dossier → [preflight] →
//	[reuse answers] → agent → [keep answers] → gate → compose →
//	post | print → persist → fleet done → Observe
//
// The bracketed stages are there when Deps asks for them. The caller
// waits (Scan.Wait), then ends the scan (Scan.Finish) and releases it
// (Scan.Close).
func Build(r *pipeline.Run, read pipeline.Source[pipeline.Record], cfg Config, d Deps) (*Scan, error) {
	if d.Until != "" && !slices.Contains(Ends, d.Until) {
		return nil, fmt.Errorf("stages: no stage %q to end after", d.Until)
	}
	if d.Until == "" && d.Post == nil && d.Print == nil {
		return nil, errors.New("stages: a full pipeline needs a sink (Post or Print)")
	}
	s := &Scan{r: r, cfg: cfg, deps: d, Summary: &Summary{}, incidents: d.Incidents}
	if d.Fleet && d.Store.DB() != nil {
		s.fleet = s.newFleet()
	}
	// Made before anything is wired: a stage it could not make leaves
	// nothing running.
	agent, err := NewAgent(s.agentConfig())
	if err != nil {
		s.Close()
		return nil, err
	}
	if s.incidents == nil {
		s.incidents = cfg.NewIncidentIndex()
	}
	end := func(stage string) bool { return d.Until == stage }

	records := pipeline.Then(r, pipeline.From(r, read), logread.NewDecode(cfg.Format, d.Stats))
	if end("read") {
		s.Records = records
		return s, nil
	}
	candidates := pipeline.Then(r, records, NewFilter(cfg.Triage, cfg.Format))
	if end("filter") {
		s.Candidates = candidates
		return s, nil
	}
	fp := cfg.Fingerprinter
	d.Store.View(func(state *store.State) {
		if d.Incidents != nil {
			d.Incidents.LoadFrom(state) // a cron run: the previous run's recent failures
		}
		if !state.HoldsOlderVersions() {
			fp = fp.WithoutAliases() // nothing written by the-loop or an older release to match
		}
	})
	occurrences := pipeline.Then(r, candidates, NewFingerprint(fp, s.incidents))
	if end("fingerprint") {
		s.Occurrences = occurrences
		return s, nil
	}
	dedup := cfg.Dedup
	dedup.Store, dedup.Now, dedup.Candidates, dedup.Format = d.Store, d.Now, &s.candidates, cfg.Format
	dedup.Policy.Backlog = d.Backlog
	groups := pipeline.Then(r, occurrences, NewDedup(dedup))
	if end("dedup") {
		s.Groups = groups
		return s, nil
	}
	dossier := cfg.Dossier
	dossier.Load, dossier.Now = d.Store.LoadDossier, d.Now
	dossiers := pipeline.Then(r, groups, NewDossier(dossier))
	if end("dossier") {
		s.Dossiers = dossiers
		return s, nil
	}
	var check *preflight
	if d.Post != nil {
		post := d.Post
		check = &preflight{check: post.Preflight}
		dossiers = pipeline.Then(r, dossiers, check.beforeAgent())
	}
	answerKey := AgentAnswerKey(cfg.Agent.Harness, cfg.Agent.Model)
	if d.Ledger {
		dossiers = pipeline.Then(r, dossiers, NewReuseAnswers(d.Store, answerKey))
	}
	findings := pipeline.Then(r, dossiers, agent)
	if d.Ledger {
		findings = pipeline.Then(r, findings, NewKeepAnswers(d.Store, d.Now, answerKey))
	}
	findings = pipeline.Then(r, findings, NewGate(s.gate()))
	if end("agent") {
		s.Findings = findings
		return s, nil
	}
	reports := pipeline.Then(r, findings, NewCompose(cfg.Compose))
	if end("compose") {
		s.Reports = reports
		return s, nil
	}
	var sink pipeline.Stage[pipeline.Report, pipeline.Outcome]
	if d.Post != nil {
		post := *d.Post
		post.Store, post.Now, post.Fleet, post.Preflight = d.Store, d.Now, s.fleet, check.run
		sink = NewPost(post)
	} else {
		sink = NewPrint(d.Print)
	}
	s.persist(pipeline.Then(r, reports, sink))
	return s, nil
}

// agentConfig is the agent with this scan's hooks: the fleet's claim as a
// worker takes a dossier up, and the ledger's charge just before a run.
func (s *Scan) agentConfig() AgentConfig {
	a := s.cfg.Agent
	if s.fleet != nil {
		a.Admit = s.fleet.Admit
	}
	if s.deps.Ledger {
		charge := budget.ChargeRun(s.deps.Store, s.deps.Now)
		a.BeforeRun = func(d pipeline.Dossier) error {
			if err := charge(d); err != nil {
				return err
			}
			s.fleet.Started(d.Fingerprint) // the fleet's reservation is spent from here on
			return nil
		}
	}
	return a
}

func (s *Scan) gate() GateConfig {
	g := s.cfg.Gate
	g.Store, g.Now = s.deps.Store, s.deps.Now
	return g
}

// newFleet is the scan's part in the fleet sharing its store: its claims
// last twice the agent's timeout unrenewed, so only a dead deployment's
// expire; its caps are the scan's own.
func (s *Scan) newFleet() *budget.FleetScan {
	st := s.deps.Store
	deployment := st.Scope()
	if deployment == "" {
		deployment = "local" // a store of its own (SQLite): no other deployment to tell apart
	}
	timeout := s.cfg.Agent.Timeout
	if timeout <= 0 {
		timeout = agent.DefaultTimeout
	}
	p := s.cfg.Dedup.Policy
	answerKey := AgentAnswerKey(s.cfg.Agent.Harness, s.cfg.Agent.Model)
	return budget.NewFleetScan(budget.FleetConfig{
		Fleet: store.NewFleet(st.DB(), deployment), Store: st, Now: s.deps.Now, Lease: 2 * timeout,
		MaxIssuesPerDay: s.cfg.Gate.MaxIssuesPerDay, MaxDiagnosesPerDay: p.MaxDiagnosesPerDay,
		MaxAgentCostPerDay: p.MaxAgentCostPerDay, Reuse: func(d pipeline.Dossier) pipeline.Dossier { return reuseAnswer(st, answerKey, d) },
		HeldBack: s.gate().HoldsBack, Log: s.cfg.Log,
	})
}

// persist ends the pipeline: each outcome is persisted, then its fleet
// claim goes (only once the outcome is durable), then Observe sees it (a
// line printed is an outcome kept).
func (s *Scan) persist(outcomes <-chan pipeline.Outcome) {
	p := s.cfg.Persist
	p.Store, p.Now, p.Summary = s.deps.Store, s.deps.Now, s.Summary
	persist := NewPersist(p)
	pipeline.Into(s.r, outcomes, func(ctx context.Context, o pipeline.Outcome) error {
		if err := persist(ctx, o); err != nil {
			return err
		}
		if err := s.fleet.Done(ctx, o); err != nil {
			return err
		}
		if s.deps.Observe != nil {
			s.deps.Observe(o)
		}
		return nil
	})
}

// Wait waits for the pipeline and counts the candidates it selected.
func (s *Scan) Wait() error {
	err := s.r.Wait()
	s.Summary.Candidates = s.candidates.Load()
	return err
}

// Finish ends a scan whose pipeline returned err. After an error the
// outcomes already committed stay and their events are appended, but the
// cursor does not move: the records of unfinished groups are read again
// next scan. Otherwise, with every outcome committed, the scan's last
// transaction moves the cursor past the records read (nil keeps the
// stored one: a pipe) and keeps the incidents, outages and retention
// (FinishScan), and the summary takes the lines read.
func (s *Scan) Finish(err error, cursor *store.Cursor) error {
	st := s.deps.Store
	if err != nil {
		if ferr := st.FlushEvents(); ferr != nil {
			s.cfg.Log.Warn().Err(ferr).Msg("diagnosis.* events stay in the outbox for the next scan")
		}
		return err
	}
	keep := s.cfg.Retention
	keep.PerDay = s.cfg.Gate.MaxIssuesPerDay
	if err := FinishScan(st, cursor, s.deps.Incidents, s.Summary, s.deps.Now(), keep); err != nil {
		return err
	}
	s.Summary.Lines, s.Summary.Corrupt = s.deps.Stats.Lines.Load(), s.deps.Stats.Corrupt.Load()
	return nil
}

// Close releases the scan's part in the fleet (its claims' renewal).
func (s *Scan) Close() { s.fleet.Close() }

// preflight is a scan's tracker check (PostConfig.Preflight), made once, just before
// the scan first needs GitHub: the first agent run or the first post,
// whichever comes first. A scan with nothing new asks GitHub nothing, and
// a misconfiguration still stops the scan before any agent runs.
type preflight struct {
	check func(context.Context) error
	once  sync.Once
	err   error
}

// run makes the check the first time and returns its result every time; a
// second caller waits for the first. No check (a tracker that needs
// none, as in stage tests) passes.
func (p *preflight) run(ctx context.Context) error {
	if p.check == nil {
		return nil
	}
	p.once.Do(func() { p.err = p.check(ctx) })
	return p.err
}

// beforeAgent passes dossiers through to the agent stage, running the check
// before the first one the agent will diagnose.
func (p *preflight) beforeAgent() pipeline.Stage[pipeline.Dossier, pipeline.Dossier] {
	return pipeline.Map(func(ctx context.Context, d pipeline.Dossier) (pipeline.Dossier, bool, error) {
		if AgentWillRun(d) {
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
