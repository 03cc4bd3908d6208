// Package redacttest holds checks that tests of every package share: what
// counts as a live markdown construct in text bound for a public issue.
package redacttest

import (
	"regexp"
	"strings"
	"unicode"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
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
	return rendered(s)
}

// gfm parses as GitHub does (CommonMark plus tables, strikethrough, task
// lists and bare-URL autolinks): a judge nobody here wrote, beside the
// patterns above, which are ours.
var gfm = goldmark.New(goldmark.WithExtensions(extension.GFM))

// rendered returns the first node of s's parse that would render live: a
// link, an image, an autolink or raw HTML. Text inside code spans and code
// blocks parses to none of them.
func rendered(s string) (kind, match string) {
	src := []byte(s)
	doc := gfm.Parser().Parse(text.NewReader(src))
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering || kind != "" {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Link:
			kind, match = "rendered link", string(n.Destination)
		case *ast.Image:
			kind, match = "rendered image", string(n.Destination)
		case *ast.AutoLink:
			kind, match = "rendered autolink", string(n.URL(src))
		case *ast.RawHTML:
			kind, match = "rendered html", string(n.Segments.Value(src))
		case *ast.HTMLBlock:
			kind, match = "rendered html block", string(n.Lines().Value(src))
		}
		return ast.WalkContinue, nil
	})
	return kind, match
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
