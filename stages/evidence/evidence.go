// Package evidence checks an agent's evidence against the dossier it read:
// every item must quote it (Verify), so a verdict that keeps a defect from
// a human rests only on text the tool can find itself. The gate and the
// triage's agent settlement call it; it is not a stage.
package evidence

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// An agent's verdict may keep a defect from a human only on evidence the
// tool can check itself: every evidence item must quote the dossier. The
// agent read text anyone can write into the log and may repeat or invent
// anything; a quote that is not in the dossier is invented.
//
// What an item quotes: the text inside its backtick spans (`...`, any run of
// backticks), "double" and “curly” quotes; the whole item when it has none.
// Text outside the quotes is the agent's commentary and is not checked. An
// item is verified when every quote of it is in the dossier and one of them
// is at least MinQuote characters long. Both sides are compared
// after folding case and collapsing every run of Unicode white space to one
// space, with format characters (zero-width, bidi controls) dropped; the
// dossier is searched as written and with its JSON string escapes (\" \n
// \uXXXX ...) decoded, since its records are JSON lines.

// MinQuote is the shortest quote that counts: shorter ones
// ("error", "line 3", "ENOSPC") are found in almost any dossier by chance.
const MinQuote = 12

// Verify checks every item against the dossier. It returns the
// quotes it found, or why the evidence does not verify.
func Verify(items []string, dossier string) (quotes []string, why string) {
	if len(items) == 0 {
		return nil, "no evidence"
	}
	hay := []string{normalize(dossier)}
	if un := unescapeJSON(dossier); un != dossier {
		hay = append(hay, normalize(un))
	}
	found := func(q string) bool {
		for _, h := range hay {
			if strings.Contains(h, q) {
				return true
			}
		}
		return false
	}
	for i, item := range items {
		long := false
		for _, q := range quotesOf(item) {
			n := normalize(q)
			if n == "" {
				continue
			}
			if !found(n) {
				return nil, fmt.Sprintf("evidence item %d quotes text that is not in the dossier", i+1)
			}
			long = long || utf8.RuneCountInString(n) >= MinQuote
			quotes = append(quotes, q)
		}
		if !long {
			return nil, fmt.Sprintf("evidence item %d quotes nothing of at least %d characters from the dossier", i+1, MinQuote)
		}
	}
	return quotes, ""
}

// quotes returns what item quotes: its backtick spans, then its
// double-quoted and curly-quoted parts, or the whole item when it has none.
// An opening mark without its closing one quotes nothing.
func quotesOf(item string) []string {
	var quotes []string
	var rest strings.Builder
	for s := item; s != ""; {
		i := strings.IndexByte(s, '`')
		if i < 0 {
			rest.WriteString(s)
			break
		}
		run := i
		for run < len(s) && s[run] == '`' {
			run++
		}
		fence := s[i:run]
		end := closingRun(s[run:], fence)
		if end < 0 {
			rest.WriteString(s)
			break
		}
		rest.WriteString(s[:i])
		rest.WriteByte(' ')
		quotes = append(quotes, strings.TrimSpace(s[run:run+end]))
		s = s[run+end+len(fence):]
	}
	other := rest.String()
	for _, pair := range [][2]string{{`"`, `"`}, {"“", "”"}} {
		for s := other; ; {
			i := strings.Index(s, pair[0])
			if i < 0 {
				break
			}
			j := strings.Index(s[i+len(pair[0]):], pair[1])
			if j < 0 {
				break
			}
			quotes = append(quotes, s[i+len(pair[0]):i+len(pair[0])+j])
			s = s[i+len(pair[0])+j+len(pair[1]):]
		}
	}
	if len(quotes) == 0 {
		return []string{item}
	}
	return quotes
}

// closingRun finds a run of exactly len(fence) backticks in s, as
// markdown closes a code span; -1 when there is none.
func closingRun(s, fence string) int {
	for off := 0; ; {
		i := strings.Index(s[off:], fence)
		if i < 0 {
			return -1
		}
		p := off + i
		e := p + len(fence)
		if (p == 0 || s[p-1] != '`') && (e == len(s) || s[e] != '`') {
			return p
		}
		for e < len(s) && s[e] == '`' {
			e++
		}
		off = e
	}
}

// normalize folds case, drops format characters and makes every
// run of white space (any Unicode space, line breaks, tabs) one space.
func normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case unicode.IsSpace(r):
			space = true
		case unicode.Is(unicode.Cf, r):
		default:
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// unescapeJSON decodes the JSON string escapes in s wherever they
// are; anything that is not a valid escape is kept as written.
func unescapeJSON(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch c := s[i+1]; c {
		case '"', '\\', '/':
			b.WriteByte(c)
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'b', 'f':
			b.WriteByte(' ')
		case 'u':
			if i+6 <= len(s) {
				if v, err := strconv.ParseUint(s[i+2:i+6], 16, 32); err == nil {
					b.WriteRune(rune(v))
					i += 5
					continue
				}
			}
			b.WriteByte(s[i])
			continue
		default:
			b.WriteByte(s[i])
			continue
		}
		i++
	}
	return b.String()
}
