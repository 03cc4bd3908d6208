// Package issue is the text of a filed issue, apart from the stages that
// write and post it: the hidden marker lines that find a defect's issue
// again (FingerprintMarker, MarkerFingerprints, MarkerBlock), titles
// (Title, CleanTitle, FitTitle), bodies fitted to GitHub's limits with
// their code fences kept whole (FitBody), and the one occurrence comment
// per issue with the fleet's tally hidden in it (Tally, OccurrenceBody).
// The compose stage writes with it; the post stage reads markers and
// tallies back with it.
package issue

import (
	"regexp"
	"slices"
	"strings"

	"github.com/the-loop/the-loop-diagnose/fingerprint"
	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/redact"
	"github.com/the-loop/the-loop-diagnose/stages/tracker"
)

// Markers every filed issue carries.
const (
	// SelfAuthoredMarker is the-loop's marker for text it wrote itself: the-loop
	// ignores such issues and comments, so a filed issue can never arm it.
	SelfAuthoredMarker = "<!-- the-loop:agent-comment -->"
	TitlePrefix        = "[self-diagnosed] "
	MaxTitleChars      = 100
)

// EvidenceHeading opens the section that quotes the log; an oversized body
// loses the end of it first (FitBody).
const EvidenceHeading = "## Evidence\n"

// FingerprintMarker is the hidden line that identifies a defect's issue on
// GitHub, whichever deployment filed it.
func FingerprintMarker(fp string) string {
	return "<!-- the-loop-diagnose fingerprint:" + fp + " -->"
}

// The title noise CleanTitle removes: what a title is better without: the fingerprint's
// masks, brackets left empty, request and trace ids (UUIDs, long hex runs,
// req_/request-id tokens).
var (
	maskRE      = regexp.MustCompile(`<\*>|<[a-z]{1,8}>`)
	requestIDRE = regexp.MustCompile(`(?i)\b(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{16,}|req(?:uest)?[_-]?id[:=]?\s*[A-Za-z0-9_-]+|req_[A-Za-z0-9]+)\b`)
	emptyRE     = regexp.MustCompile(`\(\s*[,;:]?\s*\)|\[\s*[,;:]?\s*\]|\{\s*[,;:]?\s*\}|""|''`)
	spaceRE     = regexp.MustCompile(`\s+([,;:.)\]])`)
)

// CleanTitle takes the noise out of a title before it is published.
func CleanTitle(t string) string {
	t = maskRE.ReplaceAllString(t, "")
	t = requestIDRE.ReplaceAllString(t, "")
	for range 3 { // "([])" empties in turns
		t = emptyRE.ReplaceAllString(t, "")
	}
	t = OneLine(t)
	t = spaceRE.ReplaceAllString(t, "$1")
	t = strings.Trim(t, " :;,-")
	return t
}

// MaxMarkerAliases bounds the alias markers an issue carries.
const MaxMarkerAliases = 12

// MarkerFingerprints are the fingerprints an issue's marker block names: the
// group's own first (canonical), then its aliases, most widely shared
// first: template families' pattern fingerprints (the same on every
// deployment that learned the family), this version's merged variants,
// then older versions'. Any deployment that knows the defect by one of them
// finds the issue.
func MarkerFingerprints(g pipeline.Group) []string {
	out := []string{g.Fingerprint}
	rank := func(a string) int {
		switch {
		case fingerprint.IsPattern(a):
			return 0
		case strings.HasPrefix(a, fingerprint.Version+":"):
			return 1
		case strings.Contains(a, ":"):
			return 2
		}
		return 3
	}
	aliases := slices.Clone(g.Aliases)
	slices.SortStableFunc(aliases, func(a, b string) int { return rank(a) - rank(b) })
	for _, a := range aliases {
		if len(out) > MaxMarkerAliases {
			break
		}
		if !slices.Contains(out, a) && markerLineRE.MatchString(FingerprintMarker(a)) {
			out = append(out, a)
		}
	}
	return out
}

// MarkerBlock is the hidden block that ends every issue body the tool
// files: one marker line per fingerprint (the canonical first), then the
// self-authored marker.
func MarkerBlock(fps []string) string {
	var b strings.Builder
	for _, fp := range fps {
		b.WriteString(FingerprintMarker(fp) + "\n")
	}
	b.WriteString(SelfAuthoredMarker + "\n")
	return b.String()
}

// OneLine folds every run of whitespace, Unicode spaces included,
// into one space: normalised first, so the defang that follows sees the
// same spaces the title will show.
func OneLine(s string) string {
	return strings.Join(strings.Fields(redact.Normalize(s)), " ")
}

// Title makes a one-line title of at most MaxTitleChars, the prefix first.
func Title(t string) string { return Truncate(TitlePrefix+named(t), MaxTitleChars) }

// FitTitle makes a title GitHub accepts: one line, at most tracker.MaxTitle
// characters.
func FitTitle(t string) string { return Truncate(named(t), tracker.MaxTitle) }

// named is t on one line, or what a title without text says instead.
func named(t string) string {
	if t = strings.Join(strings.Fields(t), " "); t == "" {
		return "unnamed failure"
	}
	return t
}

// Truncate cuts s to at most n runes, the last one "…" when it cut.
func Truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
