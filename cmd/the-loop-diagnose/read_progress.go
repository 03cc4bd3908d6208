package main

import (
	"os"
	"time"

	"golang.org/x/term"

	"github.com/the-loop/the-loop-diagnose/logread"
)

// showProgress draws "bytes read of total" on stderr, rewritten in place a
// few times a second, when stderr is a terminal and the backlog is large
// enough to take a while. It returns a function that stops and erases it.
func (s *scanner) showProgress(src *logread.LogSource, stats *logread.ReadStats) (stop func()) {
	f, ok := unlocked(s.io.err).(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) || src.Backlog() < progressMinBacklog {
		return func() {}
	}
	return logread.ShowProgress(f, s.cfg.EventLog, src.Backlog(), &stats.Bytes, 250*time.Millisecond)
}

// progressMinBacklog is the backlog worth a progress line: below it a scan
// is over in well under a second.
const progressMinBacklog = 64 << 20
