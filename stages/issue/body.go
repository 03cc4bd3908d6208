package issue

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/mod/semver"

	"github.com/the-loop/the-loop-diagnose/redact"
	"github.com/the-loop/the-loop-diagnose/stages/source"
	"github.com/the-loop/the-loop-diagnose/stages/tracker"
	"github.com/the-loop/the-loop-diagnose/store"
)

// markerLineRE is a fingerprint marker line exactly as compose writes
// it, with a fingerprint in the tool's alphabet ("v2:" and hex; the-loop's
// are bare hex), bounded so a planted one stays short.
var markerLineRE = regexp.MustCompile(`^<!-- the-loop-diagnose fingerprint:([A-Za-z0-9][A-Za-z0-9:._-]{0,99}) -->$`)

// otherMarkerRE are the other lines of the trailing marker block: the
// self-authored marker, and the duplicate-of note a twin that stood down
// keeps in its marker's place.
var otherMarkerRE = regexp.MustCompile(`^(?:` + regexp.QuoteMeta(SelfAuthoredMarker) + `|<!-- the-loop-diagnose duplicate-of:\d+ -->)$`)

// TrailingMarkers returns the fingerprints an issue body's markers name,
// counting only where the tool writes them: each on a line of its own, in
// the block of marker lines that ends the body, outside any code fence. Every
// body this tool (and each older version) filed has that shape; a marker
// anywhere else is quoted text — log lines in the dossier, an agent's echo —
// and never counts.
func TrailingMarkers(body string) []string {
	head, fps := splitMarkerBlock(body)
	if len(fps) == 0 || openFence(head) != "" {
		return nil
	}
	return fps
}

// splitMarkerBlock splits body into what precedes its trailing block of
// marker lines (blank lines included) and the fingerprints that block names,
// in order.
func splitMarkerBlock(body string) (head string, fps []string) {
	lines := strings.Split(body, "\n")
	end := len(lines)
	for end > 0 {
		// GitHub keeps a web edit's CRLF.
		line := strings.TrimRight(lines[end-1], " \t\r")
		if m := markerLineRE.FindStringSubmatch(line); m != nil {
			fps = append(fps, m[1])
		} else if line != "" && !otherMarkerRE.MatchString(line) {
			break
		}
		end--
	}
	slices.Reverse(fps)
	return strings.Join(lines[:end], "\n"), fps
}

// OccurrenceMarker tags the one occurrence comment kept per issue.
func OccurrenceMarker(fp string) string {
	return "<!-- the-loop-diagnose occurrences:" + fp + " -->"
}

// FitBody makes sure body ends in the marker block naming fps (the
// canonical fingerprint first) and fits limit characters. An oversized body
// loses the end of its trigger section (the dossier) first, then, only if
// still too long, the end of everything before the markers; a visible note
// says what was cut and open code fences are closed so the rest still
// renders. It reports whether it cut anything.
func FitBody(body string, fps []string, limit int) (string, bool) {
	tail := "\n" + MarkerBlock(fps)
	if !slices.Equal(TrailingMarkers(body), fps) || !strings.HasSuffix(body, SelfAuthoredMarker+"\n") {
		body = markerHead(body, fps) + tail
	}
	if utf8.RuneCountInString(body) <= limit {
		return body, false
	}
	head := markerHead(body, fps)
	if pre, trig, post, ok := splitTrigger(head); ok {
		fixed := utf8.RuneCountInString(pre) + utf8.RuneCountInString(post) + utf8.RuneCountInString(tail)
		// A fence the dossier left open ran on to the end of the head;
		// cut there, it would open one over the markers instead.
		if out, ok := cutToFit(trig, limit-fixed, "dossier"); ok && openFence(pre+out+post) == "" {
			return pre + out + post + tail, true
		}
	}
	out, _ := cutToFit(head, limit-utf8.RuneCountInString(tail), "report")
	return out + tail, true
}

// markerHead is body without its markers, ready for the one marker
// block to be appended: every copy of ours taken out, any trailing marker
// lines dropped (a block must name only fps) and a fence left open closed
// (a block inside a fence is no marker).
func markerHead(body string, fps []string) string {
	head, _ := splitMarkerBlock(stripMarkers(body, fps))
	return CloseFences(strings.TrimRight(head, "\n"))
}

// stripMarkers removes every marker line of fps, so they can be
// appended once.
func stripMarkers(body string, fps []string) string {
	for _, fp := range fps {
		m := FingerprintMarker(fp)
		body = strings.ReplaceAll(body, m+"\n", "")
		body = strings.ReplaceAll(body, m, "")
	}
	body = strings.ReplaceAll(body, SelfAuthoredMarker+"\n", "")
	body = strings.ReplaceAll(body, SelfAuthoredMarker, "")
	return strings.TrimRight(body, "\n")
}

// SharesMarker tells whether an issue's markers name any of fps.
func SharesMarker(markers, fps []string) bool {
	return slices.ContainsFunc(markers, func(m string) bool { return slices.Contains(fps, m) })
}

// DuplicateBody is an issue body whose marker block gives way to a note
// that issue first stands for its defect: no lookup finds it again.
func DuplicateBody(body string, first int) string {
	head, _ := splitMarkerBlock(body)
	return strings.TrimRight(head, "\n") + "\n" + fmt.Sprintf("<!-- the-loop-diagnose duplicate-of:%d -->", first) + "\n" + SelfAuthoredMarker + "\n"
}

// splitTrigger finds the section that quotes the log (Evidence; older
// bodies' Trigger, the dossier) between its heading and the next section.
func splitTrigger(body string) (pre, trigger, post string, ok bool) {
	heading := EvidenceHeading
	i := strings.Index(body, heading)
	if i < 0 {
		heading = "## Trigger\n"
		if i = strings.Index(body, heading); i < 0 {
			return "", "", "", false
		}
	}
	start := i + len(heading)
	end := len(body)
	if j := strings.Index(body[start:], "\n## Environment"); j >= 0 {
		end = start + j
	}
	return body[:start], body[start:end], body[end:], true
}

// cutToFit shortens s to at most budget characters including a note
// about the cut and any fence it must close; ok is false when even the
// note does not fit.
func cutToFit(s string, budget int, what string) (string, bool) {
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
			what, tracker.MaxBody, omitted)
		out := CloseFences(kept) + note
		over := utf8.RuneCountInString(out) - budget
		if over <= 0 {
			return out, true
		}
		keep -= over
	}
	return "", false
}

// CloseFences appends the fence that closes a code block left open.
func CloseFences(s string) string {
	if open := openFence(s); open != "" {
		return s + "\n" + open
	}
	return s
}

// openFence is the opening run of the code fence s leaves open at its
// end, or "" when s ends outside a fenced block.
func openFence(s string) string {
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
		case open == "" && t[0] == '`' && strings.Contains(t[n:], "`"):
			// CommonMark: a backtick fence's info string holds no
			// backtick; this line is prose (an inline code span).
		case open == "":
			open = t[:n]
		case t[0] == open[0] && n >= len(open) && strings.TrimSpace(t[n:]) == "":
			open = ""
		}
	}
	return open
}

// Bounds that keep the occurrence comment far below GitHub's body limit
// whatever a fleet (or a human editing the comment) puts in its tally.
const (
	tallyMaxDeployments = 100
	tallyMaxVersions    = 8  // kept per deployment, the latest
	tallyMaxVersionLen  = 40 // characters
	tallyMaxIDLen       = 64
	tallyShownVersions  = 20
	// tallyOthers keys the entry that folds in the deployments least
	// recently seen once there are too many; it cannot collide with a
	// generated id (32 hex digits).
	tallyOthers = "others"
)

// tallyRE finds the hidden tally; lenient about spacing and line breaks
// in case a human reformatted it. The JSON we write escapes '>', so the
// first "-->" ends it.
var tallyRE = regexp.MustCompile(`(?s)<!--\s*the-loop-diagnose tally:(.*?)-->`)

var tallyIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Tally is the machine-readable tally hidden in the occurrence comment.
// Each deployment of a fleet owns one entry, keyed by its random id, holding
// its own cumulative sightings; the visible totals are computed from all of
// them, so a deployment editing the comment never erases another's count.
type Tally struct {
	Deployments map[string]TallyEntry `json:"deployments"`
}

// TallyEntry is one deployment's cumulative sightings of a defect.
type TallyEntry struct {
	Count    int       `json:"count"`
	First    time.Time `json:"first,omitzero"`
	Last     time.Time `json:"last,omitzero"`
	Versions []string  `json:"versions,omitempty"`
	// Folded is how many deployments the "others" entry stands for.
	Folded int `json:"folded,omitempty"`
}

// TallyOf is this deployment's entry, from its state.
func TallyOf(ref store.IssueRef) TallyEntry {
	return TallyEntry{Count: max(ref.Occurrences, 0), First: ref.FirstSeen, Last: ref.LastSeen, Versions: ref.Versions}.clean()
}

// clean bounds an entry's size and drops values no sighting can have.
func (e TallyEntry) clean() TallyEntry {
	// Saturate far below int's range so sums cannot overflow.
	e.Count = min(max(e.Count, 0), 1<<40)
	e.Folded = min(max(e.Folded, 0), 1<<20)
	e.First, e.Last = e.First.UTC(), e.Last.UTC()
	var vs []string
	for _, v := range e.Versions {
		if r := []rune(v); len(r) > tallyMaxVersionLen {
			v = string(r[:tallyMaxVersionLen])
		}
		v = strings.Join(strings.Fields(v), " ")
		if v != "" && !slices.Contains(vs, v) {
			vs = append(vs, v)
		}
	}
	if len(vs) > tallyMaxVersions {
		vs = vs[len(vs)-tallyMaxVersions:]
	}
	e.Versions = vs
	if !e.First.IsZero() && !e.Last.IsZero() && e.Last.Before(e.First) {
		e.First, e.Last = e.Last, e.First
	}
	return e
}

// ParseTally reads the tally hidden in an occurrence comment. It never
// fails: the comment is public and a human may have edited it, so whatever
// cannot be read (the whole tally, one entry, one field) is left out and the
// rest is kept.
func ParseTally(body string) Tally {
	t := Tally{Deployments: map[string]TallyEntry{}}
	// The last one: ours is written at the very end, after the visible text.
	all := tallyRE.FindAllStringSubmatch(body, -1)
	if all == nil {
		return t
	}
	m := all[len(all)-1]
	var raw struct {
		Deployments map[string]json.RawMessage `json:"deployments"`
	}
	if json.Unmarshal([]byte(strings.TrimSpace(m[1])), &raw) != nil {
		return t
	}
	for id, v := range raw.Deployments {
		if len(id) > tallyMaxIDLen || !tallyIDRE.MatchString(id) {
			continue
		}
		if e, ok := parseTallyEntry(v); ok {
			t.Deployments[id] = e
		}
	}
	return t
}

// parseTallyEntry reads one entry field by field, so one mangled field
// costs only that field. An entry without a usable count is no entry.
func parseTallyEntry(v json.RawMessage) (TallyEntry, bool) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(v, &fields) != nil {
		return TallyEntry{}, false
	}
	var e TallyEntry
	var count float64
	if json.Unmarshal(fields["count"], &count) != nil || count < 1 {
		return TallyEntry{}, false
	}
	e.Count = int(min(count, 1<<40))
	var folded float64
	if json.Unmarshal(fields["folded"], &folded) == nil && folded >= 1 {
		e.Folded = int(min(folded, 1<<20))
	}
	for key, dst := range map[string]*time.Time{"first": &e.First, "last": &e.Last} {
		var s string
		if json.Unmarshal(fields[key], &s) == nil {
			if ts, err := time.Parse(time.RFC3339Nano, s); err == nil {
				*dst = ts.UTC()
			}
		}
	}
	var versions []json.RawMessage
	if json.Unmarshal(fields["versions"], &versions) == nil {
		for _, rv := range versions {
			var s string
			if json.Unmarshal(rv, &s) == nil {
				e.Versions = append(e.Versions, s)
			}
		}
	}
	return e.clean(), true
}

// Set records one deployment's current entry; when the tally grows past
// its bound, the deployments least recently seen (never id's) are folded
// into one "others" entry, so the totals do not shrink.
func (t *Tally) Set(id string, e TallyEntry) {
	if t.Deployments == nil {
		t.Deployments = map[string]TallyEntry{}
	}
	t.Deployments[id] = e.clean()
	if len(t.Deployments) <= tallyMaxDeployments {
		return
	}
	others, had := t.Deployments[tallyOthers]
	if had {
		others.Folded = max(others.Folded, 1)
	}
	delete(t.Deployments, tallyOthers)
	ids := make([]string, 0, len(t.Deployments))
	for k := range t.Deployments {
		if k != id {
			ids = append(ids, k)
		}
	}
	slices.SortFunc(ids, func(a, b string) int {
		if c := t.Deployments[a].Last.Compare(t.Deployments[b].Last); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	for _, k := range ids[:len(t.Deployments)-(tallyMaxDeployments-1)] {
		others = fold(others, t.Deployments[k])
		delete(t.Deployments, k)
	}
	t.Deployments[tallyOthers] = others.clean()
}

// fold adds e's sightings to acc: counts add up, first seen is the
// earliest, last seen the latest, versions their union in order.
func fold(acc, e TallyEntry) TallyEntry {
	acc.Count = min(acc.Count+e.Count, 1<<40)
	acc.Folded += max(e.Folded, 1)
	if !e.First.IsZero() && (acc.First.IsZero() || e.First.Before(acc.First)) {
		acc.First = e.First
	}
	if e.Last.After(acc.Last) {
		acc.Last = e.Last
	}
	for _, v := range e.Versions {
		if !slices.Contains(acc.Versions, v) {
			acc.Versions = append(acc.Versions, v)
		}
	}
	return acc
}

// TallyTotals are the fleet's figures shown in the comment.
type TallyTotals struct {
	Count       int
	Deployments int
	First, Last time.Time
	Versions    []string
}

// Totals sums every deployment's entry: counts add up, first seen is the
// earliest, last seen the latest, versions their union (in order of the
// deployments' first sightings).
func (t Tally) Totals() TallyTotals {
	ids := make([]string, 0, len(t.Deployments))
	for id := range t.Deployments {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int {
		ea, eb := t.Deployments[a], t.Deployments[b]
		if c := ea.First.Compare(eb.First); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	var sum TallyEntry
	for _, id := range ids {
		sum = fold(sum, t.Deployments[id])
	}
	out := TallyTotals{Count: sum.Count, Deployments: sum.Folded, First: sum.First, Last: sum.Last, Versions: sum.Versions}
	// Release order, whichever deployment saw which: what is shown of a
	// long list is the newest. A version that is not semver keeps its
	// place after them.
	slices.SortStableFunc(out.Versions, func(a, b string) int {
		va, vb := source.CanonicalVersion(a), source.CanonicalVersion(b)
		switch {
		case va != "" && vb != "":
			return semver.Compare(va, vb)
		case va != "":
			return -1
		case vb != "":
			return 1
		}
		return 0
	})
	return out
}

// OccurrenceBody renders the one occurrence comment kept per issue:
// the fleet's totals, then the tally they were computed from, hidden.
func OccurrenceBody(fp string, t Tally, tool string) string {
	tot := t.Totals()
	var b strings.Builder
	b.WriteString(OccurrenceMarker(fp) + "\n" + SelfAuthoredMarker + "\n")
	b.WriteString("**Still happening.** the-loop-diagnose keeps seeing this defect in the-loop's event log.\n\n")
	b.WriteString("| | |\n|---|---|\n")
	fmt.Fprintf(&b, "| Occurrences | %d |\n", tot.Count)
	fmt.Fprintf(&b, "| Deployments reporting | %d |\n", tot.Deployments)
	fmt.Fprintf(&b, "| First seen | %s |\n", stamp(tot.First))
	fmt.Fprintf(&b, "| Last seen | %s |\n", stamp(tot.Last))
	if span := tot.Last.Sub(tot.First); span >= time.Hour && tot.Count > 1 && !tot.First.IsZero() {
		fmt.Fprintf(&b, "| Rate | %.1f per day |\n", float64(tot.Count)/span.Hours()*24)
	}
	versions := "none recorded"
	if n := len(tot.Versions); n > tallyShownVersions {
		versions = strings.Join(tot.Versions[n-tallyShownVersions:], ", ") + fmt.Sprintf(" (and %d earlier)", n-tallyShownVersions)
	} else if n > 0 {
		versions = strings.Join(tot.Versions, ", ")
	}
	// A version is free text from a deployment's build (and the tally it
	// is read from is editable on GitHub): keep it from breaking the table
	// or carrying live markup.
	versions = redact.Neutralize(strings.ReplaceAll(versions, "|", "\\|"))
	fmt.Fprintf(&b, "| Versions seen since filing | %s |\n", versions)
	who := "the-loop-diagnose"
	if tool != "" {
		who += " " + tool
	}
	fmt.Fprintf(&b, "\n_Totals over every deployment reporting here, kept by %s; this comment is updated in place, at most once an hour by each._\n", redact.Neutralize(who))
	// json.Marshal escapes '<' and '>', so the tally cannot end the HTML
	// comment early.
	tally, _ := json.Marshal(t)
	b.WriteString("<!-- the-loop-diagnose tally:" + string(tally) + " -->\n")
	return b.String()
}

// RecurredBody is the comment left when a completed issue is reopened.
func RecurredBody(count int, first, last time.Time, versions []string) string {
	running := "no version recorded"
	if len(versions) > 0 {
		running = "on " + redact.Neutralize(strings.Join(versions, ", "))
	}
	return fmt.Sprintf("%s\n**This defect recurred** after the issue was closed as completed: seen %d time(s) between %s and %s, %s. the-loop-diagnose reopened it.\n",
		SelfAuthoredMarker, count, stamp(first), stamp(last), running)
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	return t.UTC().Format(time.RFC3339)
}
