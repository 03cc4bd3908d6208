package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/the-loop/the-loop-diagnose/pipeline"
)

func TestAgentProgressLine(t *testing.T) {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	p := &agentProgress{harness: "claude", runs: map[string]time.Time{}}
	if got := p.line(at); got != "" {
		t.Errorf("no run: %q", got)
	}
	p.runs["v3:aaaa"] = at.Add(-12*time.Second - 400*time.Millisecond)
	if got := p.line(at); got != "diagnosing v3:aaaa with claude… 12s" {
		t.Errorf("one run: %q", got)
	}
	p.runs["v3:bbbb"] = at.Add(-3 * time.Second)
	if got := p.line(at); got != "diagnosing 2 defects with claude… 12s" {
		t.Errorf("two runs: %q", got)
	}
}

// The status line is erased before anything else is written, and when the
// last run ends.
func TestStatusLineIsErasedBeforeOtherOutput(t *testing.T) {
	var term bytes.Buffer
	io := stdio{out: &term, err: &term}.locked()
	p := &agentProgress{out: io.err.(*lockedWriter), harness: "claude", every: time.Hour, runs: map[string]time.Time{}}
	done := p.running(pipeline.Dossier{Group: pipeline.Group{Fingerprint: "v3:aaaa"}})
	if !eventuallyTrue(func() bool { p.mu.Lock(); defer p.mu.Unlock(); return strings.Contains(term.String(), "diagnosing") }) {
		t.Fatal("no status line drawn")
	}
	p.mu.Lock()
	io.out.Write([]byte("filed x\n"))
	p.mu.Unlock()
	done()
	want := "\rdiagnosing v3:aaaa with claude… 0s\r" + strings.Repeat(" ", len("diagnosing v3:aaaa with claude… 0s")) + "\rfiled x\n"
	if got := term.String(); got != want {
		t.Errorf("terminal got %q, want %q", got, want)
	}
}

func eventuallyTrue(f func() bool) bool {
	for range 200 {
		if f() {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}
