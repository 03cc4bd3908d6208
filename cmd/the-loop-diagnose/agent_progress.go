package main

import (
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// agentProgress shows, while an agent runs and stderr is a terminal, that
// it runs and for how long: "diagnosing v3:4ce7… with claude… 12s",
// redrawn each second and erased when the last run ends. An agent run
// takes minutes and logs nothing meanwhile; on a terminal that looks hung.
// Never on anything but a terminal: a log file gets the log lines only.
type agentProgress struct {
	out     *lockedWriter
	harness string
	every   time.Duration
	// first is called as the first run starts (the read progress line,
	// which would otherwise keep drawing over this one, stops).
	first func()

	mu      sync.Mutex
	runs    map[string]time.Time // fingerprint → when its run started
	ticking bool
}

// newAgentProgress is nil when stderr is not a terminal.
func newAgentProgress(stderr any, harness string) *agentProgress {
	l, ok := stderr.(*lockedWriter)
	if !ok {
		return nil
	}
	if f, ok := l.w.(*os.File); !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return &agentProgress{out: l, harness: harness, every: time.Second, runs: map[string]time.Time{}}
}

// beforeFirstRun sets what is called as the scan's first run starts.
func (p *agentProgress) beforeFirstRun(f func()) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.first = f
	p.mu.Unlock()
}

// running is the agent stage's Running hook.
func (p *agentProgress) running(d pipeline.Dossier) (done func()) {
	p.mu.Lock()
	p.runs[d.Fingerprint] = time.Now()
	if first := p.first; first != nil {
		p.first = nil
		defer first()
	}
	if !p.ticking {
		p.ticking = true
		go p.tick()
	}
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		delete(p.runs, d.Fingerprint)
		if len(p.runs) == 0 {
			p.out.status("") // at once: the scan may end before the next tick
		}
	}
}

// tick redraws the line until no run is left, then erases it.
func (p *agentProgress) tick() {
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		p.mu.Lock()
		line := p.line(time.Now())
		if line == "" {
			p.ticking = false
		}
		p.out.status(line) // under p.mu: a new run cannot start a second ticker meanwhile
		p.mu.Unlock()
		if line == "" {
			return
		}
		<-t.C
	}
}

// line is the status line for the runs in flight ("" for none). The caller
// holds p.mu.
func (p *agentProgress) line(now time.Time) string {
	var oldest time.Time
	var fp string
	for f, at := range p.runs {
		if oldest.IsZero() || at.Before(oldest) {
			oldest, fp = at, f
		}
	}
	took := now.Sub(oldest).Truncate(time.Second)
	switch len(p.runs) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("diagnosing %s with %s… %s", fp, p.harness, took)
	}
	return fmt.Sprintf("diagnosing %d defects with %s… %s", len(p.runs), p.harness, took)
}
