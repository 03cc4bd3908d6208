package redacttest

import "testing"

// The renderer judges what it parses, not what the patterns see: live
// outside code, inert inside it.
func TestRenderedFindsWhatGitHubWouldRender(t *testing.T) {
	for _, c := range []struct{ in, kind string }{
		{"see [the log](https://attacker.example/x)", "rendered link"},
		{"![p](https://attacker.example/q.png)", "rendered image"},
		{"visit https://attacker.example now", "rendered autolink"},
		{"a <img src=x> b", "rendered html"},
		{"<details>\nhidden\n</details>", "rendered html block"},
		{"`[the log](https://attacker.example/x)`", ""},
		{"```\n<img src=x> ![p](q)\n```", ""},
		{"plain words, a path /var/log/x and a number 42", ""},
	} {
		if kind, m := rendered(c.in); kind != c.kind {
			t.Errorf("rendered(%q) = %q %q, want %q", c.in, kind, m, c.kind)
		}
	}
}
