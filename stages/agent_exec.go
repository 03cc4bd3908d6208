package stages

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/stages/agent/sandbox"
)

const (
	// agentStdoutCap bounds what is kept of an agent's stdout: an answer is a
	// few KiB, so more means a runaway agent, not a diagnosis.
	agentStdoutCap = 1 << 20
	// agentStderrTail is how much of stderr's end is kept for failure reasons.
	agentStderrTail = 4 << 10
	// agentStderrQuoted is how many characters of it a failure reason quotes.
	agentStderrQuoted = 500
	// agentWaitDelay bounds the wait for stdout/stderr to close after the
	// process is killed, in case something outside the group holds them.
	agentWaitDelay = 2 * time.Second
	// agentDossierFile is the only file in the agent's working directory.
	agentDossierFile = "dossier.md"
)

// agentRunProcess runs one agent CLI one-shot in a fresh directory holding
// only dossier.md and turns its output into a Finding.
func agentRunProcess(ctx context.Context, cfg AgentConfig, d pipeline.Dossier) (pipeline.Finding, error) {
	fail := func(format string, args ...any) (pipeline.Finding, error) {
		return pipeline.Finding{Dossier: d, Failure: fmt.Sprintf(format, args...)}, nil
	}
	// What runs that died (SIGKILLed with their supervisor) left behind.
	if removed := agentSweepStale(cfg.Timeout); len(removed) > 0 {
		cfg.Log.Info().Strs("removed", removed).Msg("removed the temporary directories of agent runs that died")
	}
	// root holds the working directory and, beside it, the prompt file, so
	// the agent's cwd holds nothing but the dossier.
	root, err := os.MkdirTemp("", agentDirPrefix+"*")
	if err != nil {
		return fail("agent: cannot create a working directory: %v", err)
	}
	// Locked while it lives (SweepAgentDirs), unlocked once removed.
	defer agentLockDir(root)()
	defer os.RemoveAll(root)
	if root, err = filepath.Abs(root); err != nil { // a relative TMPDIR
		return fail("agent: cannot create a working directory: %v", err)
	}
	workDir := filepath.Join(root, "work")
	if err := os.Mkdir(workDir, 0o700); err != nil {
		return fail("agent: cannot create a working directory: %v", err)
	}
	// The same carriable text the prompt quotes inline, so the two agree.
	if err := os.WriteFile(filepath.Join(workDir, agentDossierFile), []byte(AgentCarriable(d.Markdown)), 0o600); err != nil {
		return fail("agent: cannot write the dossier: %v", err)
	}
	if cfg.Harness == AgentHarnessCursor {
		if err := os.Mkdir(filepath.Join(workDir, ".cursor"), 0o700); err != nil {
			return fail("agent: cannot write cursor's permissions: %v", err)
		}
		if err := os.WriteFile(filepath.Join(workDir, ".cursor", "cli.json"), agentCursorConfig(), 0o600); err != nil {
			return fail("agent: cannot write cursor's permissions: %v", err)
		}
	}
	prompt := cfg.Prompt(d)
	promptFile := filepath.Join(root, "prompt.md")
	argv, err := agentArgv(cfg, prompt, promptFile, workDir)
	if err != nil {
		return fail("agent: %v", err)
	}
	if cfg.Harness == AgentHarnessCommand && agentArgvUses(cfg.Command, "{promptFile}") {
		if err := os.WriteFile(promptFile, []byte(prompt), 0o600); err != nil {
			return fail("agent: cannot write the prompt file: %v", err)
		}
	}
	if cfg.Harness == AgentHarnessCodex {
		if err := os.WriteFile(filepath.Join(root, agentCodexSchemaFile), agentCodexSchema(), 0o600); err != nil {
			return fail("agent: cannot write the answer's schema: %v", err)
		}
	}

	env := agentEnv(os.Environ(), append(slices.Clone(agentHarnessEnv[cfg.Harness]), cfg.Env...))
	env = append(env, agentHarnessSetEnv[cfg.Harness]...)
	env = agentHarnessAdaptEnv(cfg.Harness, env)
	agentHarden(cfg.Log)
	var policy func(path string) *sandbox.Policy
	if AgentConfined(cfg.Harness) {
		if env, err = agentConfineEnv(env, root); err != nil {
			return fail("agent: cannot create its temporary directory: %v", err)
		}
		policy = func(path string) *sandbox.Policy { return agentPolicy(cfg, path, root, env) }
	}
	res := agentExec(ctx, cfg.Timeout, root, workDir, argv, env, policy, cfg.Scrub)
	if err := ctx.Err(); err != nil {
		// The scan is being stopped: no finding, the group is retried later.
		return pipeline.Finding{}, err
	}
	if res.failure != "" {
		// A CLI that exited saying why in its own shape: its reason, and
		// what the run cost. Still the agent's failure.
		if reason, cost := agentExitReason(cfg.Harness, res); reason != "" {
			f, _ := fail("agent exited with %s: %s", res.exitStatus, reason)
			f.Cost = cost
			return f, nil
		}
		return fail("%s", res.failure)
	}
	var answer *pipeline.Answer
	var cost *pipeline.Cost
	switch cfg.Harness {
	case AgentHarnessCodex:
		// Written by codex as the run ends; missing when it wrote none.
		last, _ := os.ReadFile(filepath.Join(root, agentCodexLastMessageFile))
		answer, cost, err = agentCodexAnswer(res.stdout, last)
	case AgentHarnessGemini:
		answer, cost, err = agentGeminiAnswer(res.stdout)
	default:
		answer, cost, err = agentAnswer(cfg.Harness, res.stdout)
	}
	if err != nil {
		f, _ := fail("%v", err)
		f.Cost = cost
		// It ran and answered: the answer is this dossier's failure, unless
		// the CLI itself reported that the run failed.
		var reported *agentReportedError
		f.Unusable = !errors.As(err, &reported)
		return f, nil
	}
	return pipeline.Finding{Dossier: d, Answer: answer, Cost: cost}, nil
}

// agentArgv builds the argv for the configured harness. An operator's
// command is theirs to restrict; claude, cursor-agent, codex and gemini get
// the read-only flags (agent_sandbox.go).
func agentArgv(cfg AgentConfig, prompt, promptFile, workDir string) ([]string, error) {
	switch cfg.Harness {
	case AgentHarnessClaude:
		argv := []string{agentOr(cfg.Binary, AgentBinaries[AgentHarnessClaude]), "-p", prompt, "--output-format", "json"}
		argv = append(argv, agentClaudeFlags(workDir, cfg.SourcePath)...)
		if cfg.Model != "" {
			argv = append(argv, "--model", cfg.Model)
		}
		if cfg.SourcePath != "" {
			// Read access to the source tree, for the Read/Grep/Glob tools.
			argv = append(argv, "--add-dir", cfg.SourcePath)
		}
		return argv, nil
	case AgentHarnessCursor:
		argv := []string{agentOr(cfg.Binary, AgentBinaries[AgentHarnessCursor]), "-p", prompt, "--output-format", "json"}
		if cfg.Model != "" {
			argv = append(argv, "-m", cfg.Model) // as the-loop passes it
		}
		return append(argv, agentCursorFlags(workDir)...), nil
	case AgentHarnessCodex:
		return agentCodexArgv(cfg, prompt, filepath.Dir(promptFile), workDir, os.Getenv("OPENAI_BASE_URL")), nil
	case AgentHarnessGemini:
		return agentGeminiArgv(cfg, prompt), nil
	case AgentHarnessCommand:
		// One pass per element: a prompt that itself contains "{promptFile}"
		// is not substituted again.
		r := strings.NewReplacer("{prompt}", prompt, "{promptFile}", promptFile, "{sourcePath}", cfg.SourcePath)
		argv := make([]string, len(cfg.Command))
		for i, a := range cfg.Command {
			argv[i] = r.Replace(a)
		}
		return argv, nil
	}
	return nil, fmt.Errorf("harness %q does not run a process", cfg.Harness)
}

// agentUncarriable names the first argv element or environment entry exec
// cannot pass (one holding a NUL), or returns "". Log text never does
// (AgentPrompt is carriable); this catches the configuration's own
// (a YAML "\0" in selfDiagnosis.command or model), with a reason that says
// where, instead of exec's bare "invalid argument".
func agentUncarriable(argv, env []string) string {
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

func agentArgvUses(argv []string, placeholder string) bool {
	for _, a := range argv {
		if strings.Contains(a, placeholder) {
			return true
		}
	}
	return false
}

func agentOr(s, fallback string) string {
	if s != "" {
		return s
	}
	return fallback
}

// agentExecResult is what one process run produced. failure is empty when
// the process exited 0 with stdout within the cap.
type agentExecResult struct {
	stdout  []byte
	failure string
	// When the process exited non-zero: its status ("exit status 1") and
	// the end of its stderr, for a CLI that says why in its own shape.
	exitStatus string
	stderr     []byte
}

// agentExitReason is the reason a known CLI gave, in its own shape, for
// exiting non-zero, and what the run cost; "" when it gave none.
func agentExitReason(harness string, res agentExecResult) (string, *pipeline.Cost) {
	if res.exitStatus == "" {
		return "", nil
	}
	switch harness {
	case AgentHarnessCodex:
		run := agentCodexEvents(res.stdout)
		if err := run.reported(); err != nil {
			return err.Error(), run.cost
		}
	case AgentHarnessGemini:
		if err := agentGeminiFailure(res.stdout, res.stderr); err != nil {
			return err.Error(), nil
		}
	}
	return "", nil
}

// agentExec runs argv (no shell) in dir in its own process group and kills
// the whole group on timeout, cancellation or runaway output, and when the
// agent exits leaving children behind, so the agent's children die with
// it. On Linux the agent also dies with us, however we die, and so do its
// descendants that left its group (agentSpawn in agent_exec_linux.go);
// root, the run's temporary directory, is then removed for us.
//
// scrub (nil for none) cleans the stderr tail before it is cut to the few
// hundred characters a failure reason quotes: a cut must never stop a rule
// from seeing the context (a key name, a BEGIN line) it needs.
//
// policy, when set, gives the kernel's confinement for the resolved path
// (agent_confine.go).
func agentExec(ctx context.Context, timeout time.Duration, root, dir string, argv, env []string, policy func(path string) *sandbox.Policy, scrub func(string) string) agentExecResult {
	// The agent's directory must be the fresh one we made: an empty or
	// relative Dir would start it where we run, beside the event log.
	if fi, err := os.Lstat(dir); err != nil || !filepath.IsAbs(dir) || !fi.IsDir() {
		return agentExecResult{failure: fmt.Sprintf("agent: working directory %q is not a directory of its own", dir)}
	}
	if why := agentUncarriable(argv, env); why != "" {
		return agentExecResult{failure: why}
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
		return agentExecResult{failure: fmt.Sprintf("agent executable not found: %q", argv[0])}
	case errors.Is(err, exec.ErrDot): // found only through a relative PATH entry: refused, as exec does
		return agentExecResult{failure: fmt.Sprintf("agent could not run %q: %v", argv[0], err)}
	case err != nil: // there but not executable: starting it says why
		path = name
	}
	stdout := &agentCappedBuffer{limit: agentStdoutCap, overflow: cancel}
	stderr := &agentTailBuffer{limit: agentStderrTail}

	p := agentProc{path: path, argv: argv, root: root, dir: dir, env: env, stdout: stdout, stderr: stderr}
	if policy != nil {
		p.policy = policy(path)
	}
	err = agentSpawn(runCtx, p)
	switch {
	case stdout.overflowed:
		return agentExecResult{failure: fmt.Sprintf("agent output exceeded %d bytes", agentStdoutCap)}
	case err == nil:
		return agentExecResult{stdout: stdout.Bytes()}
	case errors.Is(runCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		return agentExecResult{failure: fmt.Sprintf("agent timed out after %s", timeout)}
	case ctx.Err() != nil:
		return agentExecResult{failure: "agent cancelled"}
	case errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist):
		return agentExecResult{failure: fmt.Sprintf("agent executable not found: %q", argv[0])}
	}
	var exitErr *agentExitError
	if errors.As(err, &exitErr) {
		return agentExecResult{failure: fmt.Sprintf("agent exited with %s%s", exitErr.status, agentStderrSuffix(stderr, scrub)),
			exitStatus: exitErr.status, stdout: stdout.Bytes(), stderr: slices.Clone(stderr.Bytes())}
	}
	if errors.Is(err, exec.ErrWaitDelay) {
		// Exit status 0, but a leftover child kept the output open; the
		// answer printed before exiting is still usable.
		return agentExecResult{stdout: stdout.Bytes()}
	}
	return agentExecResult{failure: fmt.Sprintf("agent could not run %q: %v", argv[0], err)}
}

// agentProc is one agent process to start: path is argv[0] resolved.
type agentProc struct {
	path      string
	argv      []string
	root, dir string
	env       []string
	policy    *sandbox.Policy // nil: not confined by the kernel
	stdout    io.Writer
	stderr    io.Writer
}

// agentExitError is an agent that exited with a status other than 0, as
// os.ProcessState prints it ("exit status 3", "signal: killed").
type agentExitError struct{ status string }

func (e *agentExitError) Error() string { return "agent " + e.status }

// agentRunDirect starts the agent as our own child in a process group of
// its own, and kills the group once the agent exits or ctx is done:
// children that stay in its group die with it, as do (on Linux, by the
// parent-death signal) the agent itself if we are killed. What left its
// group outlives it: agentSpawn prefers a supervisor where it can run one.
func agentRunDirect(ctx context.Context, p agentProc) error {
	cmd := exec.CommandContext(ctx, p.path, p.argv[1:]...)
	cmd.Args[0] = p.argv[0]
	cmd.Dir = p.dir
	cmd.Env = p.env // an explicit list: exec adds no PWD to it
	cmd.Stdin = nil // /dev/null: a one-shot agent must not wait for input
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	unlock := agentDieWithUs(cmd.SysProcAttr)
	defer unlock()
	cmd.Cancel = func() error {
		// The group id is the child's pid (Setpgid); a negative pid
		// signals every process in the group.
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return err
	}
	cmd.WaitDelay = agentWaitDelay
	cmd.Stdout = p.stdout
	cmd.Stderr = p.stderr

	err := cmd.Run()
	// Reap the rest of the group even when the leader exited on its own: a
	// background child must not outlive its one-shot run.
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return &agentExitError{status: exitErr.ProcessState.String()}
	}
	return err
}

// agentStderrSuffix renders the end of stderr for a failure reason: the
// whole kept tail scrubbed, then its last agentStderrQuoted characters.
func agentStderrSuffix(stderr *agentTailBuffer, scrub func(string) string) string {
	tail := stderr.excerpt(agentStderrTail)
	if scrub != nil {
		tail = scrub(tail)
	}
	tail = strings.TrimSpace(tail)
	if tail == "" {
		return " (no stderr)"
	}
	if cut := agentTailCut([]byte(tail), agentStderrQuoted); cut > 0 {
		tail = "…" + tail[cut:]
	}
	return ": " + tail
}

// agentCappedBuffer keeps at most limit bytes and calls overflow once when
// more arrive, so a runaway agent is killed instead of read forever.
type agentCappedBuffer struct {
	buf        bytes.Buffer
	limit      int
	overflowed bool
	overflow   func()
}

func (b *agentCappedBuffer) Write(p []byte) (int, error) {
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

func (b *agentCappedBuffer) Bytes() []byte { return b.buf.Bytes() }

// agentTailBuffer keeps the last limit bytes written to it, and whether
// the bytes it dropped left a private key block open: a tail that starts
// inside one has lost the BEGIN line the scrubber recognises it by.
type agentTailBuffer struct {
	buf     []byte
	limit   int
	dropped agentPEMState
}

func (b *agentTailBuffer) Write(p []byte) (int, error) {
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

func (b *agentTailBuffer) Bytes() []byte { return b.buf }

// excerpt is the printable end of what was written, at most n runes, with
// the part of a key block it starts inside masked up to the block's END.
func (b *agentTailBuffer) excerpt(n int) string {
	cut := agentTailCut(b.buf, n)
	st := b.dropped
	st.feed(b.buf[:cut])
	text := agentMaskKeyBlocks(string(b.buf[cut:]), st.open || st.beginsAcross(b.buf[cut:]))
	prefix := ""
	if cut > 0 {
		prefix = "…"
	}
	return prefix + agentPrintable(text)
}

// agentMaskKeyBlocks masks the body of every key block in s (the text after
// a BEGIN line up to its END line, or to the end of s), and from the start
// when s begins inside one (open). The excerpt's line breaks become spaces,
// which would leave the scrubber unable to tell where a cut-off block's
// body stops; masking here does not depend on them.
func agentMaskKeyBlocks(s string, open bool) string {
	var b strings.Builder
	for s != "" {
		if open {
			end := strings.Index(s, agentPEMEnd)
			b.WriteString(agentKeyMask)
			if end < 0 {
				break
			}
			b.WriteString(" ")
			s, open = s[end:], false
			b.WriteString(agentPEMEnd)
			s = s[len(agentPEMEnd):]
			continue
		}
		begin := strings.Index(s, agentPEMBegin)
		if begin < 0 {
			b.WriteString(s)
			break
		}
		// The BEGIN line stays, so a reader knows what was there: up to
		// the label's closing dashes, or the line's end.
		head := begin + len(agentPEMBegin)
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
	agentPEMBegin = "-----BEGIN "
	agentPEMEnd   = "-----END "
	agentKeyMask  = "<redacted:private-key>"
)

// agentPEMState follows a byte stream fed in order: open is set after a
// BEGIN line until its END line. carry keeps a marker split between feeds.
type agentPEMState struct {
	open  bool
	carry string
}

func (st *agentPEMState) feed(p []byte) {
	if len(p) == 0 {
		return
	}
	s := st.carry + string(p)
	if b, e := strings.LastIndex(s, agentPEMBegin), strings.LastIndex(s, agentPEMEnd); b > e {
		st.open = true
	} else if e > b {
		st.open = false
	}
	st.carry = s[max(0, len(s)-len(agentPEMBegin)+1):]
}

// beginsAcross reports whether a BEGIN marker starts in the bytes fed so
// far and ends in next: neither side holds it whole.
func (st *agentPEMState) beginsAcross(next []byte) bool {
	s := st.carry + string(next[:min(len(next), len(agentPEMBegin)-1)])
	i := strings.Index(s, agentPEMBegin)
	return i >= 0 && i < len(st.carry) && i+len(agentPEMBegin) > len(st.carry)
}

// agentTailCut is the byte offset in b where its last n runes start.
func agentTailCut(b []byte, n int) int {
	cut := len(b)
	for runes := 0; cut > 0 && runes < n; runes++ {
		_, size := utf8.DecodeLastRune(b[:cut])
		cut -= size
	}
	return cut
}
