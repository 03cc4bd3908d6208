// Package agent runs one diagnosis: the harnesses behind Runner (the CLIs
// claude, cursor-agent, codex and gemini, an operator's command, an
// OpenAI-compatible endpoint, and the mechanical builtin), the prompt they
// are given, the parsing of what they answer, and the limits every agent
// process runs under: the environment allow-list and read-only flags
// (env.go), a fresh directory holding only the dossier (tmpdir.go), capped
// output (exec.go), the kernel's confinement (confine.go, package sandbox)
// and a supervisor that lets nothing it starts outlive the run (package
// supervise, which every binary running agents starts with
// supervise.Main).
//
// The agent stage (stages.NewAgent) wraps a Runner with what a scan adds:
// the pass-through rules, the budget's hooks, parallelism and the agent's
// health.
package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// Harness names accepted in Config.Harness.
const (
	HarnessClaude  = "claude"
	HarnessCursor  = "cursor"
	HarnessCodex   = "codex"
	HarnessGemini  = "gemini"
	HarnessCommand = "command"
	HarnessBuiltin = "builtin"
	HarnessOpenAI  = "openai"
)

// Binaries are the known CLIs' executables, Config.Binary's defaults: the
// one list the harnesses run and doctor looks for. "command" runs its
// argv's first element; the others run no binary.
var Binaries = map[string]string{
	HarnessClaude: "claude", HarnessCursor: "cursor-agent",
	HarnessCodex: "codex", HarnessGemini: "gemini",
}

// DefaultTimeout bounds an agent run when Config.Timeout is zero: an agent
// CLI that hangs must never stall a scan forever.
const DefaultTimeout = 15 * time.Minute

// Config configures a harness.
type Config struct {
	Harness string // "claude" | "cursor" | "codex" | "gemini" | "command" | "builtin" | "openai"
	// Command is the argv for harness "command". Elements may contain the
	// placeholders {prompt}, {promptFile} and {sourcePath}, substituted
	// element-wise and never through a shell.
	Command []string
	Model   string        // claude: --model M; cursor, codex, gemini: -m M
	Timeout time.Duration // kills the whole process group on expiry; 0 means DefaultTimeout
	// Binary overrides the executable for claude/cursor/codex/gemini (tests
	// point it at a fake); default Binaries[Harness].
	Binary string
	// Env names the variables passed to the agent beyond the base set
	// (PATH, HOME, LANG, LC_*, TZ, TMPDIR): its own credentials, such as
	// ANTHROPIC_API_KEY (selfDiagnosis.agentEnv). Nothing else is.
	Env []string
	Log zerolog.Logger
	// Scrub cleans every text the agent wrote (its answer, a failure
	// reason quoting its output) before the finding leaves the Runner: it
	// may echo a secret from the dossier's source. nil: none.
	Scrub func(string) string
	// Harness "openai" (openai.go): the chat-completions endpoint's base
	// URL, the name of the variable holding its key ("" for none), and the
	// prices (USD per million tokens) its usage is costed at (0: none).
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

// Runner diagnoses one dossier. A non-nil error means the context was
// cancelled; every other problem is reported in Finding.Failure (Unusable
// when it is the dossier's, not the agent's). Every text of the finding is
// scrubbed (Config.Scrub).
type Runner interface {
	Diagnose(ctx context.Context, d pipeline.Dossier) (pipeline.Finding, error)
}

// RunnerFunc is a function as a Runner.
type RunnerFunc func(ctx context.Context, d pipeline.Dossier) (pipeline.Finding, error)

// Diagnose calls f.
func (f RunnerFunc) Diagnose(ctx context.Context, d pipeline.Dossier) (pipeline.Finding, error) {
	return f(ctx, d)
}

// New checks cfg and returns the Runner of its harness. Its errors name
// the config key at fault.
func New(cfg Config) (Runner, error) {
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("selfDiagnosis.timeoutSeconds: must not be negative, got %s", cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if err := ValidateEnv(cfg.Env); err != nil {
		return nil, fmt.Errorf("selfDiagnosis.agentEnv: %w", err)
	}
	if cfg.Scrub == nil {
		cfg.Scrub = func(s string) string { return s }
	}
	var run RunnerFunc
	switch cfg.Harness {
	case HarnessClaude, HarnessCursor, HarnessCodex, HarnessGemini:
		run = func(ctx context.Context, d pipeline.Dossier) (pipeline.Finding, error) {
			return runProcess(ctx, cfg, d)
		}
	case HarnessCommand:
		if len(cfg.Command) == 0 || cfg.Command[0] == "" {
			return nil, errors.New("selfDiagnosis.command: harness \"command\" needs a non-empty argv")
		}
		run = func(ctx context.Context, d pipeline.Dossier) (pipeline.Finding, error) {
			return runProcess(ctx, cfg, d)
		}
	case HarnessBuiltin:
		run = func(_ context.Context, d pipeline.Dossier) (pipeline.Finding, error) {
			return pipeline.Finding{Dossier: d, Answer: BuiltinAnswer(d.Group)}, nil
		}
	case HarnessOpenAI:
		r, err := newOpenAIRunner(cfg, nil)
		if err != nil {
			return nil, err
		}
		run = r.run
	default:
		return nil, fmt.Errorf("selfDiagnosis.harness: unknown harness %q (want claude, cursor, codex, gemini, openai, command or builtin)", cfg.Harness)
	}
	return scrubbed{run, cfg.Scrub}, nil
}

// scrubbed is a harness whose findings are scrubbed where they enter the
// tool, before anything logs, keeps or records them (state, ledger,
// events); compose scrubs again what it publishes.
type scrubbed struct {
	run   RunnerFunc
	scrub func(string) string
}

func (s scrubbed) Diagnose(ctx context.Context, d pipeline.Dossier) (pipeline.Finding, error) {
	f, err := s.run(ctx, d)
	if err != nil {
		return f, err
	}
	f.Failure = s.scrub(f.Failure)
	f.Answer = ScrubAnswer(f.Answer, s.scrub)
	return f, nil
}

// ScrubAnswer returns a copy of a with every text the agent wrote scrubbed.
func ScrubAnswer(a *pipeline.Answer, scrub func(string) string) *pipeline.Answer {
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
