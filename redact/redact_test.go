package redact

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
)

// Fake secrets are generated at run time from a fixed seed so that nothing
// resembling a real credential is committed, and every run is repeatable.
const (
	alnum    = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	upperNum = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	hexLower = "0123456789abcdef"
	// AWS key ids and Hugging Face tokens as their providers issue them
	// (gitleaks' rules hold the formats).
	base32  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b64     = alnum + "+/"
	urlSafe = alnum + "_-"
)

type gen struct{ r *rand.Rand }

func newGen() *gen { return &gen{rand.New(rand.NewSource(42))} }

// rnd returns n random characters of alphabet, always mixing letters and
// digits so the value looks like what providers issue.
func (g *gen) rnd(alphabet string, n int) string {
	for {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[g.r.Intn(len(alphabet))]
		}
		v := string(b)
		cc := countClasses(v)
		mixable := strings.ContainsAny(alphabet, "0123456789") && strings.ContainsAny(alphabet, "abcdefABCDEF")
		if n < 6 || !mixable || (cc.digit > 0 && cc.lower+cc.upper > 0) {
			return v
		}
	}
}

func (g *gen) pem(kind string, escaped bool) (block, body string) {
	nl := "\n"
	if escaped {
		nl = `\n`
	}
	var lines []string
	for i := 0; i < 6; i++ {
		lines = append(lines, g.rnd(b64, 64))
	}
	lines = append(lines, g.rnd(b64, 20)+"==")
	body = strings.Join(lines, nl)
	block = "-----BEGIN " + kind + "-----" + nl + body + nl + "-----END " + kind + "-----" + nl
	return block, body
}

var testRedactor = New(Options{
	Env: []string{
		"PATH=/usr/bin:/bin",
		"GITHUB_TOKEN=envtok_9Zq3XbLm7Tr2Wp4Kd8Ny",
		"DB_PASSWORD=Pl4in-words!",
		"TOKEN_TTL_SECONDS=3600",
		"AUTH_MODE=oidc",
		"PWD=/srv/app",
		"SSH_AUTH_SOCK=/tmp/ssh-abc/agent.1",
	},
	User: "alice",
	Home: "/home/alice",
	Host: "buildbox-7.corp.example.net",
})

// mustMask checks that secret is gone from Scrub(text) and the expected
// placeholder label appears.
func mustMask(t *testing.T, text, secret, label string) {
	t.Helper()
	out := testRedactor.Scrub(text)
	if strings.Contains(out, secret) {
		t.Errorf("secret %q survived:\n in: %s\nout: %s", secret, text, out)
	}
	// label may name alternatives, "gitleaks-rule|own-label": where a
	// gitleaks pattern's boundary does not hold, this package's prefix
	// rule masks the token under its own name.
	if label != "" && !slices.ContainsFunc(strings.Split(label, "|"), func(l string) bool { return strings.Contains(out, "<redacted:"+l) }) {
		t.Errorf("want placeholder <redacted:%s...> in\nout: %s", label, out)
	}
	if again := testRedactor.Scrub(out); again != out {
		t.Errorf("not idempotent:\n once: %s\ntwice: %s", out, again)
	}
}

func TestProviderTokens(t *testing.T) {
	g := newGen()
	cases := []struct{ name, secret, label string }{
		{"aws access key id", "AKIA" + g.rnd(base32, 16), "aws-access-token|aws-access-key-id"},
		{"aws session key id", "ASIA" + g.rnd(base32, 16), "aws-access-token|aws-access-key-id"},
		{"google api key", "AIza" + g.rnd(urlSafe, 35), "gcp-api-key|google-api-key"},
		{"github classic", "ghp_" + g.rnd(alnum, 36), "github-pat"},
		{"github oauth", "gho_" + g.rnd(alnum, 36), "github-oauth"},
		{"github app", "ghs_" + g.rnd(alnum, 36), "github-app-token"},
		{"github fine-grained", "github_pat_" + g.rnd(alnum, 22) + "_" + g.rnd(alnum, 59), "github-fine-grained-pat"},
		{"gitlab", "glpat-" + g.rnd(urlSafe, 20), "gitlab-pat"},
		{"slack bot", "xoxb-" + g.rnd("0123456789", 12) + "-" + g.rnd("0123456789", 13) + "-" + g.rnd(alnum, 24), "slack-bot-token"},
		{"stripe live", "sk_live_" + g.rnd(alnum, 24), "stripe-access-token|stripe-key"},
		{"stripe restricted", "rk_live_" + g.rnd(alnum, 24), "stripe-access-token|stripe-key"},
		{"openai legacy", "sk-" + g.rnd(alnum, 48), "api-key"},
		{"openai project", "sk-proj-" + g.rnd(urlSafe, 80), "openai-key"},
		{"anthropic", "sk-ant-api03-" + g.rnd(urlSafe, 93) + "AA", "anthropic-key"},
		{"npm", "npm_" + g.rnd(alnum, 36), "npm-access-token|npm-token"},
		{"pypi", "pypi-AgEIcHlwaS5vcmc" + g.rnd(urlSafe, 60), "pypi-token"},
		{"digitalocean", "dop_v1_" + g.rnd(hexLower, 64), "digitalocean-pat|digitalocean-token"},
		{"shopify", "shpat_" + g.rnd(hexLower, 32), "shopify-access-token"},
		{"twilio api key", "SK" + g.rnd(hexLower, 32), "twilio-key"},
		{"huggingface", "hf_" + g.rnd(letters, 34), "huggingface-access-token|huggingface-token"},
		{"sendgrid", "SG." + g.rnd(urlSafe, 22) + "." + g.rnd(urlSafe, 43), "sendgrid-key"},
		{"google oauth", "ya29." + g.rnd(urlSafe, 60), "google-oauth-token"},
		{"vault", "hvs." + g.rnd(urlSafe, 40), "vault-token"},
		{"telegram", g.rnd("123456789", 10) + ":AA" + g.rnd(urlSafe, 33), "telegram-token"},
		{"discord bot", "M" + g.rnd(alnum, 23) + "." + g.rnd(urlSafe, 6) + "." + g.rnd(urlSafe, 27), "discord-token"},
		{"azure client secret", g.rnd(alnum, 3) + "8Q~" + g.rnd(urlSafe, 31), "azure-client-secret"},
		{"mailchimp", g.rnd(hexLower, 32) + "-us12", "mailchimp-key"},
		{"jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIx" + g.rnd(urlSafe, 20) + "." + g.rnd(urlSafe, 43), "jwt"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, ctx := range []string{"%s", "request failed using %s today", `{"value": "%s"}`, "x=%s\n", "(%s)"} {
				mustMask(t, fmt.Sprintf(ctx, c.secret), c.secret, c.label)
			}
		})
	}
}

func TestPrivateKeys(t *testing.T) {
	g := newGen()
	real, realBody := g.pem("RSA PRIVATE KEY", false)
	esc, escBody := g.pem("OPENSSH PRIVATE KEY", true)
	pkcs8, pkcs8Body := g.pem("PRIVATE KEY", true)
	yamlBody := strings.ReplaceAll(realBody, "\n", "\n    ")
	cases := []struct{ name, text, body string }{
		{"pem lines", "key file contents:\n" + real + "at main.go:12", realBody},
		{"escaped in python bytes", "ValueError: b'" + esc + "'", escBody},
		{"gcp service account json", `{"type": "service_account", "private_key": "` + pkcs8 + `", "client_id": "1"}`, pkcs8Body},
		{"cut off", "dump:\n-----BEGIN RSA PRIVATE KEY-----\n" + realBody[:200], realBody[:200]},
		{"yaml block", "tls:\n  key: |\n    -----BEGIN EC PRIVATE KEY-----\n    " + yamlBody + "\n    -----END EC PRIVATE KEY-----\n", yamlBody},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := testRedactor.Scrub(c.text)
			for _, line := range strings.FieldsFunc(c.body, func(r rune) bool { return r == '\n' || r == '\\' || r == ' ' }) {
				if len(line) >= 8 && strings.Contains(out, line) {
					t.Fatalf("key material %q survived:\n%s", line, out)
				}
			}
			if !strings.Contains(out, "<redacted:") {
				t.Fatalf("no placeholder:\n%s", out)
			}
			if strings.Contains(c.text, "-----BEGIN") && !strings.Contains(out, "-----BEGIN") {
				t.Errorf("BEGIN line should stay for readers:\n%s", out)
			}
		})
	}
	t.Run("certificate is not a private key", func(t *testing.T) {
		cert := "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----"
		if out := testRedactor.Scrub(cert); out != cert {
			t.Errorf("certificate changed:\n%s", out)
		}
	})
}

func TestSecretsByContext(t *testing.T) {
	g := newGen()
	hex40 := g.rnd(hexLower, 40)
	pw := g.rnd(alnum, 14)
	cases := []struct{ name, text, secret, label string }{
		{"short password kv", "login failed password=hunter2 user=bob", "hunter2", "password"},
		{"password json", `{"username": "app", "db_password": "raven-pepper-22", "host": "db"}`, "raven-pepper-22", "password"},
		{"password json in json", `payload="{\"password\": \"` + pw + `\", \"x\": 1}"`, pw, "password"},
		{"camel case key", `{"smtpPassword": "` + pw + `"}`, pw, "password"},
		{"yaml", "db:\n  password: " + pw + "\n", pw, "password"},
		{"ini", "[db]\npassword = " + pw + "\n", pw, "password"},
		{"env", "JWT_SECRET=" + pw, pw, "secret"},
		{"python kwarg", `client = Client(api_key="` + pw + `")`, pw, "token"},
		{"attribute", `billing.api_key = "` + pw + `"`, pw, "token"},
		{"client secret", "client_secret: " + pw, pw, "secret"},
		{"hex api key in logfmt", "level=error api_key=" + hex40 + " attempt=2", hex40, "token"},
		{"cli long flag", "deploy --password " + pw + " --verbose", pw, "password"},
		{"cli flag equals", "deploy --token=" + pw, pw, "token"},
		{"mysql -p", "mysql -h db -u app -p" + pw + " orders", pw, "password"},
		{"curl -u", "curl -u admin:" + pw + "&x https://example.com", pw + "&x", "password"},
		{"netrc", "machine api.example.com login deploy password " + pw, pw, "password"},
		{"bearer header", "> Authorization: Bearer " + pw, pw, "token"},
		{"basic header", "Authorization: Basic " + g.rnd(b64, 24) + "==", "", "token"},
		{"token scheme", "Authorization: token " + pw, pw, "token"},
		{"bearer in quotes", `-H "Authorization: Bearer ` + pw + `"`, pw, "token"},
		{"x-api-key", "X-Api-Key: " + pw, pw, "token"},
		{"vendor header", "DD-API-KEY: " + g.rnd(hexLower, 31) + "a", "", "token"},
		{"private-token header", "PRIVATE-TOKEN: " + pw, pw, "token"},
		{"cookie", "Cookie: sessionid=" + pw + "; theme=dark", pw, "cookie"},
		{"set-cookie", "< Set-Cookie: SESSION=" + pw + "; Path=/; HttpOnly", pw, "cookie"},
		{"aws sigv4", "Authorization: AWS4-HMAC-SHA256 Credential=AKIA" + g.rnd(upperNum, 16) + "/20251129/us-east-1/s3/aws4_request, Signature=" + g.rnd(hexLower, 64), "Signature=" + "x", ""},
		{"azure connection string", "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + g.rnd(b64, 86) + "==;EndpointSuffix=core.windows.net", "", "token"},
		{"query token", "GET https://api.example.com/v1?user=x&access_token=" + pw + "&page=2", pw, "token"},
		{"npmrc", "//registry.npmjs.org/:_authToken=" + pw, pw, "token"},
		{"docker auth", `{"auths":{"ghcr.io":{"auth":"` + g.rnd(b64, 40) + `="}}}`, "", "auth"},
		{"prose key", "the request was signed with key " + g.rnd(alnum, 32), "", "key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.secret == "" || strings.HasSuffix(c.secret, "=x") {
				out := testRedactor.Scrub(c.text)
				if !strings.Contains(out, "<redacted:") {
					t.Fatalf("nothing masked:\n%s", out)
				}
				return
			}
			mustMask(t, c.text, c.secret, c.label)
		})
	}
}

func TestURLCredentials(t *testing.T) {
	g := newGen()
	pw := g.rnd(alnum, 18)
	cases := []struct{ name, text, secret string }{
		{"postgres", "dial postgresql://api:" + pw + "@db.internal:5432/app?sslmode=require", pw},
		{"encoded", "https://admin:" + pw + "%40x@grafana.internal/api", pw},
		{"redis no user", "redis://:" + pw + "@cache:6379/0", pw},
		{"go mysql dsn", "DATABASE_URL=app:" + pw + "@tcp(mysql:3306)/orders?parseTime=true", pw},
		{"token as user", "https://x-access-token:" + pw + "@github.com/o/r.git", pw},
		{"slack webhook", "https://hooks.slack.com/services/T" + g.rnd(upperNum, 8) + "/B" + g.rnd(upperNum, 8) + "/" + pw, pw},
		{"discord webhook", "https://discord.com/api/webhooks/123456789012345678/" + pw + "-x", pw},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { mustMask(t, c.text, c.secret, "") })
	}
}

func TestIdentityAndPII(t *testing.T) {
	cases := []struct{ name, text, secret, label string }{
		{"email", "invite failed for lena.petrov79@example.com: 422", "lena.petrov79@example.com", "email"},
		{"linux home of another user", "open /home/nkarimi/src/app/main.go: permission denied", "nkarimi", "user"},
		{"mac home", "stat /Users/roliveira/.config/x.json", "roliveira", "user"},
		{"windows home", `C:\Users\jsmith\AppData\Local\Temp`, "jsmith", "user"},
		{"escaped windows home", `"C:\\Users\\jsmith\\AppData"`, "jsmith", "user"},
		{"own home", "config at /home/alice/.config/the-loop/config.yaml", "/home/alice", ""},
		{"own user", "ssh: Permission denied (publickey) for user alice on bastion", "alice", "user"},
		{"own host", "node buildbox-7.corp.example.net reported DiskPressure", "buildbox-7", "host"},
		{"own short host", "On BUILDBOX-7 the cache was cold", "BUILDBOX-7", "host"},
		{"private ip", "upstream 172.24.48.36:8080 marked unhealthy", "172.24.48.36", "ip"},
		{"private ip 10/8", "dial tcp 10.0.3.7:5432: connection refused", "10.0.3.7", "ip"},
		{"ula ipv6", "listen on fd12:3456:789a:1::5", "fd12:3456:789a:1::5", "ip"},
		{"env value in prose", "the process sees envtok_9Zq3XbLm7Tr2Wp4Kd8Ny in its environment", "envtok_9Zq3XbLm7Tr2Wp4Kd8Ny", "env:GITHUB_TOKEN"},
		{"short env value standalone", `exec: ["deploy" "Pl4in-words!"]`, "Pl4in-words!", "env:DB_PASSWORD"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { mustMask(t, c.text, c.secret, c.label) })
	}
}

// TestKeep lists text that must come through unchanged: everything a
// reader needs to diagnose a failure and nothing secret.
func TestKeep(t *testing.T) {
	keep := []string{
		"2025-11-04T15:48:28.483Z ::group::Run make test",
		"sqlalchemy.exc.OperationalError: permission denied (attempt 2/5)",
		"go: downloading github.com/acme/widget v0.0.0-20251120153012-c6d07ef7b77e",
		"config: auth_mode=oidc",
		"warning: credential_source=Ec2InstanceMetadata ignored; 4 retries",
		"max_tokens=4096 secret_name=db-credentials TOKEN_TTL_SECONDS=3600 password_min_length=12 passwordless=true",
		"token_type=bearer cache_key=invoice:6226:v2 api_version=2024-06-01 GOMAXPROCS=4 LANG=C.UTF-8",
		"commit d7e70cad19461922995d84016e51c6b36d6f3c9f",
		"request_id=728b93e8-3190-42d3-a67d-53e5753dc98f upstream returned 403 Forbidden after 42.325s",
		"pulled ghcr.io/acme/billing-sync@sha256:9aecac22ae386fb856967b282e2a7c91a5a97a327707c2822009bff43a25544a",
		"traceparent: 00-1a4bcd02ef19302f0fab2265f5a4180a-633025dfaae580bb-01 trace_id=de72237b2a8500dfb6d22388d14f4e1b",
		"pod artifact-uploader-qmbhjn8x8g-nrjl4 CrashLoopBackOff restarted 26 times",
		"database/sql.(*DB).conn(...)\n\tinternal/queue/retry.go:136 +0x1d4",
		"built with go1.26.8 in 5s; see https://github.com/acme/widget/actions/runs/8289122828",
		"TestTokenRefreshIsIdempotent AuthorizationHeaderMissingError sha256WithRSAEncryption ErrUnexpectedEOFWhileReadingChunkedBody",
		"error: invalid token: signature mismatch; token is expired; password authentication failed",
		"duplicate key value violates unique constraint \"users_email_key\"",
		"invalid_auth request_id=228bc579-6382-4f39-83ff-671311a2ed75",
		"*   Trying 104.18.32.7:443... Connected to api.example.com (127.0.0.1)",
		"git@github.com:acme/widget.git pkg@v1.2.3 @types/node@20.11.1",
		"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGz6mR1d9QqP0nK2x7v3Lw8tY5bJ4cF1hE6sA0uM9oTz ci",
		`"api_key": "${API_KEY}", "password": "****", token=<your-token>`,
		"mkdir -p build/out && docker run -p 8080:80 app",
		"PWD=/srv/app and the OLDPWD=/srv",
		"/Users/Shared/cache and /home/ alone",
	}
	for _, text := range keep {
		if out := testRedactor.Scrub(text); out != text {
			t.Errorf("benign text changed:\n in: %s\nout: %s", text, out)
		}
	}
}

func TestNewIgnoresUnsafeIdentity(t *testing.T) {
	r := New(Options{User: "x", Home: "/", Host: "localhost"})
	in := "x / localhost /home/ok"
	if out := r.Scrub(in); out != "x / localhost /home/<redacted:user>" {
		t.Errorf("got %q", out)
	}
}

func TestSensitiveEnvName(t *testing.T) {
	for name, want := range map[string]bool{
		"GITHUB_TOKEN": true, "AWS_SECRET_ACCESS_KEY": true, "DB_PASSWORD": true, "NPM_AUTH": true,
		"GOOGLE_APPLICATION_CREDENTIALS": true, "APIKEY": true, "OPENAI_API_KEY": true,
		// the-loop's stems mask whatever else the name says (issue 36).
		"TOKEN_TTL_SECONDS": true, "AUTH_MODE": true, "AUTH_USER": true, "GIT_AUTHOR_NAME": true,
		"KEYBOARD": true, "MONKEY_PATCH": true, "SSH_AUTH_SOCK": true, "REDIS_HOST_KEY": true,
		"TOKENIZERS_PARALLELISM": true, "GIT_AUTHOR_EMAIL": true, "KEY_FILE": true, "KEY_PREFIX": true,
		"PWD": false, "OLDPWD": false, "PATH": false, "HOME": false, "MYSQL_PWD_FILE": false,
		"GITLAB_PAT": true, "DEPLOY_PASS": true, "DBPASS": true, "MYSQL_PWD": true, "VAULT_CREDENTIAL": true,
		"GOPATH": false, "CLASSPATH": false, "COMPASS_URL": false, "PASS_PREFIX": false,
	} {
		if got := secretEnvName(name); got != want {
			t.Errorf("secretEnvName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestPlaceholdersAreNamedAndBounded(t *testing.T) {
	long := strings.Repeat("A", 200)
	r := New(Options{Env: []string{long + "_TOKEN=zq9" + strings.Repeat("k", 20)}})
	out := r.Scrub("value zq9" + strings.Repeat("k", 20))
	if !strings.HasPrefix(out, "value <redacted:env:AAAA") || len(out) > len("value ")+MaxPlaceholderLen {
		t.Errorf("got %q", out)
	}
}

func TestQualifiedShortPasswordKeys(t *testing.T) {
	mustMask(t, "DB_PASS=hunter2 SMTP_PW=abc123", "hunter2", "password")
	mustMask(t, "SMTP_PW=abc123", "abc123", "password")
	mustMask(t, "login with password 'hunter2' failed", "hunter2", "password")
	mustMask(t, "Server=db;User Id=sa;Password=P@ssw0rd!;Encrypt=true", "P@ssw0rd!", "password")
	if out := testRedactor.Scrub("tests: pass=12 fail=0"); out != "tests: pass=12 fail=0" {
		t.Errorf("test counts changed: %s", out)
	}
}

func TestAccountNamesThatAreWordsKeepTheirWordUses(t *testing.T) {
	r := New(Options{User: "root"})
	got := r.Scrub("Root cause: the root directory is full; ssh: permission denied for user root on bastion; sudo as root")
	for _, keep := range []string{"Root cause", "root directory"} {
		if !strings.Contains(got, keep) {
			t.Errorf("%q lost %q", got, keep)
		}
	}
	if strings.Count(got, "<redacted:user>") != 2 {
		t.Errorf("the account name itself must still be masked: %q", got)
	}
	if got := New(Options{User: "jdoe42"}).Scrub("jdoe42 cause"); strings.Contains(got, "jdoe42") {
		t.Errorf("a user name that cannot be a word is masked wherever it stands alone: %q", got)
	}
	if got := New(Options{User: "alice"}).Scrub("alice cause"); got != "alice cause" {
		t.Errorf("a name that can be a word stays outside an account slot: %q", got)
	}
}

func TestCredentialsInProseAndDottedProviderTokens(t *testing.T) {
	r := New(Options{})
	hex32 := strings.Repeat("9a1f", 8)
	tf := "XuyWXJa5sP8WiK.atlasv1." + strings.Repeat("Ab3dEf9h", 9)
	got := r.Scrub("DD_API_KEY is " + hex32 + "; terraform login with " + tf)
	for _, leak := range []string{hex32, "XuyWXJa5sP8WiK", "Ab3dEf9h"} {
		if strings.Contains(got, leak) {
			t.Errorf("%q leaks %q", got, leak)
		}
	}
	for _, keep := range []string{"the token is expired", "API_KEY is short", "max_tokens is 4096"} {
		if got := r.Scrub(keep); got != keep {
			t.Errorf("%q became %q", keep, got)
		}
	}
}
