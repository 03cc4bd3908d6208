package stages

import (
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/the-loop/the-loop-diagnose/store"
)

// GitHub's limits, counted in characters.
const (
	PostMaxBody  = 65536
	PostMaxTitle = 256
)

// postMarkerRE finds fingerprint markers in issue bodies.
var postMarkerRE = regexp.MustCompile(`<!-- the-loop-diagnose fingerprint:(\S+) -->`)

// postOccurrenceMarker tags the one occurrence comment kept per issue.
func postOccurrenceMarker(fp string) string {
	return "<!-- the-loop-diagnose occurrences:" + fp + " -->"
}

// postFitTitle makes a title GitHub accepts: one line, at most 256 characters.
func postFitTitle(t string) string {
	t = strings.Join(strings.Fields(t), " ")
	if t == "" {
		t = "unnamed failure"
	}
	if r := []rune(t); len(r) > PostMaxTitle {
		t = string(r[:PostMaxTitle-1]) + "…"
	}
	return t
}

// postFitBody makes sure body carries both markers and fits limit
// characters. An oversized body loses the end of its trigger section (the
// dossier) first, then, only if still too long, the end of everything before
// the markers; a visible note says what was cut and open code fences are
// closed so the rest still renders. It reports whether it cut anything.
func postFitBody(body, fp string, limit int) (string, bool) {
	fpMarker := FingerprintMarker(fp)
	if !strings.Contains(body, fpMarker) || !strings.Contains(body, SelfAuthoredMarker) ||
		strings.LastIndex(body, SelfAuthoredMarker) < strings.LastIndex(body, fpMarker) {
		body = postStripMarkers(body, fpMarker) + "\n" + fpMarker + "\n" + SelfAuthoredMarker + "\n"
	}
	if utf8.RuneCountInString(body) <= limit {
		return body, false
	}
	tail := "\n" + fpMarker + "\n" + SelfAuthoredMarker + "\n"
	head := postStripMarkers(body, fpMarker)
	if pre, trig, post, ok := postSplitTrigger(head); ok {
		fixed := utf8.RuneCountInString(pre) + utf8.RuneCountInString(post) + utf8.RuneCountInString(tail)
		if out, ok := postCutToFit(trig, limit-fixed, "dossier"); ok {
			return pre + out + post + tail, true
		}
	}
	out, _ := postCutToFit(head, limit-utf8.RuneCountInString(tail), "report")
	return out + tail, true
}

// postStripMarkers removes every marker line, so they can be appended once.
func postStripMarkers(body, fpMarker string) string {
	body = strings.ReplaceAll(body, fpMarker+"\n", "")
	body = strings.ReplaceAll(body, fpMarker, "")
	body = strings.ReplaceAll(body, SelfAuthoredMarker+"\n", "")
	body = strings.ReplaceAll(body, SelfAuthoredMarker, "")
	return strings.TrimRight(body, "\n")
}

// postSplitTrigger finds the trigger section's content (the dossier compose
// quotes) between its heading and the next section.
func postSplitTrigger(body string) (pre, trigger, post string, ok bool) {
	const heading = "## Trigger\n"
	i := strings.Index(body, heading)
	if i < 0 {
		return "", "", "", false
	}
	start := i + len(heading)
	end := len(body)
	if j := strings.Index(body[start:], "\n## Environment"); j >= 0 {
		end = start + j
	}
	return body[:start], body[start:end], body[end:], true
}

// postCutToFit shortens s to at most budget characters including a note
// about the cut and any fence it must close; ok is false when even the
// note does not fit.
func postCutToFit(s string, budget int, what string) (string, bool) {
	total := utf8.RuneCountInString(s)
	if total <= budget {
		return s, true
	}
	keep := budget
	for keep >= 0 {
		runes := []rune(s)
		kept := string(runes[:keep])
		// Prefer ending on a line boundary when that costs little.
		if nl := strings.LastIndexByte(kept, '\n'); nl >= 0 && len(kept)-nl < 400 {
			kept = kept[:nl]
		}
		omitted := total - utf8.RuneCountInString(kept)
		note := fmt.Sprintf("\n\n> **Note:** this %s was cut to fit GitHub's %d-character limit; the last %d characters were left out.\n",
			what, PostMaxBody, omitted)
		out := postCloseFences(kept) + note
		over := utf8.RuneCountInString(out) - budget
		if over <= 0 {
			return out, true
		}
		keep -= over
	}
	return "", false
}

// postCloseFences appends the fence that closes a code block left open.
func postCloseFences(s string) string {
	var open string // the opening fence run, "" when outside a block
	for _, line := range strings.Split(s, "\n") {
		t := strings.TrimLeft(line, " ")
		if len(line)-len(t) > 3 || len(t) < 3 || (t[0] != '`' && t[0] != '~') {
			continue
		}
		n := 0
		for n < len(t) && t[n] == t[0] {
			n++
		}
		if n < 3 {
			continue
		}
		switch {
		case open == "":
			open = t[:n]
		case t[0] == open[0] && n >= len(open) && strings.TrimSpace(t[n:]) == "":
			open = ""
		}
	}
	if open == "" {
		return s
	}
	return s + "\n" + open
}

// postOccurrenceBody renders the one occurrence comment kept per issue.
func postOccurrenceBody(fp string, ref store.IssueRef) string {
	var b strings.Builder
	b.WriteString(postOccurrenceMarker(fp) + "\n" + SelfAuthoredMarker + "\n")
	b.WriteString("**Still happening.** the-loop-diagnose keeps seeing this defect in the-loop's event log.\n\n")
	b.WriteString("| | |\n|---|---|\n")
	fmt.Fprintf(&b, "| Occurrences | %d |\n", ref.Occurrences)
	fmt.Fprintf(&b, "| First seen | %s |\n", postStamp(ref.FirstSeen))
	fmt.Fprintf(&b, "| Last seen | %s |\n", postStamp(ref.LastSeen))
	versions := "unknown"
	if len(ref.Versions) > 0 {
		versions = strings.Join(ref.Versions, ", ")
	}
	fmt.Fprintf(&b, "| Versions seen | %s |\n", versions)
	b.WriteString("\n_This comment is updated in place, at most once an hour._\n")
	return b.String()
}

// postRecurredBody is the comment left when a completed issue is reopened.
func postRecurredBody(count int, first, last time.Time, version string) string {
	if version == "" {
		version = "unknown"
	}
	return fmt.Sprintf("%s\n**This defect recurred** after the issue was closed as completed: seen %d time(s) between %s and %s, running version %s. the-loop-diagnose reopened it.\n",
		SelfAuthoredMarker, count, postStamp(first), postStamp(last), version)
}

func postStamp(t time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	return t.UTC().Format(time.RFC3339)
}
