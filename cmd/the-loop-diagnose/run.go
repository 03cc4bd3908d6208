package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/the-loop/the-loop-diagnose/store"
)

// cmdRun is `run` (one scan, for cron) and `watch` (scan every interval and
// soon after new lines appear, until a signal).
func cmdRun(hard, soft context.Context, args []string, io stdio, watch bool) error {
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
			return usageErr("posting is disabled: set selfDiagnosis.enabled: true in the config to file issues, or pass --dry-run to print them")
		}
		if cfg.Repo == "" {
			return usageErr("selfDiagnosis.repo is not set (or pass --repo owner/name)")
		}
	}
	log := newLogger(io.err, c.verbose)
	sc, err := newScanner(cfg, now, io, log, *dryRun)
	if err != nil {
		return err
	}
	if !watch {
		return sc.runOnce(hard, soft)
	}
	if *dryRun {
		// A dry-run watcher keeps its (never written) state in memory, so
		// each wake-up prints only what is new, as a real watcher would file.
		if sc.dryState, err = store.Open(cfg.StatePath, true); err != nil {
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
	if !*dryRun {
		sc.writeBehind = watchWriteBehind
	}
	err = sc.watch(hard, soft)
	if ferr := sc.flushState(); err == nil {
		err = ferr
	}
	return err
}

// watchWriteBehind is how long a watcher may keep the cursor of scans that
// saw only recurrences in memory: at most this much of the log is read again
// after a crash.
const watchWriteBehind = 30 * time.Second

// flushState writes what a watcher's last scans checkpointed in memory, so
// the next start resumes from there.
func (s *scanner) flushState() error {
	if s.writeBehind == 0 {
		return nil
	}
	st, err := s.state.Open(s.cfg.StatePath)
	if err != nil {
		return nil // locked: its holder writes; unreadable: the next scan says so
	}
	defer st.Close()
	if !st.Ahead() {
		return nil
	}
	return st.Write()
}

// runOnce is one locked scan with its stderr summary and exit status.
func (s *scanner) runOnce(hard, soft context.Context) error {
	started := time.Now()
	st := s.dryState
	if st == nil {
		var err error
		if s.dryRun {
			st, err = store.Open(s.cfg.StatePath, true)
		} else {
			st, err = s.state.Open(s.cfg.StatePath)
		}
		if errors.Is(err, store.ErrLocked) {
			fmt.Fprintf(s.io.err, "the-loop-diagnose: another scan holds %s.lock: skipping this scan\n", s.cfg.StatePath)
			return nil
		}
		if err != nil {
			return err
		}
		defer st.Close()
	}
	sum, err := s.scan(hard, soft, st, started)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.io.err, "the-loop-diagnose: %d lines read (%d corrupt); %s\n", sum.Lines, sum.Corrupt, sum)
	for _, line := range sum.Settled {
		fmt.Fprintf(s.io.err, "  settled locally (not filed): %s\n", line)
	}
	var msgs []string
	if waiting := sum.Waiting(); len(waiting) > 0 {
		// Not the defects' fault: nothing charged, nothing lost.
		msgs = append(msgs, "the scan stopped early, "+strings.Join(waiting, "; ")+
			"; its defects stay pending (see status) and the next scan tries again")
	}
	if sum.Failed() {
		msgs = append(msgs, "some defects failed and will be retried next scan:\n  "+joinLines(sum.Failures))
	}
	if len(msgs) > 0 {
		return &exitError{code: exitFailed, msg: strings.Join(msgs, "\n")}
	}
	return nil
}

// watch scans at start, then on every interval tick and shortly after the
// log changes (fsnotify, with the interval as the polling fallback). The first
// signal lets the running scan drain and persist, then exits 0.
func (s *scanner) watch(hard, soft context.Context) error {
	changed := make(chan struct{}, 1)
	if w, err := fsnotify.NewWatcher(); err == nil {
		defer w.Close()
		// Watch the directory: rotation replaces the file itself.
		if err := w.Add(dirOf(s.cfg.EventLog)); err == nil {
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
		} else {
			s.log.Warn().Err(err).Msg("cannot watch the event log's directory: polling every interval")
		}
	}
	ticker := time.NewTicker(s.cfg.Interval)
	defer ticker.Stop()
	// Debounce: a burst of appends becomes one scan.
	const settle = 2 * time.Second
	for {
		if err := s.runOnce(hard, soft); err != nil {
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != exitFailed {
				return err
			}
			s.log.Warn().Msg(ee.msg)
		}
		s.skipBacklog = false
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

func drain(ch chan struct{}) {
	select {
	case <-ch:
	default:
	}
}
