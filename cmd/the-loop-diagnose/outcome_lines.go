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
	line := &statusLine{w: io.err}
	return stdio{in: io.in, out: &lockedWriter{mu: mu, w: io.out, line: line}, err: &lockedWriter{mu: mu, w: io.err, line: line}}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
	// line is the status line drawn on stderr (a terminal's), erased
	// before anything else is written to either stream, so a log or
	// outcome line never lands after it; its owner redraws it.
	line *statusLine
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.line.erase()
	return l.w.Write(p)
}

// status draws text as the status line, in place of the last one ("" only
// erases it).
func (l *lockedWriter) status(text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.line.erase()
	if text != "" {
		fmt.Fprint(l.line.w, "\r"+text)
		l.line.width = len(text)
	}
}

// statusLine is a line drawn with a carriage return and no newline.
type statusLine struct {
	w     io.Writer
	width int // bytes drawn; 0: nothing shown
}

func (s *statusLine) erase() {
	if s != nil && s.width > 0 {
		fmt.Fprintf(s.w, "\r%*s\r", s.width, "")
		s.width = 0
	}
}

// unlocked is the writer under w's lock: the progress line asks whether
// stderr is a terminal.
func unlocked(w io.Writer) io.Writer {
	if l, ok := w.(*lockedWriter); ok {
		return l.w
	}
	return w
}
