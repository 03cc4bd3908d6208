package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/rs/zerolog"

	"github.com/the-loop/the-loop-diagnose/logread"
	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/store"
)

// cmdRun is `run` (one scan, for cron) and `watch` (scan every interval and
// soon after new lines appear, until a signal).
func cmdRun(hard, soft context.Context, args []string, io stdio, watch bool) (err error) {
	name := "run"
	if watch {
		name = "watch"
	}
	fs := newFlagSet(name, io)
	var c commonFlags
	c.register(fs)
	dryRun := fs.Bool("dry-run", false, "print each would-be issue instead of posting; write no state (works while disabled)")
	metricsAddr := ""
	if watch {
		fs.StringVar(&metricsAddr, "metrics-addr", "", "serve Prometheus metrics and /healthz on this address")
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if c.logFormat == "json" {
		defer func() { err = jsonExit(io, &c, err) }()
	}
	cfg, now, err := c.resolve()
	if err != nil {
		return err
	}
	stopProfile, err := c.profile()
	if err != nil {
		return err
	}
	defer stopProfile()
	if !*dryRun {
		if !cfg.Enabled {
			// the-loop's own words (diagnose_cmd.py), naming the file it
			// read or would have read.
			return usageErr("self-diagnosis is off — set selfDiagnosis.enabled: true in %s to let the-loop file issues for its own failures, or preview with --dry-run", configName(cfg))
		}
		if cfg.Repo == "" {
			// Only an explicit repo: "" gets here; unset is the-loop's upstream.
			return usageErr("selfDiagnosis.repo is empty in %s (or pass --repo owner/name)", configName(cfg))
		}
	}
	io = io.locked()
	log, err := c.logger(io.err)
	if err != nil {
		return err
	}
	sc, err := newScanner(cfg, now, io, log, *dryRun)
	if err != nil {
		return err
	}
	sc.jsonLog = c.logFormat == "json"
	defer sc.state.Close()
	mode := "posting"
	if *dryRun {
		mode = "dry-run"
	}
	if !watch {
		sc.sayNothing = true
		// A cron run's stderr stays the-loop's lines: its start and stop
		// lines are debug's (a watcher's, info's).
		log.Debug().Str("version", version).Str("config", configName(cfg)).Str("mode", mode).
			Str("log", cfg.EventLog).Str("state", cfg.StatePath).Msg("run started")
		err := sc.runOnce(hard, soft)
		defer func() {
			reason := "done"
			if err != nil {
				reason = err.Error()
			}
			log.Debug().Str("reason", reason).Msg("run stopped")
		}()
		var missing *logread.LogMissingError
		if errors.As(err, &missing) {
			// Not an error for cron: the-loop has not written a log yet.
			// the-loop reads a missing log as an empty one
			// (eventlog.read_events) and prints its usual line; this
			// tool also says which log it looked for.
			sc.say(zerolog.InfoLevel, fmt.Sprintf("event log %s does not exist yet: nothing to diagnose", missing.Path))
			fmt.Fprintln(io.out, nothingToDiagnose)
			return nil
		}
		return err
	}
	if *dryRun {
		// A dry-run watcher keeps its (never written) state in memory, so
		// each wake-up prints only what is new, as a real watcher would file.
		if sc.dryState, err = store.OpenDSN(cfg.StatePath, cfg.Store, true); err != nil {
			return err
		}
	}
	if metricsAddr != "" {
		sc.metrics = newMetrics()
		addr, err := sc.metrics.serve(hard, metricsAddr, 2*cfg.Interval+cfg.Timeout)
		if err != nil {
			return err
		}
		log.Info().Str("addr", addr).Msg("serving /metrics and /healthz")
	}
	log.Info().Str("version", version).Str("config", configName(cfg)).Str("mode", mode).
		Str("log", cfg.EventLog).Str("state", cfg.StatePath).Str("interval", cfg.Interval.String()).Msg("watch started")
	err = sc.watch(hard, soft)
	reason := "signal"
	switch {
	case errors.Is(err, context.Canceled):
		reason = "second signal"
	case err != nil:
		reason = err.Error()
	}
	log.Info().Str("reason", reason).Msg("watch stopped")
	return err
}

// jsonExit turns the error a command ends with into an error-level log
// line under --log-format json, keeping its exit code: stderr stays one
// JSON object a line to the end.
func jsonExit(io stdio, c *commonFlags, err error) error {
	if err == nil {
		return nil
	}
	log, lerr := c.logger(io.err)
	if lerr != nil {
		return err
	}
	var text strings.Builder
	code := exitCode(err, &text)
	for _, line := range strings.Split(strings.TrimSpace(text.String()), "\n") {
		if line = strings.TrimPrefix(line, "the-loop-diagnose: "); line != "" {
			log.Error().Int("exit", code).Msg(line)
		}
	}
	if code == exitOK {
		return nil
	}
	return &exitError{code: code}
}

// say is a line of the scan's own report on stderr: plain text, or under
// --log-format json a log line at level.
func (s *scanner) say(level zerolog.Level, msg string) {
	if s.jsonLog {
		s.log.WithLevel(level).Msg(msg)
		return
	}
	fmt.Fprintln(s.io.err, "the-loop-diagnose: "+msg)
}

// configName is the config file for a message: the one read, or where
// the-loop would have looked last.
func configName(cfg Config) string {
	if cfg.File == "" {
		return "the-loop's cli-config.yaml"
	}
	return cfg.File
}

// runOnce is one locked scan with its stderr summary and exit status.
func (s *scanner) runOnce(hard, soft context.Context) error {
	started := time.Now()
	st := s.dryState
	if st == nil {
		var err error
		if s.dryRun {
			st, err = store.OpenDSN(s.cfg.StatePath, s.cfg.Store, true)
		} else {
			st, err = s.state.Open(s.cfg.StatePath)
		}
		if errors.Is(err, store.ErrLocked) {
			s.say(zerolog.WarnLevel, fmt.Sprintf("another scan holds %s.lock%s: skipping this scan", s.cfg.StatePath, store.LockHolderNote(s.cfg.StatePath)))
			return nil
		}
		if err != nil {
			return &pipeline.SetupError{Err: err} // corrupt, a link, no permission: waiting will not fix it
		}
		defer st.Close()
	}
	sum, err := s.scan(hard, soft, st, started)
	if err != nil {
		return err
	}
	if s.sayNothing && actedOn(sum) == 0 {
		fmt.Fprintln(s.io.out, nothingToDiagnose)
	}
	if s.jsonLog {
		s.log.Info().Int64("lines", sum.Lines).Int64("corrupt", sum.Corrupt).Str("took", time.Since(started).String()).
			Strs("settled", sum.Settled).Msg(sum.String())
	} else {
		fmt.Fprintf(s.io.err, "the-loop-diagnose: %d lines read (%d corrupt); %s\n", sum.Lines, sum.Corrupt, sum)
		for _, line := range sum.Settled {
			fmt.Fprintf(s.io.err, "  settled locally (not filed): %s\n", line)
		}
	}
	var msgs []string
	waiting := sum.Waiting()
	if len(waiting) > 0 {
		// Not the defects' fault: nothing charged, nothing lost.
		msgs = append(msgs, "the scan stopped early, "+strings.Join(waiting, "; ")+
			"; its defects stay pending (see status) and the next scan tries again")
	}
	if sum.Failed() {
		msgs = append(msgs, "some defects failed and will be retried next scan:\n  "+joinLines(sum.Failures))
	}
	if len(msgs) > 0 {
		return &exitError{code: exitFailed, msg: strings.Join(msgs, "\n"), waiting: len(waiting) > 0}
	}
	return nil
}

// watch scans at start, then on every interval tick and shortly after the
// log changes (fsnotify, with the interval as the polling fallback). The first
// signal lets the running scan drain and persist, then exits 0. Trouble that
// passes by itself (GitHub rejecting the token or not answering, the log
// not there yet, anything else not known to need a person) is logged and
// retried after a backoff, with /healthz answering 503 meanwhile; only a
// setup error a person must fix (watchStops) ends the watcher.
func (s *scanner) watch(hard, soft context.Context) error {
	changed := make(chan struct{}, 1)
	var w *fsnotify.Watcher
	if nw, err := fsnotify.NewWatcher(); err == nil {
		w = nw
		defer w.Close()
		go func() {
			for ev := range w.Events {
				if ev.Name == s.cfg.EventLog || baseOf(ev.Name) == baseOf(s.cfg.EventLog) {
					select {
					case changed <- struct{}{}:
					default:
					}
				}
			}
		}()
	}
	watching, warned := false, false
	ticker := time.NewTicker(s.cfg.Interval)
	defer ticker.Stop()
	retry := newBackoff(s.cfg.Interval)
	// Debounce: a burst of appends becomes one scan.
	const settle = 2 * time.Second
	trouble := ""
	for {
		if w != nil && !watching {
			// Watch the directory: rotation replaces the file itself. One
			// that does not exist yet is tried again after every scan.
			if err := w.Add(dirOf(s.cfg.EventLog)); err == nil {
				watching = true
			} else if !warned {
				warned = true
				s.log.Warn().Err(err).Msg("cannot watch the event log's directory: polling every interval")
			}
		}
		err := s.runOnce(hard, soft)
		var ee *exitError
		switch {
		case err == nil:
		case errors.As(err, &ee) && ee.code == exitFailed && !ee.waiting:
			s.log.Warn().Msg(ee.msg) // the scan ran: its failed defects are retried next scan
			err = nil
		case watchStops(err):
			return err
		}
		s.skipBacklog = false
		if err != nil {
			trouble = err.Error()
			s.metrics.troubled(trouble)
			wait := retry.next()
			s.log.Warn().Str("retry_in", wait.String()).Msg(trouble + ": still watching; retrying")
			// A missing log ends when it appears: a change wakes the retry.
			var appeared <-chan struct{}
			if errors.As(err, new(*logread.LogMissingError)) {
				appeared = changed
			}
			select {
			case <-soft.Done():
				return nil
			case <-time.After(wait):
			case <-appeared:
			}
			continue
		}
		if trouble != "" {
			s.log.Info().Msg("recovered, scanning normally again after: " + trouble)
			trouble = ""
			s.metrics.troubled("")
			retry.reset()
		}
		select {
		case <-soft.Done():
			return nil
		case <-ticker.C:
		case <-changed:
			s.skipBacklog = true
			select {
			case <-time.After(settle):
			case <-soft.Done():
				return nil
			}
			drain(changed)
		}
	}
}

// watchStops reports whether err is a setup error a watcher cannot wait
// out: a bad config, the state file or its lock, a permission, a GitHub
// setup a person must change (repository, issues, the token's rights, no
// token at all) — or the second signal. A token GitHub rejects is waited
// out: it may be rotated or reinstated while the watcher runs.
func watchStops(err error) bool {
	var setup *pipeline.SetupError
	var config *ConfigError
	var ee *exitError
	switch {
	case errors.As(err, &config), errors.Is(err, fs.ErrPermission), errors.Is(err, context.Canceled):
		return true
	case errors.As(err, &ee):
		return ee.code != exitFailed
	case errors.As(err, &setup):
		// Err set: found outside any request (state, lock, no token).
		return setup.Err != nil || !credentialsRejected(setup)
	}
	return false
}

// credentialsRejected: GitHub refused the token itself (401, or a 403 that
// says bad credentials), as opposed to the token's rights or the repository.
func credentialsRejected(e *pipeline.SetupError) bool {
	return e.Status == http.StatusUnauthorized ||
		e.Status == http.StatusForbidden && strings.Contains(strings.ToLower(e.Cause), "bad credentials")
}

// backoff spaces a troubled watcher's retries: from the scan interval (at
// most a minute: most trouble is short), doubling, up to ten intervals or
// 15 minutes, whichever is less. intervalSeconds scales it for tests.
type backoff struct{ first, limit, wait time.Duration }

func newBackoff(interval time.Duration) backoff {
	first := min(interval, time.Minute)
	return backoff{first: first, limit: max(first, min(10*interval, 15*time.Minute))}
}

func (b *backoff) next() time.Duration {
	if b.wait == 0 {
		b.wait = b.first
	}
	d := b.wait
	b.wait = min(2*b.wait, b.limit)
	return d
}

func (b *backoff) reset() { b.wait = 0 }

func drain(ch chan struct{}) {
	select {
	case <-ch:
	default:
	}
}
