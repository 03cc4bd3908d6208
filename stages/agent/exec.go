package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/stages/agent/sandbox"
	"github.com/the-loop/the-loop-diagnose/stages/agent/supervise"
)

const (
	// stdoutCap bounds what is kept of an agent's stdout: an answer is a
	// few KiB, so more means a runaway agent, not a diagnosis.
	stdoutCap = 1 << 20
	// stderrTail is how much of stderr's end is kept for failure reasons.
	stderrTail = 4 << 10
	// stderrQuoted is how many characters of it a failure reason quotes.
	stderrQuoted = 500
	// dossierFile is the only file in the agent's working directory.
	dossierFile = "dossier.md"
)

// runProcess runs one agent CLI one-shot in a fresh directory holding
// only dossier.md and turns its output into a Finding.
func runProcess(ctx context.Context, cfg Config, d pipeline.Dossier) (pipeline.Finding, error) {
	fail := func(format string, args ...any) (pipeline.Finding, error) {
		return pipeline.Finding{Dossier: d, Failure: fmt.Sprintf(format, args...)}, nil
	}
	// What runs that died (SIGKILLed with their supervisor) left behind.
	if removed := sweepStale(cfg.Timeout); len(removed) > 0 {
		cfg.Log.Info().Strs("removed", removed).Msg("removed the temporary directories of agent runs that died")
	}
	// root holds the working directory and, beside it, the prompt file, so
	// the agent's cwd holds nothing but the dossier.
	root, err := os.MkdirTemp("", dirPrefix+"*")
	if err != nil {
		return fail("agent: cannot create a working directory: %v", err)
	}
	// Locked while it lives (SweepDirs), unlocked once removed.
	defer lockDir(root)()
	defer os.RemoveAll(root)
	if root, err = filepath.Abs(root); err != nil { // a relative TMPDIR
		return fail("agent: cannot create a working directory: %v", err)
	}
	workDir := filepath.Join(root, "work")
	if err := os.Mkdir(workDir, 0o700); err != nil {
		return fail("agent: cannot create a working directory: %v", err)
	}
	// The same carriable text the prompt quotes inline, so the two agree.
	if err := os.WriteFile(filepath.Join(workDir, dossierFile), []byte(Carriable(d.Markdown)), 0o600); err != nil {
		return fail("agent: cannot write the dossier: %v", err)
	}
	if cfg.Harness == HarnessCursor {
		if err := os.Mkdir(filepath.Join(workDir, ".cursor"), 0o700); err != nil {
			return fail("agent: cannot write cursor's permissions: %v", err)
		}
		if err := os.WriteFile(filepath.Join(workDir, ".cursor", "cli.json"), cursorConfig(), 0o600); err != nil {
			return fail("agent: cannot write cursor's permissions: %v", err)
		}
	}
	prompt := cfg.Prompt(d)
	promptFile := filepath.Join(root, "prompt.md")
	argv, err := buildArgv(cfg, prompt, promptFile, workDir)
	if err != nil {
		return fail("agent: %v", err)
	}
	if cfg.Harness == HarnessCommand && argvUses(cfg.Command, "{promptFile}") {
		if err := os.WriteFile(promptFile, []byte(prompt), 0o600); err != nil {
			return fail("agent: cannot write the prompt file: %v", err)
		}
	}
	if cfg.Harness == HarnessCodex {
		if err := os.WriteFile(filepath.Join(root, codexSchemaFile), codexSchema(), 0o600); err != nil {
			return fail("agent: cannot write the answer's schema: %v", err)
		}
	}

	env := allowedEnv(os.Environ(), append(slices.Clone(harnessEnv[cfg.Harness]), cfg.Env...))
	env = append(env, harnessSetEnv[cfg.Harness]...)
	env = harnessAdaptEnv(cfg.Harness, env)
	harden(cfg.Log)
	var policy func(path string) *sandbox.Policy
	if Confined(cfg.Harness) {
		if env, err = confineEnv(env, root); err != nil {
			return fail("agent: cannot create its temporary directory: %v", err)
		}
		policy = func(path string) *sandbox.Policy { return confinePolicy(cfg, path, root, env) }
	}
	res := execute(ctx, cfg.Timeout, root, workDir, argv, env, policy, cfg.Scrub)
	if err := ctx.Err(); err != nil {
		// The scan is being stopped: no finding, the group is retried later.
		return pipeline.Finding{}, err
	}
	if res.failure != "" {
		// A CLI that exited saying why in its own shape: its reason, and
		// what the run cost. Still the agent's failure.
		if reason, cost := exitReason(cfg.Harness, res); reason != "" {
			f, _ := fail("agent exited with %s: %s", res.exitStatus, reason)
			f.Cost = cost
			return f, nil
		}
		return fail("%s", res.failure)
	}
	var answer *pipeline.Answer
	var cost *pipeline.Cost
	switch cfg.Harness {
	case HarnessCodex:
		// Written by codex as the run ends; missing when it wrote none.
		last, _ := os.ReadFile(filepath.Join(root, codexLastMessageFile))
		answer, cost, err = codexAnswer(res.stdout, last)
	case HarnessGemini:
		answer, cost, err = geminiAnswer(res.stdout)
	default:
		answer, cost, err = envelopeAnswer(cfg.Harness, res.stdout)
	}
	if err != nil {
		f, _ := fail("%v", err)
		f.Cost = cost
		// It ran and answered: the answer is this dossier's failure, unless
		// the CLI itself reported that the run failed.
		var reported *reportedError
		f.Unusable = !errors.As(err, &reported)
		return f, nil
	}
	return pipeline.Finding{Dossier: d, Answer: answer, Cost: cost}, nil
}

// buildArgv builds the argv for the configured harness. An operator's
// command is theirs to restrict; claude, cursor-agent, codex and gemini get
// the read-only flags (env.go).
func buildArgv(cfg Config, prompt, promptFile, workDir string) ([]string, error) {
	switch cfg.Harness {
	case HarnessClaude:
		return claudeArgv(cfg, prompt, workDir), nil
	case HarnessCursor:
		return cursorArgv(cfg, prompt, workDir), nil
	case HarnessCodex:
		return codexArgv(cfg, prompt, filepath.Dir(promptFile), workDir, os.Getenv("OPENAI_BASE_URL")), nil
	case HarnessGemini:
		return geminiArgv(cfg, prompt), nil
	case HarnessCommand:
		return commandArgv(cfg, prompt, promptFile), nil
	}
	return nil, fmt.Errorf("harness %q does not run a process", cfg.Harness)
}

// uncarriable names the first argv element or environment entry exec
// cannot pass (one holding a NUL), or returns "". Log text never does
// (Prompt is carriable); this catches the configuration's own
// (a YAML "\0" in selfDiagnosis.command or model), with a reason that says
// where, instead of exec's bare "invalid argument".
func uncarriable(argv, env []string) string {
	for i, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Sprintf("agent: argument %d of the agent's command line holds a NUL byte, which exec cannot pass: check selfDiagnosis.command and model", i)
		}
	}
	for _, kv := range env {
		if strings.IndexByte(kv, 0) >= 0 {
			name, _, _ := strings.Cut(kv, "=")
			return fmt.Sprintf("agent: environment variable %q holds a NUL byte, which exec cannot pass", name)
		}
	}
	return ""
}

// execResult is what one process run produced. failure is empty when
// the process exited 0 with stdout within the cap.
type execResult struct {
	stdout  []byte
	failure string
	// When the process exited non-zero: its status ("exit status 1") and
	// the end of its stderr, for a CLI that says why in its own shape.
	exitStatus string
	stderr     []byte
}

// exitReason is the reason a known CLI gave, in its own shape, for
// exiting non-zero, and what the run cost; "" when it gave none.
func exitReason(harness string, res execResult) (string, *pipeline.Cost) {
	if res.exitStatus == "" {
		return "", nil
	}
	switch harness {
	case HarnessCodex:
		run := codexEvents(res.stdout)
		if err := run.reported(); err != nil {
			return err.Error(), run.cost
		}
	case HarnessGemini:
		if err := geminiFailure(res.stdout, res.stderr); err != nil {
			return err.Error(), nil
		}
	}
	return "", nil
}

// execute runs argv (no shell) in dir in its own process group and kills
// the whole group on timeout, cancellation or runaway output, and when the
// agent exits leaving children behind, so the agent's children die with
// it. On Linux the agent also dies with us, however we die, and so do its
// descendants that left its group (package supervise);
// root, the run's temporary directory, is then removed for us.
//
// scrub (nil for none) cleans the stderr tail before it is cut to the few
// hundred characters a failure reason quotes: a cut must never stop a rule
// from seeing the context (a key name, a BEGIN line) it needs.
//
// policy, when set, gives the kernel's confinement for the resolved path
// (confine.go).
func execute(ctx context.Context, timeout time.Duration, root, dir string, argv, env []string, policy func(path string) *sandbox.Policy, scrub func(string) string) execResult {
	// The agent's directory must be the fresh one we made: an empty or
	// relative Dir would start it where we run, beside the event log.
	if fi, err := os.Lstat(dir); err != nil || !filepath.IsAbs(dir) || !fi.IsDir() {
		return execResult{failure: fmt.Sprintf("agent: working directory %q is not a directory of its own", dir)}
	}
	if why := uncarriable(argv, env); why != "" {
		return execResult{failure: why}
	}
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	name := argv[0]
	if strings.ContainsRune(name, filepath.Separator) && !filepath.IsAbs(name) {
		// exec resolves a relative path against cmd.Dir, the fresh temp
		// dir; the operator meant it relative to where they ran us.
		if abs, err := filepath.Abs(name); err == nil {
			name = abs
		}
	}
	// Resolved here, with our PATH, as exec.Command would: the supervisor
	// that starts it on Linux is given the path.
	path, err := exec.LookPath(name)
	switch {
	case errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist):
		return execResult{failure: fmt.Sprintf("agent executable not found: %q", argv[0])}
	case errors.Is(err, exec.ErrDot): // found only through a relative PATH entry: refused, as exec does
		return execResult{failure: fmt.Sprintf("agent could not run %q: %v", argv[0], err)}
	case err != nil: // there but not executable: starting it says why
		path = name
	}
	stdout := &cappedBuffer{limit: stdoutCap, overflow: cancel}
	stderr := &tailBuffer{limit: stderrTail}

	p := supervise.Proc{Path: path, Argv: argv, Root: root, Dir: dir, Env: env, Stdout: stdout, Stderr: stderr}
	if policy != nil {
		p.Policy = policy(path)
	}
	err = supervise.Run(runCtx, p)
	switch {
	case stdout.overflowed:
		return execResult{failure: fmt.Sprintf("agent output exceeded %d bytes", stdoutCap)}
	case err == nil:
		return execResult{stdout: stdout.Bytes()}
	case errors.Is(runCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		return execResult{failure: fmt.Sprintf("agent timed out after %s", timeout)}
	case ctx.Err() != nil:
		return execResult{failure: "agent cancelled"}
	case errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist):
		return execResult{failure: fmt.Sprintf("agent executable not found: %q", argv[0])}
	}
	var exitErr *supervise.ExitError
	if errors.As(err, &exitErr) {
		return execResult{failure: fmt.Sprintf("agent exited with %s%s", exitErr.Status, stderrSuffix(stderr, scrub)),
			exitStatus: exitErr.Status, stdout: stdout.Bytes(), stderr: slices.Clone(stderr.Bytes())}
	}
	if errors.Is(err, exec.ErrWaitDelay) {
		// Exit status 0, but a leftover child kept the output open; the
		// answer printed before exiting is still usable.
		return execResult{stdout: stdout.Bytes()}
	}
	return execResult{failure: fmt.Sprintf("agent could not run %q: %v", argv[0], err)}
}

// stderrSuffix renders the end of stderr for a failure reason: the
// whole kept tail scrubbed, then its last stderrQuoted characters.
func stderrSuffix(stderr *tailBuffer, scrub func(string) string) string {
	tail := stderr.excerpt(stderrTail)
	if scrub != nil {
		tail = scrub(tail)
	}
	tail = strings.TrimSpace(tail)
	if tail == "" {
		return " (no stderr)"
	}
	if cut := tailCut([]byte(tail), stderrQuoted); cut > 0 {
		tail = "…" + tail[cut:]
	}
	return ": " + tail
}

// cappedBuffer keeps at most limit bytes and calls overflow once when
// more arrive, so a runaway agent is killed instead of read forever.
type cappedBuffer struct {
	buf        bytes.Buffer
	limit      int
	overflowed bool
	overflow   func()
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if b.overflowed {
		return 0, errors.New("agent output over the cap")
	}
	if b.buf.Len()+len(p) > b.limit {
		b.overflowed = true
		b.overflow()
		return 0, errors.New("agent output over the cap")
	}
	return b.buf.Write(p)
}

func (b *cappedBuffer) Bytes() []byte { return b.buf.Bytes() }

// tailBuffer keeps the last limit bytes written to it, and whether
// the bytes it dropped left a private key block open: a tail that starts
// inside one has lost the BEGIN line the scrubber recognises it by.
type tailBuffer struct {
	buf     []byte
	limit   int
	dropped pEMState
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= b.limit {
		b.dropped.feed(b.buf)
		b.dropped.feed(p[:len(p)-b.limit])
		b.buf = append(b.buf[:0], p[len(p)-b.limit:]...)
		return n, nil
	}
	if over := len(b.buf) + len(p) - b.limit; over > 0 {
		b.dropped.feed(b.buf[:over])
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	b.buf = append(b.buf, p...)
	return n, nil
}

func (b *tailBuffer) Bytes() []byte { return b.buf }

// excerpt is the printable end of what was written, at most n runes, with
// the part of a key block it starts inside masked up to the block's END.
func (b *tailBuffer) excerpt(n int) string {
	cut := tailCut(b.buf, n)
	st := b.dropped
	st.feed(b.buf[:cut])
	text := maskKeyBlocks(string(b.buf[cut:]), st.open || st.beginsAcross(b.buf[cut:]))
	prefix := ""
	if cut > 0 {
		prefix = "…"
	}
	return prefix + printable(text)
}

// maskKeyBlocks masks the body of every key block in s (the text after
// a BEGIN line up to its END line, or to the end of s), and from the start
// when s begins inside one (open). The excerpt's line breaks become spaces,
// which would leave the scrubber unable to tell where a cut-off block's
// body stops; masking here does not depend on them.
func maskKeyBlocks(s string, open bool) string {
	var b strings.Builder
	for s != "" {
		if open {
			end := strings.Index(s, pEMEnd)
			b.WriteString(keyMask)
			if end < 0 {
				break
			}
			b.WriteString(" ")
			s, open = s[end:], false
			b.WriteString(pEMEnd)
			s = s[len(pEMEnd):]
			continue
		}
		begin := strings.Index(s, pEMBegin)
		if begin < 0 {
			b.WriteString(s)
			break
		}
		// The BEGIN line stays, so a reader knows what was there: up to
		// the label's closing dashes, or the line's end.
		head := begin + len(pEMBegin)
		if i := strings.Index(s[head:], "-----"); i >= 0 && i <= 60 && !strings.ContainsAny(s[head:head+i], "\r\n") {
			head += i + len("-----")
		} else if i := strings.IndexAny(s[head:], "\r\n"); i >= 0 {
			head += i
		} else {
			head = len(s)
		}
		b.WriteString(s[:head])
		s, open = s[head:], true
		if s != "" {
			b.WriteString(" ")
		}
	}
	return b.String()
}

const (
	pEMBegin = "-----BEGIN "
	pEMEnd   = "-----END "
	keyMask  = "<redacted:private-key>"
)

// pEMState follows a byte stream fed in order: open is set after a
// BEGIN line until its END line. carry keeps a marker split between feeds.
type pEMState struct {
	open  bool
	carry string
}

func (st *pEMState) feed(p []byte) {
	if len(p) == 0 {
		return
	}
	s := st.carry + string(p)
	if b, e := strings.LastIndex(s, pEMBegin), strings.LastIndex(s, pEMEnd); b > e {
		st.open = true
	} else if e > b {
		st.open = false
	}
	st.carry = s[max(0, len(s)-len(pEMBegin)+1):]
}

// beginsAcross reports whether a BEGIN marker starts in the bytes fed so
// far and ends in next: neither side holds it whole.
func (st *pEMState) beginsAcross(next []byte) bool {
	s := st.carry + string(next[:min(len(next), len(pEMBegin)-1)])
	i := strings.Index(s, pEMBegin)
	return i >= 0 && i < len(st.carry) && i+len(pEMBegin) > len(st.carry)
}

// tailCut is the byte offset in b where its last n runes start.
func tailCut(b []byte, n int) int {
	cut := len(b)
	for runes := 0; cut > 0 && runes < n; runes++ {
		_, size := utf8.DecodeLastRune(b[:cut])
		cut -= size
	}
	return cut
}
