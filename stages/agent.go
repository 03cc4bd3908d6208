package stages

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// Harness names accepted in AgentConfig.Harness.
const (
	AgentHarnessClaude  = "claude"
	AgentHarnessCursor  = "cursor"
	AgentHarnessCodex   = "codex"
	AgentHarnessGemini  = "gemini"
	AgentHarnessCommand = "command"
	AgentHarnessBuiltin = "builtin"
	AgentHarnessOpenAI  = "openai"
)

// AgentBinaries are the known CLIs' executables, AgentConfig.Binary's
// defaults: the one list the agent stage runs and doctor looks for.
// "command" runs its argv's first element; the others run no binary.
var AgentBinaries = map[string]string{
	AgentHarnessClaude: "claude", AgentHarnessCursor: "cursor-agent",
	AgentHarnessCodex: "codex", AgentHarnessGemini: "gemini",
}

// AgentDefaultTimeout bounds an agent run when AgentConfig.Timeout is zero:
// an agent CLI that hangs must never stall a scan forever.
const AgentDefaultTimeout = 15 * time.Minute

// AgentConfig configures the agent stage.
type AgentConfig struct {
	Harness string // "claude" | "cursor" | "codex" | "gemini" | "command" | "builtin"
	// Command is the argv for harness "command". Elements may contain the
	// placeholders {prompt} and {promptFile}, substituted element-wise and
	// never through a shell.
	Command []string
	Model   string        // claude: --model M; cursor, codex, gemini: -m M
	Timeout time.Duration // kills the whole process group on expiry; 0 means AgentDefaultTimeout
	// Binary overrides the executable for claude/cursor/codex/gemini (tests
	// point it at a fake); default "claude" / "cursor-agent" / "codex" /
	// "gemini".
	Binary   string
	Parallel int // agents run at once; 0 means 1
	// Env names the variables passed to the agent beyond the base set
	// (PATH, HOME, LANG, LC_*, TZ, TMPDIR): its own credentials, such as
	// ANTHROPIC_API_KEY (selfDiagnosis.agentEnv). Nothing else is.
	Env []string
	Log zerolog.Logger
	// Scrub cleans a failure reason before it is logged or kept: it quotes
	// the agent's output, which may echo a secret from the dossier's source.
	Scrub func(string) string
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
	// Harness "openai" (agent_openai.go): the chat-completions endpoint's
	// base URL, the name of the variable holding its key ("" for none), and
	// the prices (USD per million tokens) its usage is costed at (0: none).
	Endpoint                                    string
	APIKeyEnv                                   string
	PricePerMillionInput, PricePerMillionOutput float64
	// SourcePath (selfDiagnosis.sourcePath) is the service's source tree,
	// absolute: claude may read it (--add-dir), a command gets it as
	// {sourcePath}.
	SourcePath string
	// SourceVersion is the version of the package at SourcePath, when
	// known: the prompt names it, as the-loop's names its own.
	SourceVersion string
	// ReadWrite are more paths a known CLI may write, beyond its run
	// directory and its own state under HOME; the kernel denies the rest.
	// None come from the configuration; the tests' fake agent records
	// what it saw in one.
	ReadWrite []string
}

// agentRunner diagnoses one dossier. A non-nil error means the context was
// cancelled; every other problem is reported in Finding.Failure.
type agentRunner func(ctx context.Context, d pipeline.Dossier) (pipeline.Finding, error)

// NewAgent returns the stage that diagnoses each new group. Errors are data:
// an agent failure becomes a Finding with Failure set, and the stage itself
// fails only when its context is cancelled.
func NewAgent(cfg AgentConfig) (pipeline.Stage[pipeline.Dossier, pipeline.Finding], error) {
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("selfDiagnosis.timeout: must not be negative, got %s", cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = AgentDefaultTimeout
	}
	if cfg.Parallel < 0 {
		return nil, fmt.Errorf("selfDiagnosis.parallel: must not be negative, got %d", cfg.Parallel)
	}
	if cfg.Parallel == 0 {
		cfg.Parallel = 1
	}
	if err := ValidateAgentEnv(cfg.Env); err != nil {
		return nil, fmt.Errorf("selfDiagnosis.agentEnv: %w", err)
	}
	var run agentRunner
	switch cfg.Harness {
	case AgentHarnessClaude, AgentHarnessCursor, AgentHarnessCodex, AgentHarnessGemini:
		run = func(ctx context.Context, d pipeline.Dossier) (pipeline.Finding, error) {
			return agentRunProcess(ctx, cfg, d)
		}
	case AgentHarnessCommand:
		if len(cfg.Command) == 0 || cfg.Command[0] == "" {
			return nil, errors.New("selfDiagnosis.command: harness \"command\" needs a non-empty argv")
		}
		run = func(ctx context.Context, d pipeline.Dossier) (pipeline.Finding, error) {
			return agentRunProcess(ctx, cfg, d)
		}
	case AgentHarnessBuiltin:
		run = func(_ context.Context, d pipeline.Dossier) (pipeline.Finding, error) {
			return pipeline.Finding{Dossier: d, Answer: AgentBuiltinAnswer(d.Group)}, nil
		}
	case AgentHarnessOpenAI:
		r, err := newOpenAIRunner(cfg, nil)
		if err != nil {
			return nil, err
		}
		run = r.run
	default:
		return nil, fmt.Errorf("selfDiagnosis.harness: unknown harness %q (want claude, cursor, codex, gemini, openai, command or builtin)", cfg.Harness)
	}
	return agentStage(cfg, run), nil
}

// agentStage wraps run with the pass-through rules, logging, panic recovery,
// order-preserving parallelism and, per scan, the agent's health.
func agentStage(cfg AgentConfig, run agentRunner) pipeline.Stage[pipeline.Dossier, pipeline.Finding] {
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
func agentDiagnose(ctx context.Context, cfg AgentConfig, run agentRunner, d pipeline.Dossier) (f pipeline.Finding, err error) {
	scrub := cfg.Scrub
	if scrub == nil {
		scrub = func(s string) string { return s }
	}
	if !AgentWillRun(d) {
		f := pipeline.Finding{Dossier: d}
		if d.Verdict == pipeline.VerdictNew {
			// Diagnosed by an earlier scan (an older version kept it unscrubbed).
			f.Answer = scrubAnswer(d.Group.Finding, scrub)
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
	f, err = run(ctx, d)
	if err != nil {
		return f, err
	}
	f.AgentRan, f.AgentTook = true, time.Since(start)
	// Everything the agent wrote is scrubbed here, where it enters the
	// tool, before anything logs, keeps or records it (state, ledger,
	// events); compose scrubs again what it publishes.
	f.Failure = scrub(f.Failure)
	f.Answer = scrubAnswer(f.Answer, scrub)
	if f.Failure != "" {
		log.Warn().Dur("took", time.Since(start)).Str("failure", f.Failure).Msg("agent failed")
	} else {
		log.Info().Dur("took", time.Since(start)).Msg("agent diagnosed")
	}
	return f, nil
}

// scrubAnswer returns a copy of a with every text the agent wrote scrubbed.
func scrubAnswer(a *pipeline.Answer, scrub func(string) string) *pipeline.Answer {
	if a == nil {
		return nil
	}
	c := *a
	c.Title, c.Summary, c.RootCause, c.SuggestedFix = scrub(a.Title), scrub(a.Summary), scrub(a.RootCause), scrub(a.SuggestedFix)
	c.Verdict = scrub(a.Verdict)
	c.Evidence = nil
	for _, e := range a.Evidence {
		c.Evidence = append(c.Evidence, scrub(e))
	}
	return &c
}
