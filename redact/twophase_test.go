package redact

import (
	"strings"
	"testing"
	"time"
)

// Issue 32: every detector reads the original text; a mask one detector
// writes cannot hide a secret from another.
func TestTwoPhaseURLCredentials(t *testing.T) {
	g := newGen()
	for _, c := range []struct{ name, text, secret string }{
		{"internal host then prose colon", "dial redis://svc_cache:%s@kv.internal:6380: WRONGPASS invalid", ""},
		{"private address host", "connect postgres://billing:%s@10.20.30.40:5432/ledger failed", ""},
		{"seed list", "mongodb://ops:%s@db-a.replset:27017,db-b.replset:27017/app?replicaSet=r1", ""},
		{"bare name then period", "retrying amqp://worker:%s@rabbit.", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			secret := g.rnd(alnum, 14)
			mustMask(t, strings.Replace(c.text, "%s", secret, 1), secret, "")
		})
	}
}

// A value found secret once is masked where it recurs, in any context.
func TestSecretMaskedWhereItRecurs(t *testing.T) {
	g := newGen()
	secret := g.rnd(alnum, 18)
	text := "api_token = '" + secret + "'\nretry with " + secret + " failed; last value " + secret
	out := testRedactor.Scrub(text)
	if strings.Contains(out, secret) {
		t.Fatalf("recurring secret survived:\n%s", out)
	}
	if n := strings.Count(out, "<redacted:"); n != 3 {
		t.Errorf("want 3 masks, got %d:\n%s", n, out)
	}
}

// Issue 32 point 3: a secret-ish key followed by any assignment syntax.
func TestKeyContextAnySyntax(t *testing.T) {
	g := newGen()
	for _, form := range []string{
		"DEPLOY_TOKEN ?= %s",
		"SIGNING_SECRET ::= %s",
		"REGISTRY_PASSWORD :::= %s",
		"$webhookToken .= \"%s\";",
		"auth_token <- \"%s\"",
		"client_secret - '%s'",
		"var apiToken string = \"%s\"",
		"val serviceToken: String = \"%s\"",
		"<deployToken>\n    %s\n</deployToken>",
		"<smtpPassword>%s</smtpPassword>",
		`<server password="%s"/>`,
		"db_password => '%s',",
	} {
		secret := g.rnd(alnum, 6) + "9" + g.rnd(alnum, 13)
		mustMask(t, strings.Replace(form, "%s", secret, 1), secret, "")
	}
	// A dash after a secret word in prose is no assignment.
	for _, keep := range []string{"password - reset link sent to the user", "see token - usage docs"} {
		if out := testRedactor.Scrub(keep); out != keep {
			t.Errorf("prose changed:\n in: %s\nout: %s", keep, out)
		}
	}
}

// Issue 32 point 5: a long mixed-case run alone is no evidence.
func TestNoMaskWithoutEvidence(t *testing.T) {
	g := newGen()
	for _, keep := range []string{
		"see https://docs.example.org/document/d/" + g.rnd(alnum, 44) + "/edit for the runbook",
		"-[HKHealthStore hf_requiredCharacteristicTypesForDisplayMetadata:] raised",
		"request failed using " + g.rnd(alnum, 40) + " as the document id",
		"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + g.rnd(alnum, 43) + " deploy@ci",
	} {
		if out := testRedactor.Scrub(keep); out != keep {
			t.Errorf("text without a secret changed:\n in: %s\nout: %s", keep, out)
		}
	}
}

// gitleaks' catalogue masks provider credentials by its rules and keeps
// what its allow-lists excuse (placeholders, documented examples).
func TestGitleaksCatalogue(t *testing.T) {
	g := newGen()
	for _, c := range []struct{ text, secret, label string }{
		{"deploying with %s now", "glpat-" + g.rnd(alnum, 20), "gitlab-pat"},
		{"ran the job as %s today", "ghp_" + g.rnd(alnum, 36), "github-pat"},
		{"pasted %s in the chat", "xoxb-" + g.rnd("0123456789", 11) + "-" + g.rnd("0123456789", 12) + "-" + g.rnd(alnum, 24), "slack-bot-token"},
	} {
		mustMask(t, strings.Replace(c.text, "%s", c.secret, 1), c.secret, c.label)
	}
	for _, keep := range []string{
		"aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
		"ran the job as ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx today",
		"curl --user \"$DEPLOY_USER:$DEPLOY_PASSWORD\" https://example.org",
	} {
		if out := testRedactor.Scrub(keep); out != keep {
			t.Errorf("placeholder changed:\n in: %s\nout: %s", keep, out)
		}
	}
}

// A value written to be replaced is kept after any key; a random value
// after a name holding a secret word is masked whatever the name ends in.
func TestPlaceholdersAndSecretWordsInNames(t *testing.T) {
	g := newGen()
	for _, keep := range []string{
		`DEPLOY_API_KEY = "dk_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX"`,
		`service_token: "tok_abcdefghijklmnop1234"`,
		"STORAGE_SECRET=`vault read -field=value kv/storage`",
		`registry_password: "<your-registry-password>"`,
		"admin_password = var.admin_password",
		"curl --user deploy:[PASSWORD] https://example.org",
		"curl -u <user:password> https://example.org",
		"VncPassword=1",
		`publishable_key = "pk9Xq2LmZ7pRt4WvB8nYsK3d"`,
		"foreignKey=ordCqc1.PSEF5WveAEDlMWpU",
	} {
		if out := testRedactor.Scrub(keep); out != keep {
			t.Errorf("placeholder changed:\n in: %s\nout: %s", keep, out)
		}
	}
	bearer := strings.Repeat("A", 20) + g.rnd(alnum, 60)
	mustMask(t, "<twitterToken>\n  "+bearer+"\n</twitterToken>", bearer, "")
	for _, name := range []string{"legacy_secret_do_not_share", "build_api_token_2", "myTokenValue"} {
		secret := g.rnd(alnum, 12) + "7" + g.rnd(alnum, 17)
		mustMask(t, name+" = "+secret, secret, "")
	}
}

// Issue 36 point 1: the-loop masks the value (six characters and up) of
// every variable whose name holds TOKEN, SECRET, KEY, PASSWORD, CREDENTIAL
// or AUTH, whatever else the name says; so does this package.
func TestEnvValuesByNameAsTheLoop(t *testing.T) {
	r := New(Options{Env: []string{
		"AUTH_USER=jdoe42",
		`GIT_AUTHOR_NAME=Jane Doe`,
		"SIGNING_KEY_FILE=/etc/keys/signing.pem",
		"TOKEN_TTL=86400s",
		"REDIS_HOST_KEY=cache-7.internal",
		"AUTH_MODE=oidc", // four characters: the-loop keeps it too
		"FEATURE_TOKEN_GATE=disabled",
	}})
	for _, c := range []struct{ in, secret string }{
		{"login as jdoe42 failed", "jdoe42"},
		{"commit by Jane Doe on main", "Jane Doe"},
		{"open /etc/keys/signing.pem: permission denied", "/etc/keys/signing.pem"},
		{"ttl 86400s exceeded", "86400s"},
		{"dial cache-7.internal: refused", "cache-7.internal"},
	} {
		out := r.Scrub(c.in)
		if strings.Contains(out, c.secret) || !strings.Contains(out, "<redacted:env:") {
			t.Errorf("env value %q not masked:\n in: %s\nout: %s", c.secret, c.in, out)
		}
	}
	for _, keep := range []string{"auth mode oidc", "the gate is disabled"} {
		if out := r.Scrub(keep); out != keep {
			t.Errorf("changed:\n in: %s\nout: %s", keep, out)
		}
	}
}

// Issue 32 point 4: people and machines the sentence names.
func TestPeopleAndPrivateHosts(t *testing.T) {
	for _, c := range []struct{ in, gone string }{
		{"FATAL: permission denied for mvanderberg", "mvanderberg"},
		{"commit 3f2a author: rkapoor fixed the retry", "rkapoor"},
		{"ssh: o.nakamura@jump-2: Permission denied (publickey)", "o.nakamura"},
		{"git push failed: dsouza@buildbox: connection reset", "dsouza"},
		{"lookup db-replica.prod.northwind-trading.com: no such host", "db-replica"},
		{"dial tcp ws-pkumar12.office.contoso-labs.net:443: i/o timeout", "ws-pkumar12"},
		{"call me on +49 30 901820 or +1 (415) 555-0142 tomorrow", "901820"},
	} {
		out := testRedactor.Scrub(c.in)
		if strings.Contains(out, c.gone) || !strings.Contains(out, "<redacted:") {
			t.Errorf("want %q masked:\n in: %s\nout: %s", c.gone, c.in, out)
		}
	}
	for _, keep := range []string{
		"ERROR: permission denied for table invoices",
		"git@github.com: Permission denied (publickey)",
		"at com.acme.internal.billing.Invoice.total(Invoice.java:42)",
		"fetching api.github.com and registry.npmjs.org",
	} {
		if out := testRedactor.Scrub(keep); out != keep {
			t.Errorf("changed:\n in: %s\nout: %s", keep, out)
		}
	}
}

// A password typed at an echoed prompt; a weak key naming a thing.
func TestPromptAnswersAndNamedKeys(t *testing.T) {
	mustMask(t, "Password for 'https://mlopez@git.example.org': Qu1ckBr0wn", "Qu1ckBr0wn", "password")
	mustMask(t, "[sudo] password for builder: h0rse-Staple", "h0rse-Staple", "password")
	if out := testRedactor.Scrub("password for user app: authentication failed"); !strings.HasSuffix(out, ": authentication failed") {
		t.Errorf("prose after a prompt-like phrase masked: %s", out)
	}
	for _, keep := range []string{`"bucket_key": "QuarterlyReports-2.4"`, "sort_key=CreatedAt_v2"} {
		if out := testRedactor.Scrub(keep); out != keep {
			t.Errorf("changed:\n in: %s\nout: %s", keep, out)
		}
	}
}

// The gitleaks catalogue is compiled once per process, on first use. Its
// cost is reported (go test -v -run TestGitleaksLoadCost), not asserted:
// speed targets live in benchmarks.
func TestGitleaksLoadCost(t *testing.T) {
	if glCat != nil {
		t.Skip("catalogue already compiled by an earlier test in this process")
	}
	start := time.Now()
	c := gitleaks()
	t.Logf("gitleaks default rules: %d rules compiled in %v", len(c.rules), time.Since(start))
	if len(c.rules) < 150 {
		t.Errorf("only %d gitleaks rules loaded", len(c.rules))
	}
}

// A Kubernetes Secret printed into a log: its data values are secrets.
func TestKubernetesSecretData(t *testing.T) {
	g := newGen()
	v := g.rnd(alnum, 24) + "=="
	mustMask(t, "error applying:\napiVersion: v1\nkind: Secret\nmetadata:\n  name: billing-db\ndata:\n  dsn: "+v+"\n", v, "")
}

// A provider prefix followed by filler or a counting run is a
// documentation example; followed by random text it is a credential.
func TestProviderPrefixExamples(t *testing.T) {
	for _, keep := range []string{
		"set GITLAB_TRIGGER=glptt-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx in CI",
		"example: ntn_123456789012345678901234567890123456789012345678901234567890",
		"xoxe.xoxp-1-PutYourRefreshTokenHere",
	} {
		if out := testRedactor.Scrub(keep); out != keep {
			t.Errorf("example changed:\n in: %s\nout: %s", keep, out)
		}
	}
	g := newGen()
	tok := "ntn_" + g.rnd("0123456789", 11) + g.rnd(alnum, 35) // Notion's format, as gitleaks gives it
	mustMask(t, "notion said "+tok+" is invalid", tok, "")
}
