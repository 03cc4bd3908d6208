package redact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// theLoopCommand is how the-loop itself recognises a control phrase.
var theLoopCommand = regexp.MustCompile(`(?i)[/@]?\bthe-loop\s+(start|stop|pause|resume|execute|contribute|cleanup|do)\b`)

func TestDefang(t *testing.T) {
	cases := []struct{ in, want string }{
		{"please the-loop start now", "please the-loop ‹defanged› start now"},
		{"/the-loop STOP", "/the-loop ‹defanged› STOP"},
		{"@The-Loop   resume\n", "@The-Loop ‹defanged›   resume\n"},
		{"the-loop\ndo it", "the-loop ‹defanged›\ndo it"},
		{"the-loop started fine; the-loop doctor", "the-loop started fine; the-loop doctor"},
		{"ship it now, Ship  It!", "ship ‹defanged› it now, Ship ‹defanged›  It!"},
		{"deploy now", "d‹defanged›eploy now"},
		// the-loop's shape: a marker at every space of a keyword.
		{"Loop Go Now!", "Loop ‹defanged› Go ‹defanged› Now!"},
		// Python's re.IGNORECASE takes U+0130/U+0131 for an i; Go's (?i) does not.
		{"the-loop contrİbute; the-loop CONTRıBUTE", "the-loop ‹defanged› contrİbute; the-loop ‹defanged› CONTRıBUTE"},
		{"lİve-it", "l‹defanged›İve-it"},
	}
	for _, c := range cases {
		got := Defang(c.in, []string{"ship it", "deploy", "x", "loop go now", "live-it"})
		if got != c.want {
			t.Errorf("Defang(%q) = %q, want %q", c.in, got, c.want)
		}
		if theLoopCommand.MatchString(got) {
			t.Errorf("Defang(%q) = %q still matches the-loop's command pattern", c.in, got)
		}
		if again := Defang(got, []string{"ship it", "deploy", "x", "loop go now", "live-it"}); again != got {
			t.Errorf("not idempotent: %q -> %q", got, again)
		}
	}
}

func TestFence(t *testing.T) {
	for _, s := range []string{"", "plain", "has ``` inside", "````four````", "ends with newline\n", "`"} {
		out := Fence(s)
		lines := strings.Split(out, "\n")
		fence := lines[0]
		if len(fence) < 3 || strings.Trim(fence, "`") != "" {
			t.Fatalf("Fence(%q) opens with %q", s, fence)
		}
		if !strings.Contains(out, s) {
			t.Errorf("Fence(%q) lost the content: %q", s, out)
		}
		if strings.Contains(s, fence) {
			t.Errorf("Fence(%q): content contains the fence %q", s, fence)
		}
		if !strings.HasSuffix(out, "\n"+fence+"\n") {
			t.Errorf("Fence(%q) = %q does not close with its fence", s, out)
		}
	}
}

func TestServeJSONLines(t *testing.T) {
	big := strings.Repeat("log line without secrets ", 10000) + "password=hunter2"
	var in bytes.Buffer
	for _, s := range []string{"password=hunter2", "no secret <here> & there", big, "line\nbreaks\tand \"quotes\""} {
		b, _ := json.Marshal(s)
		in.Write(b)
		in.WriteByte('\n')
	}
	var out bytes.Buffer
	if err := ServeJSONLines(&in, &out, testRedactor); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("want 4 output lines, got %d", len(lines))
	}
	var got []string
	for _, l := range lines {
		var s string
		if err := json.Unmarshal([]byte(l), &s); err != nil {
			t.Fatalf("output line %q is not a JSON string: %v", l, err)
		}
		got = append(got, s)
	}
	if got[0] != "password=<redacted:password>" {
		t.Errorf("line 1: %q", got[0])
	}
	if got[1] != "no secret <here> & there" || !strings.Contains(lines[1], "<here> &") {
		t.Errorf("line 2 should pass unchanged and unescaped: %s", lines[1])
	}
	if !strings.HasSuffix(got[2], "password=<redacted:password>") || len(got[2]) < len(big) {
		t.Errorf("long line not scrubbed whole: ...%q", got[2][len(got[2])-40:])
	}
	if got[3] != "line\nbreaks\tand \"quotes\"" {
		t.Errorf("line 4: %q", got[3])
	}
}

func TestServeJSONLinesRejectsNonStrings(t *testing.T) {
	for _, bad := range []string{"{\"a\":1}", "null", "", "\"unterminated", "42"} {
		in := strings.NewReader("\"ok\"\n" + bad + "\n\"after\"\n")
		var out bytes.Buffer
		err := ServeJSONLines(in, &out, testRedactor)
		if err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("input line %q: want an error naming line 2, got %v", bad, err)
		}
		if out.String() != "\"ok\"\n" {
			t.Errorf("lines before the bad one should be written, got %q", out.String())
		}
	}
}

func TestServeJSONLinesLastLineWithoutNewline(t *testing.T) {
	var out bytes.Buffer
	if err := ServeJSONLines(strings.NewReader(`"a@example.com"`), &out, testRedactor); err != nil {
		t.Fatal(err)
	}
	if out.String() != "\"<redacted:email>\"\n" {
		t.Errorf("got %q", out.String())
	}
}

var _ io.Reader = (*bytes.Buffer)(nil)

// --- fuzzing ---

func scrubSeeds() []string {
	g := newGen()
	pemBlock, _ := g.pem("RSA PRIVATE KEY", true)
	return []string{
		"", "password=hunter2", "Authorization: Bearer " + g.rnd(alnum, 30),
		"postgres://u:" + g.rnd(alnum, 12) + "@h/db", "ghp_" + g.rnd(alnum, 36), pemBlock,
		"-----BEGIN RSA PRIVATE KEY-----", "a@b.co", "10.1.2.3:80", "/home/bob/x",
		"<redacted:token>", "<redacted", "password=<redacted:password>x", "Cookie: a=b; c=" + g.rnd(alnum, 20),
		"-p -u x:y", "key:" + g.rnd(alnum, 20), "\\\"password\\\": \\\"x\\\"", "eyJ.eyJ.", "SG..",
		"alice buildbox-7 /home/alice", "envtok_9Zq3XbLm7Tr2Wp4Kd8Ny", "fd00::1 fdfd:fdfd::",
		// The secret classes' shapes, so the fuzzer starts from each rule.
		"<password>p&amp;ss1</password>", `<add key="ClearTextPassword" value="x7!k" />`,
		"- name: DB_PASSWORD\n  value: hunter2", "map[Authorization:[Basic dXNlcjpwYXNz] pwd::a/b]",
		`http.Header{"Authorization":[]string{"Bearer abc"}}`, "{Host:h Password:;x,y Timeout:3s}",
		"the password is hunter2.", "login with passphrase a=b&c", "token: abc,def, user: x",
		"mysql -p'pa ss' db", "redis-cli -a x9 --pass y8", "curl -u a:b:c", "http -a u:p x", "mc alias set s http://h K S",
		"keytool -storepass abc1 -keypass", "psql \"password=a;b\"", "postgres://u:p#a@ss/w@h.example:5432/d",
		"redis://:@h", "x://a@b@c@", "jdbc:oracle:thin:u/p@h:1521/s", "sqlplus u/p", "machine h\nlogin u\npassword p",
		"AKIA" + g.rnd(upperNum, 16) + ":" + g.rnd(b64, 40), "AC" + g.rnd(hexLower, 32) + " " + g.rnd(hexLower, 32),
		"Basic dXNlcjpwYXNz", "sig=ab%2Bcd%3D", "-----END RSA PRIVATE KEY-----", "QUJD\nREVG\n-----END PRIVATE KEY-----x",
		"-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: 1\n\nQUJD", "-----BEGIN EC PRIVATE KEY----------END EC PRIVATE KEY-----",
	}
}

func FuzzScrub(f *testing.F) {
	for _, s := range scrubSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		once := testRedactor.Scrub(s)
		if twice := testRedactor.Scrub(once); twice != once {
			t.Fatalf("not idempotent:\n   in: %q\n once: %q\ntwice: %q", s, once, twice)
		}
		if len(once) > MaxGrowth*len(s) {
			t.Fatalf("output %d bytes for %d input bytes", len(once), len(s))
		}
	})
}

func FuzzDefang(f *testing.F) {
	for _, s := range []string{"the-loop start", "@the-loop\tDO", "ship it", "the-loop ‹defanged› start", "d‹defanged›eploy", "deploydeploy"} {
		f.Add(s, "ship it")
		f.Add(s, "deploy")
	}
	f.Fuzz(func(t *testing.T, s, keyword string) {
		kws := []string{keyword}
		once := Defang(s, kws)
		if twice := Defang(once, kws); twice != once {
			t.Fatalf("not idempotent:\n   in: %q\n once: %q\ntwice: %q", s, once, twice)
		}
		if m := theLoopCommand.FindString(once); m != "" && !strings.Contains(s, DefangMarker) {
			t.Fatalf("control phrase %q survives in %q", m, once)
		}
		if theLoopParses(once, keyword) && !strings.Contains(s, DefangMarker) {
			t.Fatalf("the-loop still finds keyword %q in %q", keyword, once)
		}
	})
}

// theLoopParses is the-loop's control.parse_command for one configured
// keyword (stripped, as ControlConfig reads it): the literal keyword,
// case-insensitive as Python's re (an i also matches U+0130/U+0131), with
// no \w, ':' or '-' on either side. Keywords no defang can break are
// skipped: one character, or text of the marker itself ("defang").
func theLoopParses(text, keyword string) bool {
	kw := strings.TrimSpace(keyword)
	if len([]rune(kw)) < 2 || strings.Contains(strings.ToLower(DefangMarker), strings.ToLower(kw)) || !utf8.ValidString(kw) {
		return false
	}
	var pat strings.Builder
	for _, r := range kw {
		switch r {
		case 'i', 'I', 'İ', 'ı':
			pat.WriteString("[iİı]")
		default:
			pat.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	re := regexp.MustCompile("(?i)" + pat.String())
	word := func(r rune) bool {
		return r == '_' || r == ':' || r == '-' || unicode.IsLetter(r) || unicode.IsNumber(r)
	}
	for pos := 0; pos <= len(text); {
		m := re.FindStringIndex(text[pos:])
		if m == nil {
			return false
		}
		start, end := pos+m[0], pos+m[1]
		before, _ := utf8.DecodeLastRuneInString(text[:start])
		after, _ := utf8.DecodeRuneInString(text[end:])
		if (start == 0 || !word(before)) && (end == len(text) || !word(after)) {
			return true
		}
		_, size := utf8.DecodeRuneInString(text[start:])
		pos = start + max(size, 1)
	}
	return false
}

func FuzzFence(f *testing.F) {
	for _, s := range []string{"", "```", "a````b", "`x`\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Fence(s)
		fence, _, _ := strings.Cut(out, "\n")
		body := strings.TrimPrefix(out, fence+"\n")
		if !strings.HasPrefix(body, s) {
			t.Fatalf("content not verbatim after the opening fence")
		}
		if strings.Contains(s, fence) {
			t.Fatalf("content %q can close fence %q", s, fence)
		}
		if !strings.HasSuffix(out, "\n"+fence+"\n") {
			t.Fatalf("not closed: %q", out)
		}
	})
}

// --- speed ---

func benchText() string {
	g := newGen()
	var b strings.Builder
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, "2025-11-%02dT10:58:46.333Z ERROR [ledger-api] open internal/sync/runner.go:%d: permission denied (attempt %d/5)\n", i%28+1, i*7, i%5)
		fmt.Fprintf(&b, "goroutine 1 [running]:\ngithub.com/acme/ledger/internal/queue.(*Pool).flush(...)\n\tinternal/queue/retry.go:136 +0x1d4\n")
		fmt.Fprintf(&b, "request_id=%s-%s-4%s-a%s-%s upstream returned 503 Service Unavailable after 4m5s\n", g.rnd(hexLower, 8), g.rnd(hexLower, 4), g.rnd(hexLower, 3), g.rnd(hexLower, 3), g.rnd(hexLower, 12))
		fmt.Fprintf(&b, "pulled ghcr.io/acme/billing-sync@sha256:%s\ncommit %s\n", g.rnd(hexLower, 64), g.rnd(hexLower, 40))
		fmt.Fprintf(&b, "config: auth_mode=oidc max_tokens=4096 token_type=bearer cache_key=invoice:%d:v2\n", i)
		switch i % 8 {
		case 0:
			fmt.Fprintf(&b, "> Authorization: Bearer %s\n", g.rnd(alnum, 40))
		case 1:
			fmt.Fprintf(&b, "panic: failed to connect to postgresql://api:%s@10.2.3.4:5432/billing\n", g.rnd(alnum, 20))
		case 2:
			fmt.Fprintf(&b, "  payload={\"username\": \"ro\", \"db_password\": \"%s\"}\n", g.rnd(alnum, 16))
		case 3:
			fmt.Fprintf(&b, "invite failed for lena.petrov@example.com; open /home/nkarimi/src/x.go\n")
		}
	}
	return b.String()
}

func BenchmarkScrub(b *testing.B) {
	text := benchText()
	gitleaks() // compiled once per process (timed in TestGitleaksLoadCost), not per text
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		testRedactor.Scrub(text)
	}
}

// BenchmarkScrubShapes times texts shaped unlike benchText, side by side:
// a speed won on one shape must not be lost on another.
func BenchmarkScrubShapes(b *testing.B) {
	g := newGen()
	var trace, jsonLog, prose, dense strings.Builder
	for i := 0; i < 60; i++ {
		fmt.Fprintf(&trace, "  File \"/srv/app/src/svc/handlers/h%d.py\", line %d, in handle\n    return self.client.get(url, timeout=%d)\n", i, i*11, i%30)
		fmt.Fprintf(&trace, "\tat com.acme.billing.Invoice$Builder.build(Invoice.java:%d)\n", 100+i)
		fmt.Fprintf(&jsonLog, `{"ts":"2026-11-%02dT10:00:%02d.123Z","level":"error","msg":"request failed","status":%d,"path":"/v1/orders/%d","trace_id":"%s"}`+"\n", i%28+1, i%60, 500+i%4, i, g.rnd(hexLower, 32))
		fmt.Fprintf(&prose, "The worker for queue %d timed out after %ds while the upstream was slow; retrying with backoff since the error looked transient. ", i, i%90)
		fmt.Fprintf(&dense, "mysql -u app -p%s -h db%d redis-cli -a %s curl -u u:%s https://x%d.example.com/?token=%s ", g.rnd(alnum, 10), i, g.rnd(alnum, 12), g.rnd(alnum, 8), i, g.rnd(alnum, 20))
	}
	gitleaks()
	for _, c := range []struct{ name, text string }{
		{"traces", trace.String()}, {"json-log", jsonLog.String()}, {"prose", prose.String()}, {"dense-secrets", dense.String()},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.text)))
			for b.Loop() {
				testRedactor.Scrub(c.text)
			}
		})
	}
}
