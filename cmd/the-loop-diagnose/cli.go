package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// Exit codes.
const (
	exitOK      = 0
	exitFailed  = 1   // some defect failed, or a hard error
	exitUsage   = 2   // bad flags or config, or posting not enabled
	exitAborted = 130 // a second SIGINT/SIGTERM aborted the scan
)

// command is one subcommand: its arguments and what it does, for the
// usage listing and its own --help.
type command struct{ name, args, summary string }

// commands, in the order the usage lists them.
var commands = []command{
	{"run", "[--config FILE] [--log FILE] [--state FILE] [--harness H] [--repo O/N] [--dry-run]",
		"One scan of the event log: diagnose each new defect and file its issue, then exit (for cron)."},
	{"watch", "[same flags as run] [--metrics-addr ADDR]",
		"Scan every intervalSeconds and soon after new lines, until SIGINT/SIGTERM; Prometheus /metrics and /healthz."},
	{"replay", "--stage read|filter|fingerprint|dedup|dossier|agent|compose --log FIXTURE",
		"Run the pipeline up to one stage over a fixture and print that stage's items as JSONL; writes and posts nothing."},
	{"status", "[--json]", "What the state holds: reported, deferred (and what each waits for), settled, dismissed, abandoned, retry counts, the daily window."},
	{"doctor", "[--config FILE] [--json] [--no-agent]",
		"Check a setup end to end, filing nothing: config, event log, store, GitHub token, repository and rights, label, agent (a one-line probe unless --no-agent)."},
	{"retry", "FINGERPRINT... | --all-abandoned", "Put abandoned defects back in the backlog with their dossier: the next scan files them."},
	{"forget", "FINGERPRINT...", "Forget defects: every state entry of theirs goes, so the next scan treats them as new."},
	{"state", "export [--format the-loop|json|ledger] [-o FILE]", "Write the state out of its store: the-loop's self-diagnosis.json for a switch back, this tool's whole state as JSON, or the ledger."},
	{"redact", "< strings.jsonl", "Scrub JSON-string lines from stdin to stdout."},
	{"version", "[--json]", "Print this tool's version."},
	{"help", "[COMMAND]", "List the commands, or print one command's flags."},
}

func lookupCommand(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// usageHeader lists the commands.
var usageHeader = func() string {
	var b strings.Builder
	b.WriteString("the-loop-diagnose — files one GitHub issue per new defect in the-loop's event log\n\nUsage:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  the-loop-diagnose %-8s %s\n", c.name, c.args)
	}
	b.WriteString("\nthe-loop-diagnose help COMMAND (or COMMAND --help) prints that command's flags.\n")
	return b.String()
}()

// stdio bundles the process streams so tests can run the CLI in-process.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// Main runs one command line and returns the exit code. Signals become
// contexts here and nowhere else: the first SIGINT/SIGTERM is a soft stop
// (finish in-flight work, persist, exit 0), the second a hard stop.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	io := stdio{stdin, stdout, stderr}
	if len(args) == 0 {
		fmt.Fprint(stderr, usageHeader)
		return exitUsage
	}
	soft, hard, stop := signalContexts()
	defer stop()
	cmd, rest := args[0], args[1:]
	var err error
	switch cmd {
	case "run":
		err = cmdRun(hard, soft, rest, io, false)
	case "watch":
		err = cmdRun(hard, soft, rest, io, true)
	case "replay":
		err = cmdReplay(hard, rest, io)
	case "status":
		err = cmdStatus(rest, io)
	case "doctor":
		err = cmdDoctor(hard, rest, io)
	case "retry":
		err = cmdRetry(rest, io)
	case "state":
		err = cmdState(rest, io)
	case "redact":
		err = cmdRedact(rest, io)
	case "forget":
		err = cmdForget(rest, io)
	case "version", "--version":
		err = cmdVersion(rest, io)
	case "help", "-h", "--help":
		if len(rest) == 0 {
			fmt.Fprint(stdout, usageHeader)
			break
		}
		if _, ok := lookupCommand(rest[0]); !ok || len(rest) > 1 {
			fmt.Fprintf(stderr, "the-loop-diagnose help: unknown command %q\n\n%s", strings.Join(rest, " "), usageHeader)
			return exitUsage
		}
		if rest[0] == "help" {
			fmt.Fprint(stdout, usageHeader)
			break
		}
		// The command's own --help: its flag set, built as it runs.
		return Main([]string{rest[0], "--help"}, stdin, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "the-loop-diagnose: unknown command %q\n\n%s", cmd, usageHeader)
		return exitUsage
	}
	return exitCode(err, stderr)
}

// exitError carries an exit code and an already-printed or printable message.
type exitError struct {
	code int
	msg  string
	// waiting: the scan ran and recorded everything, but stopped early for
	// GitHub or the agent being down; a watcher backs off as for trouble.
	waiting bool
}

func (e *exitError) Error() string { return e.msg }

func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	if errors.Is(err, pflag.ErrHelp) {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(stderr, "the-loop-diagnose:", ee.msg)
		}
		return ee.code
	}
	var ce *ConfigError
	if errors.As(err, &ce) {
		fmt.Fprintln(stderr, "the-loop-diagnose:", err)
		return exitUsage
	}
	if errors.Is(err, context.Canceled) {
		// Only a second signal cancels: the first lets the scan drain.
		fmt.Fprintln(stderr, "the-loop-diagnose: aborted by a second signal; what was recorded before it is kept, the rest is read again next scan")
		return exitAborted
	}
	fmt.Fprintln(stderr, "the-loop-diagnose:", err)
	return exitFailed
}

func usageErr(format string, a ...any) error {
	return &exitError{code: exitUsage, msg: fmt.Sprintf(format, a...)}
}

// signalContexts: soft is done at the first signal, hard at the second.
func signalContexts() (soft, hard context.Context, stop func()) {
	soft, softCancel := context.WithCancel(context.Background())
	hard, hardCancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case <-ch:
				n++
				if n == 1 {
					softCancel()
				} else {
					hardCancel()
				}
			case <-done:
				return
			}
		}
	}()
	return soft, hard, func() {
		signal.Stop(ch)
		close(done)
		softCancel()
		hardCancel()
	}
}

// commonFlags are the flags every scanning command shares.
type commonFlags struct {
	config, log, state, harness, repo, now string
	cpuProfile                             string
	dryRun, verbose                        bool
	logLevel, logFormat                    string
	// offline: read only a --config given, never look for the-loop's
	// (replay runs fixtures, whatever the machine has configured).
	offline bool
}

func (c *commonFlags) register(fs *pflag.FlagSet) {
	c.registerConfigFile(fs)
	fs.StringVar(&c.log, "log", "", "event log to read (overrides eventLog.path; default <state.root>/logs/events.jsonl)")
	c.registerState(fs)
	fs.StringVar(&c.harness, "harness", "", "agent harness: claude, cursor, codex, gemini, openai, command or builtin (overrides selfDiagnosis.harness)")
	fs.StringVar(&c.repo, "repo", "", "target repository owner/name (overrides selfDiagnosis.repo)")
	c.registerLogs(fs)
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a Go CPU profile of the command to this file")
	_ = fs.MarkHidden("cpuprofile")
}

// registerConfig registers what a command that only reads or edits the
// state needs (status, retry, forget): the config, the state, the logs.
func (c *commonFlags) registerConfig(fs *pflag.FlagSet) {
	c.registerConfigFile(fs)
	c.registerState(fs)
	c.registerLogs(fs)
}

func (c *commonFlags) registerConfigFile(fs *pflag.FlagSet) {
	fs.StringVar(&c.config, "config", "", "the-loop CLI config (YAML); default: $"+ConfigEnv+", else ./.the-loop/cli-config.yaml, else ~/.the-loop/cli-config.yaml, as the-loop finds it")
}

func (c *commonFlags) registerState(fs *pflag.FlagSet) {
	fs.StringVar(&c.state, "state", "", "state file (overrides selfDiagnosis.statePath; default <state.root>/self-diagnosis.json)")
}

func (c *commonFlags) registerLogs(fs *pflag.FlagSet) {
	fs.BoolVarP(&c.verbose, "verbose", "v", false, "log debug detail on stderr (--log-level debug)")
	fs.StringVar(&c.logLevel, "log-level", "info", "least severe log line written: debug, info, warn or error")
	fs.StringVar(&c.logFormat, "log-format", "text", "stderr's lines: text, or json (one JSON object a line, zerolog's)")
	fs.StringVar(&c.now, "now", "", "pretend the time is this RFC 3339 instant (tests, replays)")
	_ = fs.MarkHidden("now")
}

// profile starts the CPU profile when asked; the returned func stops it.
func (c *commonFlags) profile() (stop func(), err error) {
	if c.cpuProfile == "" {
		return func() {}, nil
	}
	f, err := os.Create(c.cpuProfile)
	if err != nil {
		return nil, usageErr("--cpuprofile: %v", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, usageErr("--cpuprofile: %v", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// resolve finds and loads the config as the-loop does, applies flag
// overrides, then derives the paths left unset from state.root.
func (c *commonFlags) resolve() (Config, func() time.Time, error) {
	path, mustExist := c.config, true
	if !c.offline {
		path, mustExist = ConfigPath(c.config, os.Getenv, os.UserHomeDir)
		if env := os.Getenv(ConfigEnv); c.config == "" && env != "" && path == env && !isFile(path) {
			// Named on purpose yet not there: the-loop would silently run
			// on its defaults; say so, then do the same.
			c.warn(fmt.Sprintf("$%s names %s, which does not exist: using the defaults", ConfigEnv, path))
		}
	}
	cfg, err := loadConfig(path, mustExist)
	if err != nil {
		return cfg, nil, err
	}
	for _, w := range cfg.Warnings {
		c.warn(w)
	}
	if c.log != "" {
		cfg.EventLog = c.log
	}
	if c.state != "" {
		cfg.StatePath = c.state
	}
	if c.harness != "" {
		cfg.Harness = c.harness
	}
	if c.repo != "" {
		cfg.Repo = c.repo
	}
	if env := os.Getenv(StoreEnv); env != "" {
		cfg.Store = env
	}
	cfg.resolvePaths()
	if err := cfg.validate(orFlags(cfg.File)); err != nil {
		return cfg, nil, err
	}
	now := time.Now
	if c.now != "" {
		t, err := time.Parse(time.RFC3339Nano, c.now)
		if err != nil {
			return cfg, nil, usageErr("--now %q: want an RFC 3339 time", c.now)
		}
		offset := time.Since(t)
		now = func() time.Time { return time.Now().Add(-offset) }
	}
	return cfg, now, nil
}

// warn writes a warning on stderr before the command's logger exists: a
// log line under --log-format json, else a plain line.
func (c *commonFlags) warn(msg string) {
	if c.logFormat == "json" {
		if log, err := c.logger(os.Stderr); err == nil {
			log.Warn().Msg(msg)
			return
		}
	}
	fmt.Fprintln(os.Stderr, "the-loop-diagnose:", msg)
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

func orFlags(config string) string {
	if config == "" {
		return "(flags)"
	}
	return config
}

// newFlagSet is a command's flag set. Errors go to stderr; --help (or -h)
// prints the command's usage line, what it does and its own flags on
// stdout, and the command exits 0 without doing anything.
func newFlagSet(name string, io stdio) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(io.err)
	fs.SortFlags = false
	fs.Usage = func() {
		c, _ := lookupCommand(name)
		fmt.Fprintf(io.out, "Usage: the-loop-diagnose %s %s\n\n%s\n", name, c.args, c.summary)
		if flags := fs.FlagUsages(); flags != "" {
			fmt.Fprintf(io.out, "\nFlags:\n%s", flags)
		}
	}
	return fs
}

// cmdVersion prints this tool's version, as a line or as JSON.
func cmdVersion(args []string, io stdio) error {
	fs := newFlagSet("version", io)
	asJSON := fs.Bool("json", false, "print JSON: name, version, go, os, arch")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *asJSON {
		b, _ := json.Marshal(map[string]string{"name": "the-loop-diagnose", "version": version,
			"go": runtime.Version(), "os": runtime.GOOS, "arch": runtime.GOARCH})
		fmt.Fprintln(io.out, string(b))
		return nil
	}
	fmt.Fprintln(io.out, "the-loop-diagnose", version)
	return nil
}

func parseFlags(fs *pflag.FlagSet, args []string) error {
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}

// parseArgs parses a command's flags, leaving its arguments in fs.Args(): a
// bad flag is a usage error naming the command, --help passes through.
func parseArgs(fs *pflag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return usageErr("%s: %v", fs.Name(), err)
	}
	return nil
}

func init() {
	// A duration logged with Dur (took, wait, backoff) is its
	// time.Duration.String, units and all ("1.5s"), not zerolog's default
	// bare float of milliseconds.
	zerolog.DurationFieldFormat = zerolog.DurationFormatString
}

// logger is the command's logger from --log-level, --log-format and
// --verbose (which means debug). A bad value is a usage error.
func (c *commonFlags) logger(w io.Writer) (zerolog.Logger, error) {
	var level zerolog.Level
	switch c.logLevel {
	case "debug":
		level = zerolog.DebugLevel
	case "info", "":
		level = zerolog.InfoLevel
	case "warn":
		level = zerolog.WarnLevel
	case "error":
		level = zerolog.ErrorLevel
	default:
		return zerolog.Nop(), usageErr("--log-level %q: want debug, info, warn or error", c.logLevel)
	}
	if c.verbose {
		level = zerolog.DebugLevel
	}
	switch c.logFormat {
	case "json":
		return zerolog.New(w).Level(level).With().Timestamp().Logger(), nil
	case "text", "":
		return newLogger(w, level), nil
	}
	return zerolog.Nop(), usageErr("--log-format %q: want text or json", c.logFormat)
}

func newLogger(w io.Writer, level zerolog.Level) zerolog.Logger {
	return zerolog.New(zerolog.ConsoleWriter{Out: w, NoColor: true, TimeFormat: time.RFC3339}).
		Level(level).With().Timestamp().Logger()
}

func joinLines(lines []string) string { return strings.Join(lines, "\n  ") }
