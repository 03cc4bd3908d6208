package redact

import (
	"strings"
	"testing"
)

// Masking needs evidence (issue 32, point 5): gitleaks' rule for a
// provider, a key naming a made-up value, and the stand-ins documentation
// writes are evidence a value is no secret. Each case pairs what is kept
// with the secret beside it that must still be masked.

func mustKeep(t *testing.T, texts ...string) {
	t.Helper()
	for _, keep := range texts {
		if out := testRedactor.Scrub(keep); out != keep {
			t.Errorf("changed:\n in: %s\nout: %s", keep, out)
		}
	}
}

// A key naming a provider whose token format gitleaks gives: a value not
// in that format is not that provider's token; one in it is masked.
func TestProviderKeyFormat(t *testing.T) {
	g := newGen()
	mustKeep(t,
		"meraki_token = "+g.rnd(hexLower, 40)+"Q7", // Meraki keys are 40 hex digits
		"MERAKI_API_KEY: "+strings.ToUpper(g.rnd(hexLower, 20))+g.rnd(hexLower, 20),
		`telegram_bot_token = "`+g.rnd("0123456789", 9)+":A"+g.rnd("abcdefghijklmnopqrstuvwxyz0123456789", 12)+`"`,
	)
	meraki := g.rnd("abcdef", 4) + g.rnd(hexLower, 36)
	mustMask(t, "meraki_token = "+meraki, meraki, "")
	bot := g.rnd("0123456789", 10) + ":AA" + g.rnd(urlSafe, 33)
	mustMask(t, `telegram_bot_token = "`+bot+`"`, bot, "")
	// A provider's other credentials have no format in the catalogue: a
	// password or a refresh token named after Stripe is masked by its key.
	pw := g.rnd(alnum, 10)
	mustMask(t, "STRIPE_PW="+pw, pw, "password")
	rt := g.rnd(alnum, 24)
	mustMask(t, `{"stripeRefreshToken": "`+rt+`"}`, rt, "token")
}

// A provider prefix on a run not in the provider's format (a cut-short or
// made-up sk-ant- string) is no key; a real one is masked, also where the
// character after it would fail the rule's terminator (curl -u KEY:).
func TestProviderPrefixFormat(t *testing.T) {
	g := newGen()
	mustKeep(t,
		"see sk-ant-api03-"+g.rnd(alnum, 20)+" in the docs",
		"sntryu_"+g.rnd(hexLower, 63),
	)
	key := "sk-ant-api03-" + g.rnd(urlSafe, 93) + "AA"
	mustMask(t, "request failed using "+key, key, "")
	sk := "sk_live_" + g.rnd(alnum, 40)
	mustMask(t, "$ curl https://api.example.test/v1/charges -u "+sk+": -d amount=1", sk, "")
	user := "sntryu_" + g.rnd(hexLower, 64)
	mustMask(t, "SENTRY_AUTH_TOKEN="+user, user, "")
}

// A key whose name says its value is made up or an anti-forgery nonce.
func TestKeysNamingNoCredential(t *testing.T) {
	g := newGen()
	mustKeep(t,
		`fakeToken := "`+g.rnd("abcdefghijklmnopqrstuvwxyz0123456789", 16)+`"`,
		`nonMatchingSecret := "`+g.rnd("abcdefghijklmnopqrstuvwxyz0123456789", 16)+`"`,
		"dummy_password="+g.rnd(alnum, 12),
		"csrf-token="+g.rnd(b64, 64)+"==",
		`<input type="hidden" name="authenticity_token" value="`+g.rnd(urlSafe, 60)+`" />`,
	)
	pw := g.rnd(alnum, 12)
	mustMask(t, "wrong_password="+pw, pw, "password") // a mistyped password is near the real one
	tok := g.rnd(alnum, 24)
	mustMask(t, "session_token="+tok, tok, "")
}

// Stand-ins documentation and tools write where a secret goes.
func TestStandInValues(t *testing.T) {
	g := newGen()
	mustKeep(t,
		`curl -X GET --user "username:password" https://api.example.test/`,
		`curl --user "xxx:yyy"`,
		"secretKey: foo",
		"    - secretKey: api-key",
		"access_token=ACCESS_TOKEN",
		"client_secret=ab18Q~"+strings.Repeat("x", 34),
		`token = "`+strings.Repeat("x", 14)+".atlasv1."+strings.Repeat("x", 67)+`"`,
		"  db-password: ENC[AES256_GCM,data:"+g.rnd(b64, 12)+"=,iv:"+g.rnd(b64, 43)+"=,type:str]",
		"  secret: ops_"+g.rnd(alnum, 12)+"..[Redacted]",
		`"kms_key_id": "555ea4a3-d53a-4412-9c66-3a7cb667b0d6",`,
		"-----BEGIN PRIVATE KEY-----\nyour key here\n-----END PRIVATE KEY-----",
		"-----BEGIN OPENSSH PRIVATE KEY-----\n...\n-----END OPENSSH PRIVATE KEY-----",
	)
	_, body := g.pem("PRIVATE KEY", false)
	mustMask(t, "-----BEGIN PRIVATE KEY-----\n"+body[:40]+"\n-----END PRIVATE KEY-----", body[:40], "private-key")
	pw := g.rnd(alnum, 14)
	mustMask(t, "curl --user admin:"+pw+" https://api.example.test/", pw, "")
	sk := g.rnd(alnum, 24)
	mustMask(t, "secretKey: "+sk, sk, "")
	mustMask(t, "password: SuperSecret", "SuperSecret", "password") // a person's password, not a name
	mustMask(t, "DB_PASSWORD=MyPassword", "MyPassword", "")
}

// gitleaks' semi-generic rules whose keyword is case-sensitive
// ((?-i:ETSY|[Ee]tsy)) do not fire on the letters inside another word.
func TestCaseSensitiveKeyword(t *testing.T) {
	g := newGen()
	mustKeep(t, `SetSysctl = "`+g.rnd("abcdefghijklmnopqrstuvwxyz0123456789", 24)+`"`)
}
