package fingerprint

import (
	"regexp"
	"testing"
)

// Vectors computed with the-loop's Python normalizer and hashlib.sha1, so
// Legacy is checked against the original, not itself. the-loop's patterns
// are Unicode str patterns (no re.ASCII): "/ü" is a path. (An earlier
// vector here assumed re.ASCII and kept "é/ü"; the-loop gives "é<p>".)
var legacyVectors = []struct{ event, text, normalized, fp string }{
	{"dispatch.failed", "HTTP 410 from /repos/o/r/issues/12", "HTTP # from <p>", "42519fcb056d1838"},
	{"dispatch.failed", "exit 137", "exit #", "2a5cb3759ea57c37"},
	{"agent.error", "open C:\\Users\\bob\\x.txt: access denied\vnext", "open <p> access denied\vnext", "f6483ccc5edfee40"},
	{"agent.error", "deadbeefcafe0123 and deadbeef_1 and ~/x/y.py:12 and é/ü 0xABCDEF12", "# and deadbeef_# and <p>:# and é<p> #xABCDEF#", "0bc556ca0e7ea3ec"},
	{"give-up", "", "", "48309072814d1179"},
	{"run.failed", "Traceback (most recent call last):\n  File \"/home/u/a.py\", line 3, in <module>\nValueError: bad 42", "Traceback (most recent call last):\n  File \"<p>\", line #, in <module>\nValueError: bad #", "af4925f3b286b7e1"},
	{"x", "ab12cd34ef 12345678 1234567 /a//b ~ ~a /", "# # # <p> ~ <p> /", "1be266fd17d464df"},
}

func TestLegacyMatchesTheLoop(t *testing.T) {
	for _, v := range legacyVectors {
		if got := legacyNormalize(v.text); got != v.normalized {
			t.Errorf("legacyNormalize(%q) = %q, want %q", v.text, got, v.normalized)
		}
		if got := Legacy(v.event, v.text); got != v.fp {
			t.Errorf("Legacy(%q, %q) = %s, want %s", v.event, v.text, got, v.fp)
		}
	}
}

func TestLegacyIsAlwaysAnAlias(t *testing.T) {
	for _, v := range legacyVectors {
		r := Compute(Input{Event: v.event, Error: v.text})
		if len(r.Aliases) == 0 || r.Aliases[0] != v.fp {
			t.Errorf("Compute(%q).Aliases = %v, want the legacy %s first", v.text, r.Aliases, v.fp)
		}
	}
}

// The regexps as the-loop wrote them, with Python's Unicode classes spelled
// out for Go's regexp (whose \s, \w, \d and \b are ASCII): \s is
// str.isspace, \w letters, numbers and '_', \d Nd. Go has no look-around,
// so \b[0-9a-fA-F]{8,}\b is the equivalent "a whole word of 8+ hex digits".
// The hand-written scanners must agree with them.
const (
	pySpaceClass = `\t-\r\x1c-\x1f \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}`
	pyWordClass  = `\pL\pN_`
)

var (
	refWinPath = regexp.MustCompile(`[A-Za-z]:\\[^` + pySpaceClass + `]+`)
	refPath    = regexp.MustCompile(`(?:~|/)[` + pyWordClass + `@./+~-]+`)
	refWord    = regexp.MustCompile(`[` + pyWordClass + `]+`)
	refHexWord = regexp.MustCompile(`^[0-9a-fA-F]{8,}$`)
	refDigits  = regexp.MustCompile(`\p{Nd}+`)
)

func refLegacyNormalize(s string) string {
	s = refWinPath.ReplaceAllLiteralString(s, "<p>")
	s = refPath.ReplaceAllLiteralString(s, "<p>")
	s = refWord.ReplaceAllStringFunc(s, func(w string) string {
		if refHexWord.MatchString(w) {
			return "#"
		}
		return w
	})
	return refDigits.ReplaceAllLiteralString(s, "#")
}

func FuzzLegacyMatchesRegexps(f *testing.F) {
	for _, v := range legacyVectors {
		f.Add(v.text)
	}
	f.Add("x:\\ a:\\b /~ ~/ 1234abcd_ abcdef12\tz:\\\v")
	f.Add("cannot open /home/josé/données/x.txt é12345678 12345678é ٣٤ １２ C:\\a\u00a0b C:\\a\x1cb /x\u0301 ~🔥")
	f.Add("\xff/\xfe C:\\\xff 12\xc3")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := legacyNormalize(s), refLegacyNormalize(s); got != want {
			t.Fatalf("legacyNormalize(%q) = %q, regexps give %q", s, got, want)
		}
	})
}
