package redact

import (
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Neutralising markdown for a public issue.
//
// Everything a log line or an agent writes is shown on GitHub, where some
// text acts: "@user" and "@org/team" notify people, "#12", "GH-12" and
// "owner/repo#12" leave a backlink on somebody's issue (and after a closing
// keyword close it, in a pull request), an image is fetched from its host
// when the issue is viewed, raw HTML can hide text (<details>, <!-- -->) and
// a link can dress one URL as another. Neutralize makes each of these inert
// by inserting an invisible zero-width joiner at the one place that breaks
// the construct (after "@", after "#", after "<", after "&", after the "]"
// of a link, inside "://" and "www."), the way issue-filing bots sanitise
// markdown. The text reads the same, and no construct survives.
//
// The principle that makes it safe: the break is inserted wherever the
// trigger characters stand, regardless of markdown context. A parser of
// code spans, fences and HTML blocks would have to agree with GitHub's
// exactly (a backtick left open on one line pairs with one on the next), and
// any disagreement leaves a live construct; an invisible character inside a
// real code span costs nothing. Before it, Normalize maps every Unicode space
// to an ASCII space and drops format and bidi characters (zero-width ones
// included), so neither a hidden character nor a look-alike space can carry
// a construct or a control keyword past the defang, and a second pass gives
// the same text (idempotent).

// Joiner is the invisible character Neutralize inserts to break a construct.
const Joiner = "\u200d"

// Normalize makes text safe to match against: every Unicode space (NBSP,
// U+3000, vertical tab, form feed, line and paragraph separators...) becomes
// an ASCII space, "\r\n" and a lone "\r" become "\n", format characters (the
// zero-width ones, bidi embeddings and overrides, tag characters, the soft
// hyphen) and other control characters are dropped, and invalid UTF-8
// becomes U+FFFD. Tabs and newlines are kept.
func Normalize(s string) string {
	if plainText(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r == '\r':
			if i < len(s) && s[i] == '\n' {
				continue // the "\n" that follows is written next
			}
			b.WriteByte('\n')
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		case unicode.IsSpace(r) || unicode.Is(unicode.Zs, r):
			b.WriteByte(' ')
		case unicode.Is(unicode.Cf, r) || unicode.IsControl(r):
			// dropped
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// plainText reports whether s is printable ASCII, tabs and newlines only:
// most text is, and Normalize leaves it as it is.
func plainText(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < ' ' && c != '\n' && c != '\t') || c >= 0x7f {
			return false
		}
	}
	return true
}

// Neutralize returns s normalised (see Normalize) with every markdown
// construct that can notify, cross-link, fetch, hide or disguise made inert.
// It is idempotent and changes nothing a reader sees but those constructs'
// behaviour.
func Neutralize(s string) string {
	s = Normalize(s)
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); i++ {
		c := s[i]
		b.WriteByte(c)
		if breakAfter(s, i) {
			b.WriteString(Joiner)
		}
	}
	return b.String()
}

// breakAfter reports whether a joiner goes right after s[i].
func breakAfter(s string, i int) bool {
	next := byte(0)
	if i+1 < len(s) {
		next = s[i+1]
	}
	switch s[i] {
	case '@': // @user, @org/team, and the e-mail autolink a@b.c
		return isAlnum(next) || next == '-' || next == '_'
	case '#': // #12, owner/repo#12
		return isDigit(next)
	case '<': // <img>, </details>, <!-- -->, <?php, <https://autolink>
		return isLetter(next) || next == '/' || next == '!' || next == '?'
	case '&': // &#64; and &commat; decode to "@" after the mention filter can no longer see the entity
		return isAlnum(next) || next == '#'
	case ']': // [x](url), ![x](url), [x][ref], [ref]: url, [^note]: text
		return next == '(' || next == '[' || next == ':'
	case ':': // https://, http://, and any scheme://
		return next == '/' && i+2 < len(s) && s[i+2] == '/' && i > 0 && isAlnum(s[i-1])
	case '-': // GH-12
		return isDigit(next) && i >= 2 && (s[i-2] == 'G' || s[i-2] == 'g') && (s[i-1] == 'H' || s[i-1] == 'h') &&
			(i == 2 || !isAlnum(s[i-3]))
	case 'w', 'W': // www.example.com
		return next == '.' && i >= 2 && strings.EqualFold(s[i-2:i+1], "www") && (i == 2 || !isAlnum(s[i-3]))
	}
	return false
}

// MaxNameLen bounds a name shown in a code span.
const MaxNameLen = 100

// IsName reports whether s may be shown inline in a code span: an event,
// source, harness, via or gh_event name made of letters, digits and
// "._:/-", at most MaxNameLen characters. Anything else (a backtick that
// would end the span, a space, markup) is shown in a fenced block instead.
func IsName(s string) bool {
	if s == "" || len(s) > MaxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '.' && c != '_' && c != ':' && c != '/' && c != '-' {
			return false
		}
	}
	return true
}

// Publish makes untrusted text (an agent's prose, a quoted record, a
// template) fit for a public issue: normalised, scrubbed, control keywords
// defanged, markdown neutralised. It is the one function every piece of
// prose passes through before it reaches a title, body or comment. id is
// the identity of the records the text is about (see ScrubRecord); the zero
// RecordIdentity for none.
func (r *Redactor) Publish(s string, id RecordIdentity, keywords []string) string {
	return Neutralize(Defang(r.ScrubRecord(Normalize(s), id), keywords))
}

// Value returns a decoded JSON value of a record whose identity is id fit
// to be shown: JSON numbers, booleans and null as they are (they cannot
// carry text), strings scrubbed,
// and objects and arrays as their compact JSON text scrubbed as one string —
// never copied raw, since a secret inside one ("source": {"dsn": ...}) has
// no key a string-only walk would reach.
func (r *Redactor) Value(v any, id RecordIdentity) any {
	switch v := v.(type) {
	case nil, bool, float64, float32, int, int64, json.Number:
		return v
	case string:
		return r.ScrubRecord(v, id)
	default:
		text, err := json.Marshal(v)
		if err != nil {
			return "<unprintable value>"
		}
		return r.ScrubRecord(string(text), id)
	}
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
