package redact

import (
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"
)

// DefangMarker is inserted into control phrases so the-loop no longer
// reacts to them: the-loop's own marker (redact.defang_control_keywords),
// so an issue reads the same whichever filed it. It is visible on purpose:
// a reader of the issue sees the phrase was neutralised rather than
// wondering why nothing happened.
const DefangMarker = "‹defanged›"

// controlPhrase is how the-loop recognises a command in issue text:
// "the-loop start", "/the-loop stop", "@the-loop do", any case, any spacing.
// the-loop matches case-insensitively with Python's re, which also takes
// U+0130 and U+0131 for an i (Go's (?i) does not): hence the class.
var controlPhrase = regexp.MustCompile(`(?i)the-loop(\s+)(?:start|stop|pause|resume|execute|contr[iİı]bute|cleanup|do)\b`)

// Defang neutralises the-loop's control phrases in s so that quoting text
// in an issue cannot trigger the-loop. "the-loop start" becomes
// "the-loop ‹defanged› start"; a deployment's keyword such as "ship it now"
// becomes "ship ‹defanged› it ‹defanged› now" (a marker at every space, as
// the-loop writes it), and a one-word keyword "deploy" becomes
// "d‹defanged›eploy". Matching is case-insensitive. Phrases shorter than
// two characters cannot be broken visibly and are ignored. Defang is
// idempotent: a match that overlaps a marker is already neutralised.
//
// s is normalised first (see Normalize): a no-break space, U+3000 or a
// vertical tab between "the-loop" and "start" is a space to the-loop's
// Unicode-aware matching and to a title's whitespace folding, and a
// zero-width character must not hide a phrase from this match.
func Defang(s string, extraKeywords []string) string {
	s = Normalize(s)
	var inserts []int
	markers := markerRanges(s)
	for _, m := range controlPhrase.FindAllStringSubmatchIndex(s, -1) {
		if overlapsRanges(m[0], m[1], markers) {
			continue
		}
		inserts = append(inserts, m[2]) // before the whitespace after "the-loop"
	}
	for _, re := range extraPhrases(extraKeywords) {
		// Overlapping matches too ("aa" in "aaaa"): each needs its own
		// break, or one would survive between two markers.
		for pos := 0; pos < len(s); {
			m := re.FindStringIndex(s[pos:])
			if m == nil {
				break
			}
			start, end := pos+m[0], pos+m[1]
			if !overlapsRanges(start, end, markers) {
				for _, at := range breakPoints(s[start:end]) {
					inserts = append(inserts, start+at)
				}
			}
			_, size := utf8.DecodeRuneInString(s[start:])
			pos = start + size
		}
	}
	if len(inserts) == 0 {
		return s
	}
	sort.Ints(inserts)
	var b strings.Builder
	b.Grow(len(s) + len(inserts)*(len(DefangMarker)+1))
	pos, last := 0, -1
	for _, at := range inserts {
		if at == last {
			continue
		}
		last = at
		b.WriteString(s[pos:at])
		if at < len(s) && isSpace(s[at]) {
			b.WriteByte(' ') // "the-loop ‹defanged› start"
		}
		b.WriteString(DefangMarker) // "d‹defanged›eploy"
		pos = at
	}
	b.WriteString(s[pos:])
	return b.String()
}

func isSpace(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }

// breakPoints are where markers go inside a matched phrase: at each run of
// spaces (the-loop breaks every space of a keyword), or after the first
// character of a one-word phrase.
func breakPoints(m string) []int {
	var at []int
	for i := 0; i < len(m); i++ {
		if isSpace(m[i]) && i > 0 && !isSpace(m[i-1]) {
			at = append(at, i)
		}
	}
	if len(at) > 0 {
		return at
	}
	for i := range m {
		if i > 0 {
			return []int{i}
		}
	}
	return []int{len(m)}
}

func markerRanges(s string) [][2]int {
	var out [][2]int
	for off := 0; ; {
		i := strings.Index(s[off:], DefangMarker)
		if i < 0 {
			return out
		}
		start := off + i
		end := start + len(DefangMarker)
		// The spaces written around a marker belong to it.
		for start > 0 && s[start-1] == ' ' {
			start--
		}
		for end < len(s) && s[end] == ' ' {
			end++
		}
		out = append(out, [2]int{start, end})
		off = end
	}
}

func overlapsRanges(start, end int, ranges [][2]int) bool {
	for _, r := range ranges {
		if r[0] < end && start < r[1] {
			return true
		}
	}
	return false
}

var phraseCache sync.Map // keyword list joined by \x00 -> []*regexp.Regexp

func extraPhrases(keywords []string) []*regexp.Regexp {
	if len(keywords) == 0 {
		return nil
	}
	key := strings.Join(keywords, "\x00")
	if v, ok := phraseCache.Load(key); ok {
		return v.([]*regexp.Regexp)
	}
	var out []*regexp.Regexp
	for _, k := range keywords {
		k = strings.TrimSpace(k)
		if len([]rune(k)) < 2 {
			continue
		}
		// Whitespace inside a phrase matches any whitespace run.
		parts := strings.Fields(k)
		for i, p := range parts {
			parts[i] = pyCaseless(p)
		}
		re, err := regexp.Compile(`(?i)` + strings.Join(parts, `\s+`))
		if err != nil {
			continue // not valid UTF-8: cannot occur in issue text either
		}
		out = append(out, re)
	}
	phraseCache.Store(key, out)
	return out
}

// pyCaseless quotes a keyword's word for a (?i) regexp that matches what
// Python's re.IGNORECASE does where Go's (?i) differs: an i also matches
// U+0130 and U+0131 there (the only letters of A-Z with such a difference;
// K and ſ are in Go's fold orbits too).
func pyCaseless(word string) string {
	var b strings.Builder
	for _, r := range word {
		switch r {
		case 'i', 'I', 'İ', 'ı':
			b.WriteString("[iİı]")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	return b.String()
}
