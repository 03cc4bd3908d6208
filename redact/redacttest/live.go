// Package redacttest holds checks that tests of every package share: what
// counts as a live markdown construct in text bound for a public issue.
package redacttest

import (
	"regexp"
	"strings"
	"unicode"
)

// joiner is redact.Joiner, the one invisible character the neutraliser may
// leave (this package cannot import redact: redact's tests use it).
const joiner = "\u200d"

// liveConstructs match anything GitHub would act on in issue text: a
// mention, an issue reference, a tag or comment, an autolink, a link or
// image, an entity.
var liveConstructs = []struct {
	name string
	re   *regexp.Regexp
}{
	{"mention", regexp.MustCompile(`@[A-Za-z0-9_-]`)},
	{"reference", regexp.MustCompile(`#[0-9]`)},
	{"gh-ref", regexp.MustCompile(`(?i)\bgh-[0-9]`)},
	{"html", regexp.MustCompile(`<[A-Za-z/!?]`)},
	{"link", regexp.MustCompile(`\][(\[:]`)},
	{"entity", regexp.MustCompile(`&[A-Za-z0-9#]`)},
	{"scheme-url", regexp.MustCompile(`[A-Za-z0-9]://`)},
	{"www", regexp.MustCompile(`(?i)(^|[^A-Za-z0-9])www\.`)},
}

// LiveConstruct returns the first live construct in s (its kind and the
// text that matched), or "" when s is inert. A format character other than
// the joiner (a bidi override, a zero-width space) counts as one: it can
// hide or reorder text.
func LiveConstruct(s string) (kind, match string) {
	for _, c := range liveConstructs {
		if m := c.re.FindString(s); m != "" {
			return c.name, m
		}
	}
	for _, r := range s {
		if unicode.Is(unicode.Cf, r) && string(r) != joiner {
			return "format character", string(r)
		}
	}
	return "", ""
}

// WithoutMarkers drops the tool's own hidden marker lines (the only markup
// a filed body may carry), so the rest can be checked with LiveConstruct.
func WithoutMarkers(body string) string {
	var kept []string
	for _, line := range strings.Split(body, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "<!-- the-loop-diagnose ") || strings.HasPrefix(t, "<!-- the-loop:") {
			continue
		}
		kept = append(kept, line)
	}
	return strings.Join(kept, "\n")
}
