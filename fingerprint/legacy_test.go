package fingerprint

import (
	"regexp"
	"testing"
)

// Vectors computed with the-loop's Python normalizer (re.ASCII) and
// hashlib.sha1, so Legacy is checked against the original, not itself.
var legacyVectors = []struct{ event, text, normalized, fp string }{
	{"dispatch.failed", "HTTP 410 from /repos/o/r/issues/12", "HTTP # from <p>", "42519fcb056d1838"},
	{"dispatch.failed", "exit 137", "exit #", "2a5cb3759ea57c37"},
	{"agent.error", "open C:\\Users\\bob\\x.txt: access denied\vnext", "open <p> access denied\vnext", "f6483ccc5edfee40"},
	{"agent.error", "deadbeefcafe0123 and deadbeef_1 and ~/x/y.py:12 and é/ü 0xABCDEF12", "# and deadbeef_# and <p>:# and é/ü #xABCDEF#", "88be79fc4753c0c8"},
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

// The regexps as the-loop wrote them, with Python's ASCII \s spelled out
// (Go's \s lacks \v). The hand-written scanners must agree with them.
var (
	refWinPath = regexp.MustCompile(`[A-Za-z]:\\[^ \t\n\r\f\v]+`)
	refPath    = regexp.MustCompile(`(?:~|/)[\w@./+~-]+`)
	refHex     = regexp.MustCompile(`\b[0-9a-fA-F]{8,}\b`)
	refDigits  = regexp.MustCompile(`\d+`)
)

func refLegacyNormalize(s string) string {
	s = refWinPath.ReplaceAllLiteralString(s, "<p>")
	s = refPath.ReplaceAllLiteralString(s, "<p>")
	s = refHex.ReplaceAllLiteralString(s, "#")
	return refDigits.ReplaceAllLiteralString(s, "#")
}

func FuzzLegacyMatchesRegexps(f *testing.F) {
	for _, v := range legacyVectors {
		f.Add(v.text)
	}
	f.Add("x:\\ a:\\b /~ ~/ 1234abcd_ abcdef12\tz:\\\v")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := legacyNormalize(s), refLegacyNormalize(s); got != want {
			t.Fatalf("legacyNormalize(%q) = %q, regexps give %q", s, got, want)
		}
	})
}
