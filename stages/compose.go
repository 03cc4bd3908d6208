package stages

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/the-loop/the-loop-diagnose/fingerprint"
	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/redact"
)

// Markers every filed issue carries.
const (
	// SelfAuthoredMarker is the-loop's marker for text it wrote itself: the-loop
	// ignores such issues and comments, so a filed issue can never arm it.
	SelfAuthoredMarker = "<!-- the-loop:agent-comment -->"
	TitlePrefix        = "[self-diagnosed] "
	MaxTitleChars      = 120
)

// FingerprintMarker is the hidden line that identifies a defect's issue on
// GitHub, whichever deployment filed it.
func FingerprintMarker(fp string) string {
	return "<!-- the-loop-diagnose fingerprint:" + fp + " -->"
}

// ComposeConfig configures the compose stage.
type ComposeConfig struct {
	Scrubber *redact.Redactor
	Keywords []string // extra control keywords to defang, beyond the-loop's own
	Repo     string
	Label    string
}

// NewCompose turns each successful finding that is to be filed into an
// issue title and body; the others (no usable finding; deferred by the cap,
// settled, already known) pass through with no title or body: nothing
// would read them, and a watcher's recurring deferred defects paid for
// their scrubbing every scan.
func NewCompose(cfg ComposeConfig) pipeline.Stage[pipeline.Finding, pipeline.Report] {
	return pipeline.Map(func(_ context.Context, f pipeline.Finding) (pipeline.Report, bool, error) {
		r := pipeline.Report{Finding: f, Repo: cfg.Repo, Label: cfg.Label}
		if f.Answer == nil || f.Failure != "" || f.Verdict != pipeline.VerdictNew {
			return r, true, nil
		}
		r.Title, r.Body = Compose(f, cfg)
		return r, true, nil
	})
}

// Compose renders the issue. Every fragment that came from the log or the
// agent passes through redact.Publish (scrubbed again, since the agent may
// echo what it read; defanged) and the assembled body through
// redact.Neutralize once more, so nothing in it can mention, cross-link,
// fetch or hide: the only live markup is the two markers appended last.
func Compose(f pipeline.Finding, cfg ComposeConfig) (title, body string) {
	ids := GroupIdentity(f.Group) // an agent may quote the records' own identity
	public := func(s string) string { return cfg.Scrubber.Publish(strings.TrimSpace(s), ids, cfg.Keywords) }
	a := f.Answer
	title = ComposeTitle(public(composeOneLine(a.Title)))
	var b strings.Builder
	section := func(name, text string) {
		if text = public(text); text == "" {
			text = "_(none given)_"
		}
		fmt.Fprintf(&b, "## %s\n\n%s\n\n", name, text)
	}
	section("Summary", a.Summary)
	section("Root cause hypothesis", a.RootCause)
	section("Suggested fix", a.SuggestedFix)
	if a.Verdict != "" {
		ev := "- Verdict: " + a.Verdict
		if a.Confidence != nil {
			ev += fmt.Sprintf(" (confidence %.2f)", *a.Confidence)
		}
		for _, e := range a.Evidence {
			ev += "\n- " + composeOneLine(e)
		}
		section("Agent verdict", ev)
	}
	fmt.Fprintf(&b, "## Trigger\n\n%s\n", redact.Defang(f.Markdown, cfg.Keywords))
	fmt.Fprintf(&b, "## Environment\n\n%s\n", f.Environment)
	fmt.Fprintf(&b, "---\n_Filed automatically by the-loop-diagnose from the-loop's event log. Intended label: `%s`._\n\n", cfg.Label)
	body = redact.Neutralize(b.String())
	body += MarkerBlock(MarkerFingerprints(f.Group))
	return title, body
}

// maxMarkerAliases bounds the alias markers an issue carries.
const maxMarkerAliases = 12

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
		if len(out) > maxMarkerAliases {
			break
		}
		if !slices.Contains(out, a) && postMarkerLineRE.MatchString(FingerprintMarker(a)) {
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

// composeOneLine folds every run of whitespace, Unicode spaces included,
// into one space: normalised first, so the defang that follows sees the
// same spaces the title will show.
func composeOneLine(s string) string {
	return strings.Join(strings.Fields(redact.Normalize(s)), " ")
}

// ComposeTitle makes a one-line title of at most MaxTitleChars.
func ComposeTitle(t string) string {
	t = strings.Join(strings.Fields(t), " ")
	if t == "" {
		t = "unnamed failure"
	}
	t = TitlePrefix + t
	if r := []rune(t); len(r) > MaxTitleChars {
		t = string(r[:MaxTitleChars-1]) + "…"
	}
	return t
}
