package agent

import (
	"cmp"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// sourceFields are record fields that may say where an event was
// emitted, in the order they are preferred.
var sourceFields = []string{"source", "caller", "component", "logger", "module", "file"}

const (
	titleMax    = 100
	clauseMax   = 80
	evidenceMax = 5
)

// BuiltinAnswer is the mechanical diagnosis of a group: no LLM and no
// subprocess, only what the log itself says, so it is deterministic and
// works anywhere. It is written for the reader (the service's
// maintainers): it says what fails and where, never what to run.
func BuiltinAnswer(g pipeline.Group) *pipeline.Answer {
	event := cmp.Or(g.Event, "failure")
	template := strings.TrimSpace(g.Template)
	clause := ""
	if n := len(g.Samples); n > 0 {
		clause = errorClause(g.Samples[n-1].Str("error"))
	}
	if clause == "" {
		clause = errorClause(template)
	}
	title := event
	if clause != "" && clause != event {
		title = event + ": " + clause
	}
	title = truncate(oneLine(title), titleMax)

	var summary strings.Builder
	fmt.Fprintf(&summary, "The %s event was logged as a failure %s", event, countText(g.Count, "time"))
	if g.Retries > 0 {
		fmt.Fprintf(&summary, " (%d of them marked will_retry)", g.Retries)
	}
	if !g.FirstSeen.IsZero() {
		if g.LastSeen.IsZero() || g.LastSeen.Equal(g.FirstSeen) {
			fmt.Fprintf(&summary, " at %s", g.FirstSeen.UTC().Format(time.RFC3339))
		} else {
			fmt.Fprintf(&summary, " between %s and %s", g.FirstSeen.UTC().Format(time.RFC3339), g.LastSeen.UTC().Format(time.RFC3339))
		}
	}
	if g.FirstLine > 0 {
		if g.LastLine > g.FirstLine {
			fmt.Fprintf(&summary, ", log lines %d to %d", g.FirstLine, g.LastLine)
		} else {
			fmt.Fprintf(&summary, ", log line %d", g.FirstLine)
		}
	}
	summary.WriteString(".")
	if clause != "" {
		summary.WriteString(" The newest occurrence failed with \"" + clause + "\".")
	}
	if g.Attempt > 0 {
		fmt.Fprintf(&summary, " Filing this report was attempted %s before.", countText(g.Attempt, "time"))
	}

	rootCause := "Not analysed: this is a mechanical summary of the event log, so the cause is not known yet."
	if template != "" {
		rootCause += fmt.Sprintf(" Every occurrence normalizes to the error shape \"%s\" (fingerprint %s), so they share one cause.", oneLine(template), g.Fingerprint)
	} else if g.Fingerprint != "" {
		rootCause += fmt.Sprintf(" Every occurrence has fingerprint %s, so they share one cause.", g.Fingerprint)
	}

	fix := fmt.Sprintf("Start at the code that emits the %q event", event)
	if src := sampleSource(g.Samples); src != "" {
		fix += fmt.Sprintf(" (%s)", src)
	}
	fix += " and the condition that makes it fail; the error under Evidence shows where it was raised."

	a := &pipeline.Answer{
		Title:        title,
		Summary:      summary.String(),
		RootCause:    rootCause,
		SuggestedFix: fix,
	}
	// Evidence points at the newest samples, newest last as in the group.
	samples := g.Samples
	if len(samples) > evidenceMax {
		samples = samples[len(samples)-evidenceMax:]
	}
	for _, s := range samples {
		e := fmt.Sprintf("line %d", s.Line)
		if ts := s.Str("ts"); ts != "" {
			e += " at " + ts
		}
		if s.Reason != "" {
			e += " (" + s.Reason + ")"
		}
		a.Evidence = append(a.Evidence, e)
	}
	return a
}

// sampleSource names where the newest sample says it came from.
func sampleSource(samples []pipeline.Occurrence) string {
	for i := len(samples) - 1; i >= 0; i-- {
		for _, k := range sourceFields {
			if v := strings.TrimSpace(samples[i].Str(k)); v != "" {
				return k + " " + truncate(oneLine(v), 200)
			}
		}
	}
	return ""
}

func countText(n int, unit string) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// errorClause is an error's first meaningful clause: a traceback's
// exception line (the last unindented line, "KeyError: 'harness'"), else
// the first non-empty line, cut at the end of its first sentence.
func errorClause(e string) string {
	lines := strings.Split(strings.ReplaceAll(e, "\r\n", "\n"), "\n")
	pick := ""
	if strings.Contains(e, "Traceback (most recent call last)") {
		for i := len(lines) - 1; i >= 0; i-- {
			l := lines[i]
			if t := strings.TrimSpace(l); t != "" && l == strings.TrimLeft(l, " \t") && !strings.HasPrefix(t, "Traceback ") {
				pick = t
				break
			}
		}
	}
	if pick == "" {
		for _, l := range lines {
			if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "Traceback ") {
				pick = t
				break
			}
		}
	}
	if i := strings.Index(pick, ". "); i > 0 {
		pick = pick[:i]
	}
	if i := strings.Index(pick, "; "); i > 0 {
		pick = pick[:i]
	}
	return truncate(oneLine(pick), clauseMax)
}
