package main

import (
	"fmt"
	"io"
	"sync"

	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/stages"
)

// What the-loop's `diagnose` prints per outcome (diagnose_cmd.py _print),
// kept word for word so whatever reads its output keeps working:
//
//	print(f"filed {outcome.get('url')} — {outcome.get('title')}")
//	print(f"deferred {fp} — daily cap (maxIssuesPerDay: {N}) reached")
//	print(f"failed {fp} — {outcome.get('error')}", file=sys.stderr)
//	print("nothing to diagnose — no new failure fingerprints in the log")
//
// Everything on stdout but a failure. The fingerprint printed is this
// tool's own (the one status and retry take).
const nothingToDiagnose = "nothing to diagnose — no new failure fingerprints in the log"

// tell prints the-loop's line for o, if it has one. A known defect (the-loop
// skips a reported fingerprint silently), a settled one (told on stderr
// with the summary) and a dry run's (printed by the print stage) have none.
func (s *scanner) tell(o pipeline.Outcome) {
	switch o.Status {
	case pipeline.StatusFiled:
		fmt.Fprintf(s.io.out, "filed %s — %s\n", o.URL, o.Title)
	case pipeline.StatusDeferred:
		reason := o.Reason
		if reason == stages.CapReason {
			reason = fmt.Sprintf("daily cap (maxIssuesPerDay: %d) reached", s.cfg.MaxIssuesPerDay)
		}
		fmt.Fprintf(s.io.out, "deferred %s — %s\n", o.Fingerprint, reason)
	case pipeline.StatusFailed, pipeline.StatusAbandoned:
		// The reason may quote GitHub or the agent: scrubbed, as persist keeps it.
		if s.jsonLog {
			s.log.Error().Str("fingerprint", o.Fingerprint).Str("error", s.red.Scrub(o.Error)).Msg("failed")
		} else {
			fmt.Fprintf(s.io.err, "failed %s — %s\n", o.Fingerprint, s.red.Scrub(o.Error))
		}
	}
}

// actedOn counts the outcomes the-loop would have returned from a scan
// (posted, deferred, failed, dry-run): none, and `run` says there was
// nothing to diagnose.
func actedOn(sum *stages.Summary) int {
	n := 0
	for _, st := range []pipeline.Status{pipeline.StatusFiled, pipeline.StatusDeferred, pipeline.StatusFailed,
		pipeline.StatusAbandoned, pipeline.StatusDryRun} {
		n += sum.Count(st)
	}
	return n
}

// locked returns io with its writers sharing one lock: the print stage and
// the outcome lines write stdout from different goroutines.
func (io stdio) locked() stdio {
	mu := &sync.Mutex{}
	return stdio{in: io.in, out: &lockedWriter{mu: mu, w: io.out}, err: &lockedWriter{mu: mu, w: io.err}}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// unlocked is the writer under w's lock: the progress line asks whether
// stderr is a terminal.
func unlocked(w io.Writer) io.Writer {
	if l, ok := w.(*lockedWriter); ok {
		return l.w
	}
	return w
}
