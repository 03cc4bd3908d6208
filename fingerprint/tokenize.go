package fingerprint

import (
	"regexp"
	"strings"
)

// The word splitter every version shares: how a text is cut into lines and
// words, character classes and keyword sets. A change here changes every
// version (the golden files under testdata say which records).

// Mask replaces every volatile token in a template.
const Mask = "<*>"

// maxTemplate caps a template's length. The cap is applied to the output,
// which volatile tokens no longer vary, so truncation stays deterministic
// under the substitutions that must not change a fingerprint.
const maxTemplate = 2048

// isSpace is ASCII whitespace.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v' || c == '\n'
}

// wordEnd finds the end of the word starting at i: the next whitespace not
// inside a quoted string.
func wordEnd(s string, i int) int {
	j := i
	for j < len(s) && !wordStop[s[j]] {
		j++
	}
	for j < len(s) && !isSpace(s[j]) {
		c := s[j]
		if (c == '"' || c == '\'' || c == '`') && quoteOpens(s, i, j) {
			if k := closingQuote(s, j); k > 0 {
				j = k + 1
				continue
			}
		}
		j++
	}
	return j
}

// quoteOpens reports whether the quote at j can open a quoted string: at
// the start of a word or after an opening bracket, '=' or ':' (an
// apostrophe inside a word, as in "can't", does not).
func quoteOpens(s string, wordStart, j int) bool {
	if j == wordStart {
		return true
	}
	switch s[j-1] {
	case '(', '[', '{', '<', '=', ':', ',':
		return true
	}
	return false
}

// closingQuote returns the index of the quote closing the one at j, or -1.
// The closing quote must be followed by a word boundary, so apostrophes in
// quoted prose don't end it early; quotes don't span lines.
func closingQuote(s string, j int) int {
	q := s[j]
	for k := j + 1; k < len(s) && k-j < 512; k++ {
		c := s[k]
		if c == '\n' {
			return -1
		}
		if c == '\\' && q == '"' {
			k++
			continue
		}
		if c == q && (k+1 == len(s) || !isWordByte(s[k+1])) {
			return k
		}
	}
	return -1
}

const (
	openers = "([{<"
	closers = ")]}>,;:.!?"
)

var maskBytes = []byte(Mask)

// lowerInto lower-cases an ASCII word into buf; a word longer than buf's
// capacity yields an empty result (no keyword is that long).
func lowerInto(buf []byte, s string) []byte {
	if len(s) > cap(buf) {
		return buf[:0]
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf = append(buf, c)
	}
	return buf
}

// trimPunct strips brackets, quotes and punctuation around a keyword.
func trimPunct(s string) string {
	for len(s) > 0 && keywordPunct[s[0]] {
		s = s[1:]
	}
	for len(s) > 0 && keywordPunct[s[len(s)-1]] {
		s = s[:len(s)-1]
	}
	return s
}

var keywordPunct = func() (t [256]bool) {
	for _, c := range []byte("[](){}<>#:=,;\"'`") {
		t[c] = true
	}
	return t
}()

// wordStop marks the bytes wordEnd must look at: whitespace and quotes.
var wordStop = func() (t [256]bool) {
	for _, c := range []byte(" \t\r\f\v\n\"'`") {
		t[c] = true
	}
	return t
}()

// wordSet is a small set of lower-case keywords, asked about words of any
// case. It rules a word out by its length before lower-casing and hashing
// it: the normalizer asks about every word, and most words are of a length
// no keyword in the set has.
type wordSet struct {
	lengths uint64 // bit n set: a keyword has n bytes (all are under 64)
	words   map[string]bool
}

func newWordSet(words ...string) wordSet {
	s := wordSet{words: map[string]bool{}}
	for _, w := range words {
		s.lengths |= 1 << len(w)
		s.words[w] = true
	}
	return s
}

// hasFold reports whether w, lower-cased, is in the set.
func (s wordSet) hasFold(w string) bool {
	if len(w) >= 64 || s.lengths&(1<<len(w)) == 0 {
		return false
	}
	var buf [64]byte
	return s.words[string(lowerInto(buf[:0], w))]
}

// isEmptyBrackets: "()", "[]", "{}" or "<>", alone.
func isEmptyBrackets(w string) bool {
	return w == "()" || w == "[]" || w == "{}" || w == "<>"
}

func isQuote(c byte) bool { return c == '"' || c == '\'' || c == '`' }

// isLetters: ASCII letters only.
func isLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isASCIILetter(s[i]) {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool { return isASCIILetter(c) || isDigit(c) }

// runEnd returns the end of the alphanumeric run at i. A micro sign
// (µ or μ) inside a run belongs to it, so "81.7µs" masks like "81.7ms".
func runEnd(s string, i int) int {
	for i < len(s) {
		switch {
		case isAlnum(s[i]):
			i++
		case i+1 < len(s) && (s[i] == 0xC2 && s[i+1] == 0xB5 || s[i] == 0xCE && s[i+1] == 0xBC):
			i += 2
		default:
			return i
		}
	}
	return i
}

func isSegmentDelim(c byte) bool {
	switch c {
	case '{', '}', '(', ')', '[', ']', '<', '>', ',', ';', '"', '\'', '`', '|', '=', ':', '@':
		return true
	}
	return false
}

// onlyMasksAndSymbols: masks and ASCII punctuation, at least one mask.
func onlyMasksAndSymbols(b []byte) bool {
	masks := 0
	for i := 0; i < len(b); {
		if i+len(Mask) <= len(b) && string(b[i:i+len(Mask)]) == Mask {
			masks++
			i += len(Mask)
			continue
		}
		if isAlnum(b[i]) || b[i] >= 0x80 {
			return false
		}
		i++
	}
	return masks > 0
}

// Rust panics: "thread 'NAME' panicked at 'MESSAGE', FILE:LINE:COL" (before
// Rust 1.73) or "thread 'NAME' panicked at FILE:LINE:COL:" with the message
// on the next line. The thread name varies per run; the message is the
// defect, though quoted prose is otherwise data; the file's place is masked
// as everywhere.
var (
	rustPanicOld = regexp.MustCompile(`thread '[^'\n]*' panicked at '(.*)', (\S+?):\d+:\d+`)
	rustPanicNew = regexp.MustCompile(`thread '[^'\n]*' panicked at (\S+?):\d+:\d+:`)
)

func rustPanic(text string) string {
	text = rustPanicOld.ReplaceAllString(text, "thread panicked at $2: $1")
	return rustPanicNew.ReplaceAllString(text, "thread panicked at $1:")
}

// isRubyCaller: an indented "from path:line:in ..." frame.
func isRubyCaller(line, t string) bool {
	return len(line) > len(t) && strings.HasPrefix(t, "from ") && strings.Contains(t, ":in ")
}

// isRubyFrame: an indented Rails-style frame without "from":
// "  app/models/order.rb:12:in `summary'".
func isRubyFrame(line, t string) bool {
	i := strings.Index(t, ".rb:")
	return len(line) > len(t) && i > 0 && !strings.ContainsAny(t[:i], " \t") && strings.Contains(t[i:], ":in ")
}

// isNumberedFrame: "#<digits> " opening a line that names a call — it has
// an argument list — or PHP's "{main}"; a line like "#4521 merged" is not
// a frame.
func isNumberedFrame(t string) bool {
	if len(t) < 3 || t[0] != '#' {
		return false
	}
	i := 1
	for i < len(t) && isDigit(t[i]) {
		i++
	}
	if i == 1 || i == len(t) || t[i] != ' ' {
		return false
	}
	rest := t[i:]
	return strings.IndexByte(rest, '(') >= 0 || strings.TrimSpace(rest) == "{main}"
}

func isASCIILetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isDigit(c byte) bool       { return c >= '0' && c <= '9' }
func isHexByte(c byte) bool     { return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'f') }

// isWordByte is ASCII \w, for the v2 and v3 normalizers (which are ASCII by
// design; only the-loop's v1 follows Python's Unicode classes).
func isWordByte(c byte) bool { return isASCIILetter(c) || isDigit(c) || c == '_' }
