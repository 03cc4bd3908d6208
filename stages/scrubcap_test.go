package stages

import (
	"strings"
	"testing"

	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// TestErrorCapAppliesToScrubbedText: a secret that straddles the error
// text's size cap is masked, because the cut is made after scrubbing. Cut
// first, a URL's password loses its '@host' and a token its length, and
// neither rule fires on what is left.
func TestErrorCapAppliesToScrubbedText(t *testing.T) {
	secrets := []struct{ before, secret, after string }{
		{"dial postgres://app:", "Zq7xWp3LmK9vTb2NcR5h", "@db.internal:5432/app failed"},
		{"push with token ", "ghp_" + strings.Repeat("aB3dE6gH9k", 4)[:36], " rejected"},
		{"password=", "hunter2-Staple-Battery-49", " attempt=2"},
	}
	for _, c := range secrets {
		for shift := 2; shift < len(c.secret)-2; shift += 3 {
			// The cap falls shift characters into the secret.
			filler := strings.Repeat("x", MaxErrorChars-len(c.before)-shift)
			e := filler + c.before + c.secret + c.after + strings.Repeat(" and more", 10)
			r := pipeline.Record{Line: 7, Fields: pipeline.FieldsOf(map[string]any{"event": "db.failed", "error": e})}
			out := newRecordWriter(testScrubber).record(r)
			if !strings.Contains(out, "more characters cut") {
				t.Fatalf("the error was not cut: %d bytes: %s", len(e), out[max(0, len(out)-300):])
			}
			for i := 0; i+8 <= len(c.secret); i++ {
				if w := c.secret[i : i+8]; strings.Contains(out, w) {
					t.Fatalf("cut %d into %q leaks %q:\n%s", shift, c.secret, w, out[len(out)-200:])
				}
			}
		}
	}
}
