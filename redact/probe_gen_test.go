package redact

import (
	"fmt"
	"strings"
	"testing"
)

// Probes of issue 13 found after the rewrite: each test generates the
// shapes a principle covers, not the probe's literal string.

// encodedB64 returns base64 of n random bytes, percent-encoded as a URL
// carries it, with escapes in random case; it always holds a + or /.
func (g *sgen) encodedB64(n int) (raw, enc string) {
	for !strings.ContainsAny(raw, "+/") {
		raw = g.chars(b64, n)
	}
	if g.r.Intn(3) > 0 {
		raw += g.pick("=", "==")
	}
	esc := map[byte]string{'+': "%2B", '/': "%2F", '=': "%3D"}
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		if e, ok := esc[raw[i]]; ok {
			if g.r.Intn(2) == 0 {
				e = strings.ToLower(e)
			}
			b.WriteString(e)
		} else {
			b.WriteByte(raw[i])
		}
	}
	return raw, b.String()
}

// Percent-encoded base64 after a sig/signature/key/token-like word is an
// encoded binary credential wherever the pair stands: first in the text,
// after a space, a quote or a bracket, not only after ? or & in a URL.
func TestGeneratedEncodedSignatures(t *testing.T) {
	g := newSgen(131)
	for i := 0; i < genCases; i++ {
		raw, enc := g.encodedB64(27 + g.r.Intn(40))
		key := g.pick("sig", "signature", "Signature", "SIG", "X-Goog-Signature", "x-amz-signature", "sas_token", "access_token", "api_key", "oauth_signature", "hmac_sig", "token", "auth", "AccountKey")
		pair := key + g.pick("=", ": ", "=", ":") + enc
		after := g.pick("", "&se=2025-12-01", "&se=2026-0"+fmt.Sprint(1+g.r.Intn(9))+"-01T00%3A00Z&sp=r", ";sv=2022-11-02", " expired", ".", "\n"+g.logLine())
		before := g.pick("", " ", "\t", "(", "query: ", "signed with ", "GET /"+g.word(5)+"?sv=2022-11-02&", "url=https://"+g.word(6)+".blob.core.windows.net/c/x?")
		text := before + pair + after
		if g.r.Intn(3) == 0 {
			text = g.wrap(text)
		}
		out := testRedactor.Scrub(text)
		// The secret as written and as decoded: no 8-byte piece survives.
		for _, sec := range []string{enc, strings.TrimRight(raw, "=")} {
			if w := leaked(text, out, sec); w != "" {
				t.Errorf("encoded signature %q survives\n in: %s\nout: %s", w, text, out)
				break
			}
		}
		if strings.Contains(after, "se=") && !strings.Contains(out, "se=") {
			t.Errorf("the parameter after the signature was eaten\n in: %s\nout: %s", text, out)
		}
	}
}

// Percent-encoded text that is not base64 stays: paths (with %2F only, in
// words and dates), redirect URLs, form text.
func TestEncodedLookalikesSurvive(t *testing.T) {
	g := newSgen(132)
	for i := 0; i < genCases; i++ {
		text := g.pick(
			fmt.Sprintf("key=%s%%2F%d%%2F%02d%%2F%s.log&x=1", g.word(5), 2020+g.r.Intn(6), 1+g.r.Intn(12), g.word(4)),
			fmt.Sprintf("prefix=%s%%2F%d%%2F", strings.Title(g.word(6)), 2020+g.r.Intn(6)),
			fmt.Sprintf("redirect_uri=https%%3A%%2F%%2F%s.example.com%%2Fcallback&state=%s", g.word(5), g.word(8)),
			fmt.Sprintf("key=%s%%20%s", g.word(5), g.word(6)),
			fmt.Sprintf("token_url=%%2Fv1%%2Foauth%%2Ftoken sig_alg=HS256 n=%d", g.r.Intn(99)),
		)
		if out := testRedactor.Scrub(text); out != text {
			t.Errorf("encoded look-alike changed:\n in: %s\nout: %s", text, out)
		}
	}
}

// A value that is itself a secret's name (ClearTextPassword, DB_PASSWORD,
// apiKey) names the secret, it is not one: it is kept, while the value
// beside it is masked.
func TestGeneratedSecretNamesAsValues(t *testing.T) {
	g := newSgen(133)
	for i := 0; i < genCases; i++ {
		var k string
		for {
			k = g.keyName()
			var buf [8]string
			if len(splitWords(k, buf[:0])) >= 2 {
				break
			}
		}
		k = g.pick(k, "ClearText"+strings.ToUpper(k[:1])+k[1:])
		pw := g.password(` '"<>&\`)
		var text string
		switch g.r.Intn(6) {
		case 0:
			text = fmt.Sprintf(`<add key="%s" value="%s" />`, k, pw)
		case 1:
			text = fmt.Sprintf(`{"key": "%s", "value": "%s"}`, k, pw)
		case 2:
			text = fmt.Sprintf("env:\n  - key: %s\n    value: %s", k, pw)
		case 3:
			text = fmt.Sprintf("valueFrom:\n  secretKeyRef:\n    name: %s\n    key: %s", g.word(6), k)
			pw = ""
		case 4:
			text = fmt.Sprintf(`lookup key=%s in %s: not found`, k, g.pick("vault", "ssm", "the keyring"))
			pw = ""
		default:
			text = fmt.Sprintf(`missing setting: key "%s" has no value`, k)
			pw = ""
		}
		text = g.wrap(text)
		out := testRedactor.Scrub(text)
		if !strings.Contains(out, k) {
			t.Errorf("the secret's name %q was masked\n in: %s\nout: %s", k, text, out)
		}
		if w := leaked(text, out, pw); w != "" {
			t.Errorf("the value beside %q survives: %q\n in: %s\nout: %s", k, w, text, out)
		}
	}
}
