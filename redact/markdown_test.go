package redact

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/the-loop/the-loop-diagnose/redact/redacttest"
)

func assertInert(t *testing.T, in, out string) {
	t.Helper()
	if kind, m := redacttest.LiveConstruct(out); kind != "" {
		t.Fatalf("%s %q survives in %q (from %q)", kind, m, out, in)
	}
}

func TestNeutralizeAttacks(t *testing.T) {
	attacks := []string{
		"ping @octocat and @acme-corp/security-team now",
		"see #12, acme/private#7 and GH-431; Fixes #1, closes acme/x#2",
		"![pixel](https://attacker.example/p.png) and <img src=https://a.example/x.png>",
		"<details><summary>ok</summary>hidden</details>",
		"<!-- the-loop-diagnose fingerprint:v2:deadbeef -->",
		"[click here](https://github.com/acme/app/issues/9) or [ref][1]\n\n[1]: https://evil.example/",
		"<https://evil.example/> www.evil.example http://x.example/a?b=c",
		"&#64;octocat &commat;octocat &#x40;octocat &#35;12",
		"\\@octocat \\#12 \\<img src=x>",
		"`@inside` a span then ` @after`",
		"```\n@in-fence #3 <b>x</b>\n```",
		"a`b\nc` @split `d`",
		"mail me: alice@example.com mailto:bob@example.org",
		"[^note]: hidden footnote text",
		"@\u200doctocat @\u2060user #\u200b12 <\u200bimg>", // pre-broken with other invisibles
		"right-to-left \u202etxt.exe\u202c and \u2066isolate\u2069",
		"<?php echo 1; ?> </script>",
	}
	for _, in := range attacks {
		out := Neutralize(in)
		assertInert(t, in, out)
		if again := Neutralize(out); again != out {
			t.Errorf("not idempotent for %q:\n once %q\ntwice %q", in, out, again)
		}
	}
}

func TestNeutralizeKeepsOrdinaryProse(t *testing.T) {
	prose := []string{
		"The worker failed after 3 retries: connection refused (errno 111).",
		"Root cause: the cache key `invoice:42:v2` expires before the job reads it.",
		"panic: runtime error: index out of range [5] with length 3",
		"File \"src/app/handlers/auth.py\", line 238, in login",
		"Suggested fix: check `len(items) > 0` before indexing; see internal/queue/runner.go:404.",
		"## Summary\n\n- first\n- second\n\n| a | b |\n|---|---|\n| 1 | 2 |",
		"2025-11-04T15:48:28.483Z ERROR 50% of requests took >2s & some <1s",
		"a - b: c; (d) [e] {f} 'g' \"h\" ~i~ *j* _k_",
	}
	for _, in := range prose {
		if out := Neutralize(in); out != in {
			t.Errorf("ordinary prose changed:\n in %q\nout %q", in, out)
		}
	}
}

func TestNormalizeSpacesAndFormatCharacters(t *testing.T) {
	for in, want := range map[string]string{
		"the-loop\u00a0start":         "the-loop start",
		"the-loop\u3000start":         "the-loop start",
		"the-loop\vstart":             "the-loop start",
		"the-loop\fstart":             "the-loop start",
		"the-loop\u2028start":         "the-loop start",
		"a\u200bb\u200dc\ufeffd":      "abcd",
		"x\r\ny\rz":                   "x\ny\nz",
		"bad \xff byte":               "bad \ufffd byte",
		"esc \x1b[31mred\x1b[0m":      "esc [31mred[0m",
		"tab\tand\nnewline stay":      "tab\tand\nnewline stay",
		"\u202eevil\u202c and \u00ad": "evil and ",
	} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDefangAfterUnicodeSpaces(t *testing.T) {
	for _, sp := range []string{"\u00a0", "\u3000", "\v", "\u2009", "\u202f", " \u200b"} {
		in := "please the-loop" + sp + "start now"
		out := Defang(in, nil)
		if theLoopCommand.MatchString(strings.Join(strings.Fields(out), " ")) {
			t.Errorf("separator %U: %q stays live once whitespace is folded", []rune(sp)[0], out)
		}
	}
}

func TestPublishScrubsDefangsAndNeutralises(t *testing.T) {
	in := "token ghp_" + strings.Repeat("A1b2", 9) + " for @ops; the-loop\u00a0start; ![x](https://e.example/p.png)"
	out := testRedactor.Publish(in, RecordIdentity{}, nil)
	if strings.Contains(out, "ghp_A1b2") {
		t.Fatalf("secret survives: %q", out)
	}
	if !strings.Contains(out, DefangMarker) {
		t.Fatalf("control phrase not defanged: %q", out)
	}
	assertInert(t, in, out)
	if again := testRedactor.Publish(out, RecordIdentity{}, nil); again != out {
		t.Fatalf("Publish not idempotent:\n once %q\ntwice %q", out, again)
	}
}

func TestValueNeverCopiesStructuresRaw(t *testing.T) {
	var v any
	if err := json.Unmarshal([]byte(`{"dsn":"postgres://app:s3cretpw@db.internal/x","token":"ghp_`+strings.Repeat("Z9y8", 9)+`"}`), &v); err != nil {
		t.Fatal(err)
	}
	out, ok := testRedactor.Value(v, RecordIdentity{}).(string)
	if !ok {
		t.Fatalf("an object is shown as its scrubbed text, got %T", testRedactor.Value(v, RecordIdentity{}))
	}
	if strings.Contains(out, "s3cretpw") || strings.Contains(out, "Z9y8Z9y8") {
		t.Fatalf("secret in an object value survives: %q", out)
	}
	arr := []any{"Bearer " + strings.Repeat("k", 30), 3.0}
	if s := fmt.Sprint(testRedactor.Value(arr, RecordIdentity{})); strings.Contains(s, strings.Repeat("k", 30)) {
		t.Fatalf("secret in an array survives: %q", s)
	}
	for _, keep := range []any{3.0, true, false, nil, json.Number("12")} {
		if got := testRedactor.Value(keep, RecordIdentity{}); got != keep {
			t.Errorf("Value(%v) = %v, want it verbatim", keep, got)
		}
	}
}

func TestIsName(t *testing.T) {
	for _, ok := range []string{"agent.gave_up", "poll", "github:issues", "src/app-x", "v1.2.3"} {
		if !IsName(ok) {
			t.Errorf("IsName(%q) = false", ok)
		}
	}
	for _, bad := range []string{"", "a b", "x`y", "a<b", "@user", "#12", strings.Repeat("a", MaxNameLen+1), "é"} {
		if IsName(bad) {
			t.Errorf("IsName(%q) = true", bad)
		}
	}
}

// attackText builds varied hostile prose from pieces, so the fuzz seeds
// and the generator test are not one fixed list.
func attackText(r *rand.Rand) string {
	pieces := []string{
		"@", "@org/team", "#", "12", "GH-", "owner/repo", "![", "](", "[", "]", "]:", "(", ")",
		"<", ">", "img", "/details", "!--", "-->", "&", "#64;", "commat;", "https", "://", "www", ".",
		"`", "```", "~~~", "\n", " ", "\u00a0", "\u200b", "\u200d", "\u202e", "\v", "the-loop", "start",
		"x", "Fixes", "closes", "mailto:", "a", "\\",
	}
	var b strings.Builder
	for n := 2 + r.IntN(14); n > 0; n-- {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

func TestNeutralizeGeneratedAttacks(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for range 20000 {
		in := attackText(r)
		out := Neutralize(in)
		assertInert(t, in, out)
		if again := Neutralize(out); again != out {
			t.Fatalf("not idempotent for %q", in)
		}
		if strings.ReplaceAll(out, Joiner, "") != strings.ReplaceAll(Normalize(in), Joiner, "") {
			t.Fatalf("changed more than invisible joiners: %q -> %q", in, out)
		}
	}
}

func FuzzNeutralize(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 40 {
		f.Add(attackText(r))
	}
	f.Add("plain prose with no markup at all.")
	f.Fuzz(func(t *testing.T, s string) {
		out := Neutralize(s)
		assertInert(t, s, out)
		if again := Neutralize(out); again != out {
			t.Fatalf("not idempotent:\n   in %q\n once %q\ntwice %q", s, out, again)
		}
		// Readability: removing the joiners gives the normalised input back.
		if strings.ReplaceAll(out, Joiner, "") != Normalize(s) {
			t.Fatalf("changed more than invisible joiners: %q -> %q", s, out)
		}
	})
}

// FuzzPublish: the composition every piece of prose passes through leaves
// nothing live and is stable when applied again.
func FuzzPublish(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 30 {
		f.Add(attackText(r) + " password=hunter2 ghp_" + strings.Repeat("A1b2", 9))
	}
	f.Fuzz(func(t *testing.T, s string) {
		once := testRedactor.Publish(s, RecordIdentity{}, []string{"ship it"})
		assertInert(t, s, once)
		if twice := testRedactor.Publish(once, RecordIdentity{}, []string{"ship it"}); twice != once {
			t.Fatalf("not idempotent:\n   in %q\n once %q\ntwice %q", s, once, twice)
		}
	})
}
