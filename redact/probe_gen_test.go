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

// humanPassword returns a letters-only password as people choose them: a
// common word, made-up syllables, either capitalised, or a diceware
// passphrase of two to four words joined by '-'.
func (g *sgen) humanPassword(minParts int) string {
	common := []string{"sunshine", "dragonfly", "monkey", "princess", "football", "shadow", "whatever",
		"letmein", "qwerty", "trustno", "iloveyou", "starwars", "butterfly", "cheese", "batman", "hunter",
		"summer", "winter", "mustang", "tigger", "ginger", "pepper", "ranger", "buster", "jellybean", "firefly"}
	word := func() string {
		w := g.pick(g.pick(common...), g.word(4+g.r.Intn(6)))
		if g.r.Intn(4) == 0 {
			w = strings.ToUpper(w[:1]) + w[1:]
		}
		return w
	}
	n := minParts
	if n <= 1 && g.r.Intn(3) > 0 {
		return word()
	}
	n = max(n, 2) + g.r.Intn(3)
	parts := make([]string, n)
	for i := range parts {
		parts[i] = strings.ToLower(word())
	}
	return strings.Join(parts, "-")
}

// After a password word in a prose form, one token is the password, also
// when it is only letters: "the password is sunshine", "with password
// dragonfly", "passphrase correct-horse-battery".
func TestGeneratedProsePasswords(t *testing.T) {
	g := newSgen(134)
	for i := 0; i < genCases; i++ {
		key := g.pick("password", "Password", "passwd", "passphrase", "pwd", "passcode", "PASSWORD")
		var pw, text string
		switch g.r.Intn(3) {
		case 0:
			pw = g.humanPassword(1)
			text = fmt.Sprintf("%s %s %s %s", g.pick("the", "The", "my", "your", "note: the", "the new", "its", "admin"), key, g.pick("is", "was", "is set to", "is now", "is:", "was set to"), pw)
		case 1:
			pw = g.humanPassword(1)
			text = fmt.Sprintf("%s %s %s %s", g.pick("login", "connecting", "retrying", "ssh "+g.word(5)+"@db", "user "+g.word(5)+" and", "mounted"), g.pick("with", "using", "via", "by"), key, pw)
		default:
			pw = g.humanPassword(3)
			text = fmt.Sprintf("%s%s %s", g.pick("", "set ", "new ", "generated "), g.pick("passphrase", "password", "Passphrase"), pw)
		}
		text += g.pick("", ".", ",  retrying", " (attempt 2)", "; giving up", "\n"+g.logLine())
		checkPlanted(t, testRedactor, planted{"1", "prose-letters", g.wrap(text), pw})
	}
}

// Sentences about a password keep their words: the token after the
// password word describes its state or kind (a function word, a state, a
// word with a derivational suffix), and a bare "password X" is a noun
// compound. The words are drawn beyond the rule's own list.
func TestGeneratedProseAboutPasswordsSurvives(t *testing.T) {
	g := newSgen(135)
	states := []string{"incorrect", "wrong", "reset", "required", "too short", "not set", "empty", "invalid",
		"expired", "rotated", "accepted", "rejected", "synchronized", "encrypted", "hashed", "stored in vault",
		"case-sensitive", "auto-generated", "write-only", "missing", "different", "unchanged", "forgotten",
		"a required field", "at least 12 characters", "also used for sudo", "correct", "shown once",
		"longer than 72 bytes", "the same as the username", "being rotated", "unavailable", "irreversible",
		"dangerous to log", "useless now", "harmful", "weak", "stale", "incorrectly encoded", "currently locked"}
	kinds := []string{"authentication", "auth", "prompt", "login", "grant", "hashing", "requirements",
		"expiration", "confirmation", "validation", "rotation", "field", "policy", "manager", "reset",
		"fields", "attempts", "settings", "from stdin", "and username", "or key", "protection"}
	for i := 0; i < genCases; i++ {
		key := g.pick("password", "Password", "passphrase", "passwd", "pwd")
		var text string
		switch g.r.Intn(4) {
		case 0:
			text = fmt.Sprintf("%s %s %s %s", g.pick("the", "The", "your", "error: the", "if the"), key, g.pick("is", "was", "is now"), g.pick(states...))
		case 1:
			text = fmt.Sprintf("%s %s %s %s", g.pick("retrying", "login", "connect", "signing in", "failed"), g.pick("with", "using", "via", "by"), key, g.pick(kinds...))
		case 2:
			text = fmt.Sprintf("%s %s %s", g.pick("the", "reading", "FATAL:", "new"), key, g.pick(kinds...)+g.pick("", " failed", " is enabled", " changed"))
		default:
			text = fmt.Sprintf("%s %s %s", key, g.pick("is", "was"), g.pick(states...))
		}
		text += g.pick("", ".", " for user id 42", "; retry in 5s")
		if out := testRedactor.Scrub(text); out != text {
			t.Errorf("prose about a password changed:\n in: %s\nout: %s", text, out)
		}
	}
}

// The probes themselves, both ways.
func TestProsePasswordProbes(t *testing.T) {
	for _, text := range []string{"with password sunshine", "the passphrase is correct-horse-battery",
		"passphrase correct-horse-battery", "my password was dragonfly"} {
		if out := testRedactor.Scrub(text); !strings.Contains(out, "<redacted:password>") {
			t.Errorf("letters-only password kept: %q", out)
		}
	}
	for _, text := range []string{"the password is incorrect", "the password was reset", "password is required",
		"the password is too short", "password authentication failed", "retrying with password authentication",
		"login with password auth", "with password prompt", "the passphrase is wrong", "the password is not set",
		"the password has expired", "password is empty", "password was changed", "reading password from stdin",
		"--password-stdin", "password policy", "password manager", "the token is expired", "/etc/hosts is corrupt"} {
		if out := testRedactor.Scrub(text); out != text {
			t.Errorf("ordinary text changed: %q -> %q", text, out)
		}
	}
}
