package stages

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/stages/agent"
)

// AgentConfig configures the agent stage: its harness (the fields of
// agent.Config, documented there) and what a scan adds around each run.
type AgentConfig struct {
	// The harness: agent.Config's fields, same names and meaning.
	Harness                                     string
	Command                                     []string
	Model                                       string
	Timeout                                     time.Duration // 0 means agent.DefaultTimeout
	Binary                                      string
	Env                                         []string
	Log                                         zerolog.Logger
	Scrub                                       func(string) string // also cleans a cached answer and a panic's reason
	Endpoint, APIKeyEnv                         string
	PricePerMillionInput, PricePerMillionOutput float64
	SourcePath, SourceVersion                   string
	ReadWrite                                   []string

	Parallel int // agents run at once; 0 means 1
	// BeforeRun, when set, is called right before each agent run (in the
	// run's own goroutine, after the pass-through rules): it charges the
	// run durably. Its error stops the scan.
	BeforeRun func(pipeline.Dossier) error
	// Running, when set, is called as each agent run starts; the function
	// it returns, as the run ends (a terminal's "diagnosing … 12s" line).
	Running func(pipeline.Dossier) (done func())
	// Admit, when set, is called for each dossier as the stage takes it
	// up, before the pass-through rules: it may defer it or find it known
	// (the fleet's claim, FleetScan.Admit). Its error stops the scan. It
	// runs only as a worker is free, so what it holds is held just in time.
	Admit func(context.Context, pipeline.Dossier) (pipeline.Dossier, error)
}

// NewAgent returns the stage that diagnoses each new group. Errors are data:
// an agent failure becomes a Finding with Failure set, and the stage itself
// fails only when its context is cancelled.
func NewAgent(cfg AgentConfig) (pipeline.Stage[pipeline.Dossier, pipeline.Finding], error) {
	if cfg.Parallel < 0 {
		return nil, fmt.Errorf("selfDiagnosis.agentParallel: must not be negative, got %d", cfg.Parallel)
	}
	if cfg.Parallel == 0 {
		cfg.Parallel = 1
	}
	run, err := agent.New(cfg.harness())
	if err != nil {
		return nil, err
	}
	return agentStage(cfg, run), nil
}

// harness is the part of cfg the harness takes.
func (cfg AgentConfig) harness() agent.Config {
	return agent.Config{
		Harness: cfg.Harness, Command: cfg.Command, Model: cfg.Model, Timeout: cfg.Timeout, Binary: cfg.Binary,
		Env: cfg.Env, Log: cfg.Log, Scrub: cfg.Scrub,
		Endpoint: cfg.Endpoint, APIKeyEnv: cfg.APIKeyEnv,
		PricePerMillionInput: cfg.PricePerMillionInput, PricePerMillionOutput: cfg.PricePerMillionOutput,
		SourcePath: cfg.SourcePath, SourceVersion: cfg.SourceVersion, ReadWrite: cfg.ReadWrite,
	}
}

// agentStage wraps run with the pass-through rules, logging, panic recovery,
// order-preserving parallelism and, per scan, the agent's health.
func agentStage(cfg AgentConfig, run agent.Runner) pipeline.Stage[pipeline.Dossier, pipeline.Finding] {
	return func(ctx context.Context, in <-chan pipeline.Dossier, out chan<- pipeline.Finding) error {
		health := &agentHealth{}
		return pipeline.MapOrdered(cfg.Parallel, func(ctx context.Context, d pipeline.Dossier) (pipeline.Finding, bool, error) {
			if cfg.Admit != nil {
				var err error
				if d, err = cfg.Admit(ctx, d); err != nil {
					return pipeline.Finding{}, false, err
				}
			}
			if down, ok := health.isDown(); ok && AgentWillRun(d) {
				return pipeline.Finding{Dossier: withWait(d, pipeline.WaitAgent, down), Failure: down}, true, nil
			}
			f, err := agentDiagnose(ctx, cfg, run, d)
			if err == nil && f.AgentRan {
				health.note(&f)
			}
			return f, true, err
		})(ctx, in, out)
	}
}

// agentHealth tells an agent that is down from a dossier it cannot
// diagnose. A run that failed without an answer (the CLI missing, its
// login rejected, its provider down, a crash, a timeout) is the agent's
// failure while no dossier of the scan has been diagnosed: the scan then
// stops running agents, and the defects wait, uncharged. Once one dossier
// was diagnosed, the agent works, and a later failure is that dossier's.
// An answer that came back unusable is always the dossier's.
type agentHealth struct {
	mu        sync.Mutex
	succeeded bool
	down      string
}

func (h *agentHealth) isDown() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.down, h.down != ""
}

// note classifies f's run, marking a failure the agent's own as a wait.
func (h *agentHealth) note(f *pipeline.Finding) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case f.Failure == "":
		h.succeeded = true
	case f.Unusable || h.succeeded:
	default:
		if h.down == "" {
			h.down = f.Failure
		}
		f.Dossier = withWait(f.Dossier, pipeline.WaitAgent, f.Failure)
		f.AgentRan = false // an outage's run is not the defect's diagnosis: not charged
	}
}

func withWait(d pipeline.Dossier, what, reason string) pipeline.Dossier {
	d.Wait = &pipeline.Wait{For: what, Reason: reason}
	return d
}

// AgentWillRun is the agent stage's pass-through rule: only a new defect
// without a diagnosis cached from an earlier scan, and not held back by an
// outage, runs the agent.
func AgentWillRun(d pipeline.Dossier) bool {
	return d.Verdict == pipeline.VerdictNew && d.Group.Finding == nil && d.Wait == nil
}

// agentDiagnose applies the pass-through rules and runs the agent, turning a
// panic into a failed finding so one bad dossier cannot stop the scan.
func agentDiagnose(ctx context.Context, cfg AgentConfig, run agent.Runner, d pipeline.Dossier) (f pipeline.Finding, err error) {
	scrub := cfg.Scrub
	if scrub == nil {
		scrub = func(s string) string { return s }
	}
	if !AgentWillRun(d) {
		f := pipeline.Finding{Dossier: d}
		if d.Verdict == pipeline.VerdictNew {
			// Diagnosed by an earlier scan (an older version kept it unscrubbed).
			f.Answer = agent.ScrubAnswer(d.Group.Finding, scrub)
		}
		return f, nil
	}
	if err := ctx.Err(); err != nil {
		return pipeline.Finding{}, err
	}
	log := cfg.Log.With().Str("fingerprint", d.Fingerprint).Str("harness", cfg.Harness).Logger()
	defer func() {
		if r := recover(); r != nil {
			// The panic value may quote the agent's output: scrubbed first.
			reason := scrub(fmt.Sprintf("agent panicked: %v", r))
			log.Error().Str("panic", reason).Bytes("stack", debug.Stack()).Msg("agent panicked")
			f, err = pipeline.Finding{Dossier: d, Failure: reason}, nil
		}
	}()
	if cfg.BeforeRun != nil {
		if err := cfg.BeforeRun(d); err != nil {
			return pipeline.Finding{}, err
		}
	}
	if cfg.Running != nil {
		defer cfg.Running(d)()
	}
	start := time.Now()
	log.Debug().Msg("agent started")
	// The runner scrubbed what the agent wrote (agent.Config.Scrub).
	f, err = run.Diagnose(ctx, d)
	if err != nil {
		return f, err
	}
	f.AgentRan, f.AgentTook = true, time.Since(start)
	if f.Failure != "" {
		log.Warn().Dur("took", time.Since(start)).Str("failure", f.Failure).Msg("agent failed")
	} else {
		log.Info().Dur("took", time.Since(start)).Msg("agent diagnosed")
	}
	return f, nil
}
