package redact

import (
	"fmt"
	"math/rand"
	"regexp"
	"strings"
	"testing"
	"time"
)

// A generator of varied shapes for the secret classes (1, 2, 3, 4, 5, 7):
// random key names from the secret family in random case and separators,
// random quoting, random passwords (short human ones, ones full of
// #@/%:'"!, long random ones), random surrounding log lines. Each case says
// which secret it planted; the check is the scorer's: no 8-character piece
// of a long secret survives, and a short one does not survive as a token.

type planted struct {
	class, shape, text, secret string
}

type sgen struct{ r *rand.Rand }

func newSgen(seed int64) *sgen { return &sgen{rand.New(rand.NewSource(seed))} }

func (g *sgen) pick(xs ...string) string { return xs[g.r.Intn(len(xs))] }

func (g *sgen) chars(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[g.r.Intn(len(alphabet))]
	}
	return string(b)
}

var syllables = []string{"ka", "lo", "mi", "ra", "ven", "pep", "per", "dra", "gon", "sum", "mer", "win", "ter", "hun", "blu", "sky", "tor", "fal", "con", "zen", "qua", "rix", "mon", "tel"}

func (g *sgen) word(n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(syllables[g.r.Intn(len(syllables))])
	}
	return b.String()[:n]
}

// password returns a password none of whose bytes is in forbid.
func (g *sgen) password(forbid string) string {
	for {
		var p string
		switch g.r.Intn(5) {
		case 0: // short human: hunter2, abc123
			p = g.word(3+g.r.Intn(4)) + g.chars("0123456789", 1+g.r.Intn(3))
		case 1: // Capitalised word, digits and a symbol
			w := g.word(4 + g.r.Intn(4))
			p = strings.ToUpper(w[:1]) + w[1:] + g.chars("0123456789", 2+g.r.Intn(3)) + g.pick("!", "#", "@", "%", "?", "*", "$")
		case 2: // full of special characters
			p = g.chars(alnum+"#@/%:'\"!&;,=+?*", 10+g.r.Intn(10))
		case 3: // random, long
			p = g.chars(alnum, 12+g.r.Intn(20))
		default: // passphrase
			p = g.word(4+g.r.Intn(3)) + "-" + g.word(4+g.r.Intn(3)) + "-" + strings.ToUpper(g.word(1)) + g.word(3) + g.chars("0123456789", 2)
		}
		if strings.ContainsAny(p, forbid) || strings.ContainsAny(p[:1], "$%{<*-") {
			continue
		}
		if cc := countClasses(p); cc.lower+cc.upper+cc.digit < 4 {
			continue
		}
		return p
	}
}

// keyName builds a secret-ish key name: an optional qualifier and a secret
// word, in a random case style.
func (g *sgen) keyName(words ...string) string {
	if len(words) == 0 {
		words = []string{"password", "passwd", "pwd", "psw", "secret", "token", "api key", "auth token",
			"access token", "private key", "passphrase", "client secret", "access key", "secret key", "api secret",
			"pass", "pw", "auth", "credential", "credentials", "refresh token", "session token", "signing key"}
	}
	w := strings.Fields(g.pick(words...))
	if g.r.Intn(2) == 0 {
		w = append([]string{g.pick("db", "smtp", "redis", "admin", "app", "mysql root", "ldap bind", "service", "billing", "mail", "registry")}, w...)
	}
	w = strings.Fields(strings.Join(w, " "))
	switch g.r.Intn(6) {
	case 0:
		return strings.Join(w, "_")
	case 1:
		return strings.ToUpper(strings.Join(w, "_"))
	case 2:
		return strings.Join(w, "-")
	case 3:
		return strings.Join(w, ".")
	case 4: // camelCase
		for i := 1; i < len(w); i++ {
			w[i] = strings.ToUpper(w[i][:1]) + w[i][1:]
		}
		return strings.Join(w, "")
	default: // PascalCase
		for i := range w {
			w[i] = strings.ToUpper(w[i][:1]) + w[i][1:]
		}
		return strings.Join(w, "")
	}
}

func (g *sgen) logLine() string {
	return g.pick(
		fmt.Sprintf("2025-%02d-%02dT%02d:14:07.%03dZ ERROR [%s] request failed after %d.%03ds", 1+g.r.Intn(12), 1+g.r.Intn(28), g.r.Intn(24), g.r.Intn(1000), g.word(6), g.r.Intn(60), g.r.Intn(1000)),
		fmt.Sprintf("\tinternal/%s/%s.go:%d +0x%x", g.word(5), g.word(6), 10+g.r.Intn(900), g.r.Intn(4096)),
		fmt.Sprintf("commit %s", g.chars(hexLower, 40)),
		fmt.Sprintf("request_id=%s-%s-4%s-a%s-%s status=%s", g.chars(hexLower, 8), g.chars(hexLower, 4), g.chars(hexLower, 3), g.chars(hexLower, 3), g.chars(hexLower, 12), g.pick("500", "502", "403")),
		"Traceback (most recent call last):",
		fmt.Sprintf("make: *** [Makefile:%d: test] Error 1", g.r.Intn(200)),
		"",
	)
}

// wrap surrounds a line with random log lines.
func (g *sgen) wrap(line string) string {
	var lines []string
	for i := g.r.Intn(3); i > 0; i-- {
		lines = append(lines, g.logLine())
	}
	lines = append(lines, line)
	for i := g.r.Intn(3); i > 0; i-- {
		lines = append(lines, g.logLine())
	}
	return strings.Join(lines, "\n")
}

func jsonEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;").Replace(s)
}

// Class 1: a value after a secret-ish key, in every syntax.
func (g *sgen) keyContext() planted {
	k := g.keyName()
	pick := g.r.Intn(22)
	var pw, text, shape string
	switch pick {
	case 0:
		shape = "logfmt"
		pw = g.password(" \t'\"`,;&<>\\){}[]")
		text = fmt.Sprintf("level=error msg=%q %s=%s attempt=%d", "connect failed", k, pw, g.r.Intn(9))
	case 1:
		shape = "env"
		pw = g.password(" \t'\"`\\<>;&")
		k = strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(k))
		text = g.pick("", "export ") + k + "=" + g.pick(pw, `"`+strings.ReplaceAll(pw, `"`, `\"`)+`"`)
		if strings.Contains(pw, `"`) {
			text = k + "='" + pw + "'"
			if strings.Contains(pw, "'") {
				pw = g.password(" \t'\"`\\<>;&")
				text = k + "=" + pw
			}
		}
	case 2:
		shape = "json"
		pw = g.password("")
		text = fmt.Sprintf(`{"user": "%s", "%s": "%s", "port": %d}`, g.word(5), k, jsonEscape(pw), 1000+g.r.Intn(9000))
	case 3:
		shape = "json-in-json"
		pw = g.password(`"\`)
		text = fmt.Sprintf(`payload="{\"%s\": \"%s\", \"retry\": true}"`, k, pw)
	case 4:
		shape = "yaml"
		pw = g.password(" \t'\"#:")
		text = fmt.Sprintf("%s:\n  host: db.%s.example\n  %s: %s\n  pool: 5", g.word(4), g.word(5), k, g.pick(pw, `"`+jsonEscape(pw)+`"`))
	case 5:
		shape = "ini"
		pw = g.password(" \t;#'\"")
		text = fmt.Sprintf("[%s]\nhost = %s\n%s = %s\n", g.word(4), g.word(6), k, pw)
	case 6:
		shape = "toml"
		pw = g.password("")
		text = fmt.Sprintf("[%s]\n%s = \"%s\"\n", g.word(4), k, jsonEscape(pw))
	case 7:
		shape = "xml-element"
		pw = g.password("")
		text = fmt.Sprintf("<server>\n  <id>%s</id>\n  <username>%s</username>\n  <%s>%s</%s>\n</server>", g.word(5), g.word(4), k, xmlEscape(pw), k)
	case 8:
		shape = "xml-attribute-pair"
		pw = g.password("")
		text = fmt.Sprintf(`<packageSourceCredentials><%s><add key="Username" value="%s" /><add key="%s" value="%s" /></%s></packageSourceCredentials>`, g.word(5), g.word(4), g.pick("ClearTextPassword", "Password", k), xmlEscape(pw), g.word(5))
	case 9:
		shape = "xml-attribute"
		pw = g.password("")
		text = fmt.Sprintf(`<datasource url="jdbc:h2:mem" user="%s" %s="%s"/>`, g.word(4), k, xmlEscape(pw))
	case 10:
		shape = "go-map"
		pw = g.password(" []")
		text = fmt.Sprintf("config: map[%s:%s host:%s port:%d]", k, pw, g.word(5), g.r.Intn(9000))
	case 11:
		shape = "go-struct-%+v"
		pw = g.password(" {}")
		text = fmt.Sprintf("cfg={Host:%s %s:%s Timeout:30s}", g.word(5), g.keyName("password", "secret", "token", "api key"), pw)
		k = ""
	case 12:
		shape = "go-struct-%#v"
		pw = g.password(`"\`)
		text = fmt.Sprintf(`&config.DB{Host:"%s", %s:"%s", Port:%d}`, g.word(5), g.pick("Password", "Secret", "APIKey", "AuthToken", "ClientSecret"), pw, g.r.Intn(9000))
	case 13:
		shape = "python-dict"
		pw = g.password(`'\`)
		text = fmt.Sprintf(`kwargs = {'host': '%s', '%s': '%s'}`, g.word(5), k, pw)
	case 14:
		shape = "python-call"
		pw = g.password(`'\`)
		text = fmt.Sprintf(`Config(host='%s', %s='%s', timeout=30)`, g.word(5), strings.NewReplacer("-", "_", ".", "_").Replace(strings.ToLower(k)), pw)
	case 15:
		shape = "http-authorization"
		pw = g.chars(alnum+"-._~", 12+g.r.Intn(30))
		text = fmt.Sprintf("> %s: %s %s", g.pick("Authorization", "Proxy-Authorization", "authorization"), g.pick("Bearer", "Token", "token", "Basic"), pw)
	case 16:
		shape = "http-header"
		pw = g.password(" \t\"'")
		text = fmt.Sprintf("%s: %s", g.pick("X-Api-Key", "X-Auth-Token", "X-Vault-Token", "Private-Token", "X-Access-Token", "x-api-key"), pw)
	case 17:
		shape = "cookie"
		pw = g.password(" ;,\"'\\")
		text = fmt.Sprintf("%s: %s=%s; Path=/; HttpOnly", g.pick("Cookie", "Set-Cookie", "< set-cookie"), g.pick("session", "sid", "JSESSIONID", "connect.sid", "auth"), pw)
	case 18:
		shape = "go-header-dump"
		if g.r.Intn(3) == 0 {
			shape = "bracketed key"
			pw = g.password(" \t;'\"")
			text = fmt.Sprintf("[%s] = %s;", k, pw)
			break
		}
		pw = g.chars(alnum, 16+g.r.Intn(20))
		text = g.pick(
			fmt.Sprintf(`http.Header{"Accept":[]string{"*/*"}, "Authorization":[]string{"%s %s"}}`, g.pick("Bearer", "Basic", "token"), pw),
			fmt.Sprintf("map[Accept:[*/*] Authorization:[%s %s] User-Agent:[go]]", g.pick("Bearer", "Basic", "token"), pw),
		)
	case 19:
		shape = "prose-copula"
		pw = g.password(" \t'\"`,.;")
		text = fmt.Sprintf("%s %s %s %s", g.pick("the", "The", "my", "note: the"), g.pick("password", "passphrase", "secret", "token", "api key"), g.pick("is", "was", "is set to", "is:"), pw)
	case 20:
		shape = "prose-preposition"
		pw = g.password(" \t'\"`,.;")
		text = fmt.Sprintf("%s %s %s %s", g.pick("login", "connect", "retrying", "ssh"), g.pick("with", "using"), g.pick("password", "passphrase", "pw"), g.pick(pw, "'"+pw+"'"))
		if strings.Contains(pw, "'") {
			text = strings.ReplaceAll(text, "'"+pw+"'", pw)
		}
	default:
		shape = "prose-colon"
		pw = g.password(" \t'\"`,;")
		text = fmt.Sprintf("auth failed for %s: %s: %s (retry %d)", g.word(5), g.pick("password", "passphrase", "token", "secret"), pw, g.r.Intn(5))
	}
	_ = k
	return planted{"1", shape, g.wrap(text), pw}
}

// Class 2: command lines.
func (g *sgen) commandLine() planted {
	var pw, text, shape string
	noShell := " \t'\"`\\$;&|<>()"
	switch g.r.Intn(15) {
	case 0:
		shape = "redis-cli"
		pw = g.password(noShell)
		text = fmt.Sprintf("$ redis-cli -h %s -p 6379 %s %s ping", g.word(5), g.pick("-a", "--pass", "--askpass-not", "-a"), pw)
		text = strings.Replace(text, "--askpass-not", "-a", 1)
	case 1:
		shape = "mysql -p"
		pw = g.password(noShell)
		q := g.pick("", "'", `"`)
		text = fmt.Sprintf("+ mysql -h %s -u %s -p%s%s%s %s", g.word(5), g.word(4), q, pw, q, g.word(5))
	case 2:
		shape = "sshpass"
		pw = g.password(noShell)
		text = fmt.Sprintf("sshpass -p %s ssh -o StrictHostKeyChecking=no deploy@%s.example.com", g.pick(pw, "'"+pw+"'"), g.word(5))
	case 3:
		shape = "curl -u"
		pw = g.password(noShell + ":")
		text = fmt.Sprintf("curl -sS %s %s:%s https://%s.example.com/api", g.pick("-u", "--user"), g.word(5), pw, g.word(5))
	case 4:
		shape = "httpie"
		pw = g.password(noShell + ":")
		text = fmt.Sprintf("http %s %s:%s POST https://%s.example.com/v1/items", g.pick("--auth", "-a"), g.word(5), pw, g.word(5))
	case 5:
		shape = "docker login"
		pw = g.password(noShell)
		text = fmt.Sprintf("docker login %s.example.com -u %s %s %s", g.word(5), g.word(5), g.pick("-p", "--password"), pw)
	case 6:
		shape = "mc alias"
		key := g.chars(upperNum, 20)
		pw = g.chars(alnum+"/+", 40)
		text = fmt.Sprintf("mc alias set %s https://s3.%s.example %s %s", g.word(5), g.word(5), key, pw)
		if g.r.Intn(2) == 0 {
			pw = key
		}
	case 7:
		shape = "psql dsn"
		pw = g.password(noShell + " ")
		text = fmt.Sprintf(`psql "host=%s port=5432 user=%s password=%s dbname=%s"`, g.word(5), g.word(4), pw, g.word(5))
	case 8:
		shape = "generic flag space"
		pw = g.password(noShell)
		text = fmt.Sprintf("./bin/%s %s %s %s --verbose", g.word(6), g.pick("--password", "--token", "--secret", "--api-key", "--client-secret", "--auth-token", "--db-pass"), pw, g.pick("--region eu-west-1", "-v", ""))
	case 9:
		shape = "generic flag equals"
		pw = g.password(noShell)
		text = fmt.Sprintf("exec: %s %s=%s --port=8080", g.word(6), g.pick("--password", "--token", "--secret", "--api-key", "--pass", "-password"), pw)
	case 10:
		shape = "keytool/openssl"
		pw = g.password(noShell + ":")
		text = g.pick(
			fmt.Sprintf("keytool -importkeystore -srckeystore a.p12 -storepass %s -keypass %s", pw, pw),
			fmt.Sprintf("openssl pkcs12 -in cert.p12 -passin pass:%s -nodes", pw),
		)
	case 13:
		shape = "call or index"
		pw = g.password(`"\`)
		text = g.pick(
			fmt.Sprintf(`define('%s', '%s');`, strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(g.keyName())), strings.ReplaceAll(pw, "'", `\'`)),
			fmt.Sprintf(`os.Setenv("%s", "%s")`, strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(g.keyName())), pw),
			fmt.Sprintf(`ENV["%s"] = "%s"`, g.keyName(), pw),
		)
	case 11:
		shape = "argv list"
		pw = g.password(`"\`)
		text = fmt.Sprintf(`exec: ["%s" "--password" "%s" "--host" "%s"]`, g.word(5), pw, g.word(5))
	case 12:
		shape = "smbclient user%password"
		pw = g.password(noShell + "%")
		text = fmt.Sprintf("smbclient //%s/share -U %s%%%s -c 'ls'", g.word(5), g.word(4), pw)
	default:
		shape = "sqlcmd -P"
		pw = g.password(noShell)
		text = fmt.Sprintf("sqlcmd -S %s -U sa -P %s -Q \"SELECT 1\"", g.word(5), pw)
	}
	return planted{"2", shape, g.wrap(text), pw}
}

// Class 3: URLs and connection strings.
func (g *sgen) urlCredential() planted {
	var pw, text, shape string
	host := g.word(5) + "." + g.pick("internal", "example.com", "svc.cluster.local", "corp")
	switch g.r.Intn(10) {
	case 0, 1:
		shape = "url raw specials"
		pw = g.password(" \t'\"`\\<>")
		text = fmt.Sprintf("dial %s://%s:%s@%s:%d/%s?sslmode=require failed", g.pick("postgres", "postgresql", "mysql", "redis", "amqp", "mongodb+srv", "https", "ftp"), g.word(5), pw, host, 1000+g.r.Intn(9000), g.word(4))
	case 2:
		shape = "url percent-escaped"
		raw := g.password(" \t'\"`\\<>")
		pw = strings.NewReplacer("@", "%40", "#", "%23", "/", "%2F", ":", "%3A", "%", "%25").Replace(raw)
		text = fmt.Sprintf("DATABASE_URL=postgres://%s:%s@%s/app", g.word(5), pw, host)
	case 3:
		shape = "jdbc query"
		pw = g.password(" \t'\"`\\<>&;")
		text = fmt.Sprintf("jdbc:mysql://%s:3306/%s?user=%s&password=%s&useSSL=true", host, g.word(4), g.word(4), pw)
	case 4:
		shape = "oracle ezconnect"
		pw = g.password(" \t'\"`\\<>@/")
		text = g.pick(
			fmt.Sprintf("jdbc:oracle:thin:%s/%s@%s:1521/%s", g.word(5), pw, host, g.word(4)),
			fmt.Sprintf("sqlplus %s/%s@//%s:1521/%s", g.word(5), pw, host, g.word(4)),
		)
	case 5:
		shape = "netrc"
		pw = g.password(" \t\n'\"")
		text = fmt.Sprintf("machine %s\n  login %s\n  password %s\n", host, g.word(5), pw)
	case 6:
		shape = "git credential url"
		pw = g.pick("ghp_", "glpat-", "") + g.chars(alnum, 24+g.r.Intn(12))
		text = fmt.Sprintf("fatal: unable to access 'https://%s:%s@github.com/%s/%s.git/': The requested URL returned error: 403", g.pick("x-access-token", "oauth2", g.word(5)), pw, g.word(5), g.word(6))
	case 7:
		shape = "query parameter"
		pw = g.word(3) + g.chars("0123456789", 1) + g.chars(alnum+"-_%", 4+g.r.Intn(36))
		text = fmt.Sprintf("GET https://%s/v1/%s?%s=%s&page=%d", host, g.word(5), g.pick("access_token", "api_key", "token", "key", "sig", "secret", "apikey", "auth", "X-Amz-Signature", "signature"), pw, g.r.Intn(9))
	case 8:
		shape = "pgpass"
		pw = g.password(" \t\n:\\")
		text = fmt.Sprintf("%s:%s:%s:%s:%s", host, g.pick("5432", "*", "6432"), g.pick(g.word(5), "*"), g.word(5), pw)
	default:
		shape = "go mysql dsn"
		pw = g.password(" \t'\"`\\<>@")
		text = fmt.Sprintf("sql.Open: %s:%s@tcp(%s:3306)/%s?parseTime=true", g.word(5), pw, host, g.word(4))
	}
	return planted{"3", shape, g.wrap(text), pw}
}

// Class 4: key material.
func (g *sgen) keyMaterial() (planted, []string) {
	kind := g.pick("RSA PRIVATE KEY", "OPENSSH PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY", "ENCRYPTED PRIVATE KEY", "PGP PRIVATE KEY BLOCK", "DSA PRIVATE KEY")
	nl := g.pick("\n", "\n", `\n`, "\r\n")
	var headers []string
	switch {
	case strings.HasPrefix(kind, "PGP"):
		headers = append(headers, "Version: GnuPG v2", "Comment: "+g.word(8))
	case kind == "RSA PRIVATE KEY" && g.r.Intn(2) == 0:
		headers = append(headers, "Proc-Type: 4,ENCRYPTED", "DEK-Info: AES-128-CBC,"+strings.ToUpper(g.chars(hexLower, 32)))
	}
	var body []string
	for i := 3 + g.r.Intn(6); i > 0; i-- {
		body = append(body, g.chars(b64, 64))
	}
	body = append(body, g.chars(b64, 4+g.r.Intn(40))+g.pick("", "=", "=="))
	if strings.HasPrefix(kind, "PGP") {
		body = append(body, "="+g.chars(b64, 4))
	}
	lines := append([]string{"-----BEGIN " + kind + "-----"}, headers...)
	if len(headers) > 0 {
		lines = append(lines, "")
	}
	lines = append(lines, body...)
	lines = append(lines, "-----END "+kind+"-----")
	shape := "whole"
	switch g.r.Intn(4) {
	case 1: // cut before END
		shape = "no END"
		lines = lines[:len(lines)-1-g.r.Intn(2)]
	case 2: // the text starts inside the block (a tail)
		shape = "starts inside"
		cut := len(lines) - 1 - len(body) + g.r.Intn(len(body)-1)
		first := lines[cut]
		lines = append([]string{first[g.r.Intn(len(first)):]}, lines[cut+1:]...)
	}
	block := strings.Join(lines, nl)
	text := g.pick("key file contents:"+nl, "", "ValueError: could not parse: ", `{"private_key": "`) + block + g.pick("", nl+"at main.go:12", `"}`)
	if shape == "starts inside" {
		text = block + nl + g.logLine()
	}
	var secrets []string
	for _, l := range append(headers[min(len(headers), 1):], body...) {
		if len(l) >= 8 && strings.Contains(text, l) {
			secrets = append(secrets, l)
		}
	}
	return planted{"4", shape + " " + kind, text, ""}, secrets
}

// Class 5: provider credentials by context.
func (g *sgen) providerContext() planted {
	var pw, text, shape string
	switch g.r.Intn(7) {
	case 0:
		shape = "aws id:secret"
		pw = g.chars(alnum+"/+", 40)
		text = fmt.Sprintf("using credentials %s%s%s%s", g.pick("AKIA", "ASIA"), g.chars(upperNum, 16), g.pick(":", " ", ", ", `", "`), pw)
	case 1:
		shape = "aws_secret_access_key"
		pw = g.chars(alnum+"/+", 40)
		text = fmt.Sprintf("[default]\naws_access_key_id = AKIA%s\n%s = %s", g.chars(upperNum, 16), g.pick("aws_secret_access_key", "AWS_SECRET_ACCESS_KEY", "secretAccessKey"), pw)
	case 2:
		shape = "twilio sid token"
		pw = g.chars(hexLower, 32)
		text = fmt.Sprintf("twilio.NewRestClient(%q, %q)", "AC"+g.chars(hexLower, 32), pw)
		if g.r.Intn(2) == 0 {
			text = fmt.Sprintf("client = Client('AC%s', '%s')", g.chars(hexLower, 32), pw)
		}
	case 3:
		shape = "sas signature"
		pw = g.chars(alnum, 20) + "%2B" + g.chars(alnum, 16) + "%2F" + g.chars(alnum, 4) + "%3D"
		text = fmt.Sprintf("PUT https://%s.blob.core.windows.net/%s/x.bin?sv=2022-11-02&se=2025-12-01T00%%3A00%%3A00Z&sr=b&sp=rw&sig=%s failed: 403", g.word(6), g.word(5), pw)
	case 4:
		shape = "basic base64"
		pw = b64enc(g.word(5) + ":" + g.password(" "))
		text = g.pick("curl -H 'Authorization: Basic "+pw+"' https://x.example", "sent credentials Basic "+pw+" to upstream", `{"headers": {"authorization": "Basic `+pw+`"}}`)
	case 5:
		shape = "entropy near word"
		pw = g.chars(alnum, 24+g.r.Intn(16))
		text = fmt.Sprintf("%s %s %s rejected by upstream", g.pick("signing", "using", "got"), g.pick("secret", "token", "api key", "credential", "key"), pw)
	default:
		shape = "hex api key header"
		pw = g.chars(hexLower, 32)
		text = fmt.Sprintf("%s: %s", g.pick("DD-API-KEY", "X-Api-Key", "apikey", "api_key"), pw)
	}
	return planted{"5", shape, g.wrap(text), pw}
}

func b64enc(s string) string {
	const enc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	var b strings.Builder
	for i := 0; i < len(s); i += 3 {
		var n uint32
		k := min(3, len(s)-i)
		for j := 0; j < 3; j++ {
			n <<= 8
			if j < k {
				n |= uint32(s[i+j])
			}
		}
		for j := 0; j < 4; j++ {
			if j <= k {
				b.WriteByte(enc[(n>>(18-6*j))&63])
			} else {
				b.WriteByte('=')
			}
		}
	}
	return b.String()
}

// leaked reports how secret survives in out, judged like the scorer: an
// 8-character window of a long secret, or a short secret as a token, that
// the input did not also hold outside the secret.
func leaked(in, out, secret string) string {
	if secret == "" {
		return ""
	}
	rest := strings.ReplaceAll(in, secret, "\x00")
	if len(secret) < 8 {
		re := regexp.MustCompile(`(^|[^A-Za-z0-9])` + regexp.QuoteMeta(secret) + `($|[^A-Za-z0-9])`)
		if len(re.FindAllStringIndex(out, -1)) > len(re.FindAllStringIndex(rest, -1)) {
			return secret
		}
		return ""
	}
	for i := 0; i+8 <= len(secret); i++ {
		w := secret[i : i+8]
		if strings.Contains(out, w) && !strings.Contains(rest, w) {
			return w
		}
	}
	return ""
}

func checkPlanted(t *testing.T, r *Redactor, c planted) bool {
	t.Helper()
	out := r.Scrub(c.text)
	if w := leaked(c.text, out, c.secret); w != "" {
		t.Errorf("class %s %s: %q survives\n in: %s\nout: %s", c.class, c.shape, w, c.text, out)
		return false
	}
	return true
}

const genCases = 400

func TestGeneratedKeyContext(t *testing.T) {
	g := newSgen(1)
	for i := 0; i < genCases; i++ {
		checkPlanted(t, testRedactor, g.keyContext())
	}
}

func TestGeneratedCommandLines(t *testing.T) {
	g := newSgen(2)
	for i := 0; i < genCases; i++ {
		checkPlanted(t, testRedactor, g.commandLine())
	}
}

func TestGeneratedURLCredentials(t *testing.T) {
	g := newSgen(3)
	for i := 0; i < genCases; i++ {
		checkPlanted(t, testRedactor, g.urlCredential())
	}
}

func TestGeneratedKeyMaterial(t *testing.T) {
	g := newSgen(4)
	for i := 0; i < genCases; i++ {
		c, lines := g.keyMaterial()
		out := testRedactor.Scrub(c.text)
		for _, l := range lines {
			if w := leaked(c.text, out, l); w != "" {
				t.Errorf("%s: %q survives\n in: %s\nout: %s", c.shape, w, c.text, out)
				break
			}
		}
	}
}

func TestGeneratedProviderContext(t *testing.T) {
	g := newSgen(5)
	for i := 0; i < genCases; i++ {
		checkPlanted(t, testRedactor, g.providerContext())
	}
}

// Class 7: the value of every variable whose name holds TOKEN, SECRET, KEY,
// PASSWORD, CREDENTIAL, PASS or PAT is masked wherever it appears, whatever
// its shape, from 6 characters up.
func TestGeneratedEnvValues(t *testing.T) {
	g := newSgen(7)
	for i := 0; i < genCases; i++ {
		name := strings.ToUpper(g.pick("", "deploy_", "ci_", "my_", "gh_", "svc_")) + g.pick("TOKEN", "SECRET", "API_KEY", "PASSWORD", "CREDENTIAL", "PASS", "PAT", "DBPASS", "GITLAB_PAT", "SIGNING_KEY", "Registry_Password")
		var v string
		switch g.r.Intn(4) {
		case 0:
			v = g.word(6 + g.r.Intn(6)) // all lower case
		case 1:
			v = g.chars("0123456789", 6+g.r.Intn(6)) // all digits
		case 2:
			for len(v) < 6 {
				v = g.password(" \t\n")
			}
		default:
			v = g.chars(alnum, 20)
		}
		r := New(Options{Env: []string{"PATH=/usr/bin:/bin", name + "=" + v}})
		text := g.wrap(g.pick("echo %s", "value was %s.", `{"x": "%s"}`, "argv[2]=%s", "got '%s' from the vault"))
		text = strings.Replace(text, "%s", v, 1)
		checkPlanted(t, r, planted{"7", name, text, v})
	}
}

// The look-alikes: values after words of the family that are not secrets,
// and what a maintainer needs. Each must come through unchanged.
func TestGeneratedLookalikesSurvive(t *testing.T) {
	g := newSgen(11)
	for i := 0; i < genCases; i++ {
		n := 1 + g.r.Intn(4096)
		text := g.pick(
			fmt.Sprintf("max_tokens=%d", n),
			fmt.Sprintf("token_count: %d", n),
			fmt.Sprintf("prompt_tokens=%d completion_tokens=%d", n, n/2),
			fmt.Sprintf("auth_mode=%s", g.pick("oidc", "ldap", "saml", "none")),
			fmt.Sprintf("credential_source=%s", g.pick("Ec2InstanceMetadata", "Environment", "EcsContainer")),
			// (the user name after "for user" is masked too: class 6's PII)
			fmt.Sprintf("FATAL: password authentication failed (SQLSTATE 28P0%d)", n%10),
			fmt.Sprintf("loaded tokenizer %s-%d", g.word(5), n),
			"error: token expired; the token is expired",
			fmt.Sprintf("%d tests passed, %d passes, pass=%d fail=0", n, n, n),
			fmt.Sprintf("commit %s", g.chars(hexLower, 40)),
			fmt.Sprintf("sha=%s rev %s", g.chars(hexLower, 40), g.chars(hexLower, 12)),
			fmt.Sprintf("request_id=%s-%s-4%s-8%s-%s", g.chars(hexLower, 8), g.chars(hexLower, 4), g.chars(hexLower, 3), g.chars(hexLower, 3), g.chars(hexLower, 12)),
			fmt.Sprintf("internal/%s/%s.go:%d", g.word(5), g.word(6), n),
			fmt.Sprintf("took %dms, status=%d", n, 500+g.r.Intn(4)),
			fmt.Sprintf("password_min_length=%d token_ttl_seconds=%d", n%20, n),
			fmt.Sprintf("the password is incorrect; the secret %s was not found", g.pick("is missing", "has expired", "is required")),
			fmt.Sprintf("invalid token: signature mismatch (key id %d)", n),
			fmt.Sprintf("ERROR: %s: token refresh failed: %s", g.word(6), g.pick("timeout", "unauthorized", "bad gateway")),
			fmt.Sprintf("mkdir -p build/%s && docker run -p %d:80 app", g.word(4), 1000+n),
			fmt.Sprintf("pulled ghcr.io/acme/%s@sha256:%s", g.word(5), g.chars(hexLower, 64)),
			fmt.Sprintf("%s v1.%d.%d", g.word(6), n%30, n%9),
			fmt.Sprintf("git clone https://github.com/%s/%s.git", g.word(5), g.word(6)),
			fmt.Sprintf("--password-stdin given; reading password from %s", g.pick("stdin", "the keyring")),
			fmt.Sprintf("secret_name=%s-credentials api_version=2024-06-01", g.word(5)),
		)
		if out := testRedactor.Scrub(text); out != text {
			t.Errorf("look-alike changed:\n in: %s\nout: %s", text, out)
		}
	}
}

// TestSecretWordsInOrdinaryText: sentences and code that use the secret
// words without holding a secret come through unchanged.
func TestSecretWordsInOrdinaryText(t *testing.T) {
	for _, text := range []string{
		"Error from server (NotFound): secret my-secret-2 not found",
		"pq: password authentication failed; retrying with password authentication",
		"using key id 1234 from the keyring",
		"auth: passed; pass: 3, fail: 0; pass:3",
		"auth failed: token: signature invalid",
		`if password == "" { return ErrNoPassword }`,
		"def login(username, password):",
		"docker login --password-stdin -u ci ghcr.io",
		"ls -a foo:bar && tar -a -cf out.tar.gz src",
		"docker run -u 1000:1000 -p 8080:80 app",
		"password_hash: $2b$12$abcdefghijklmnopqrstuv",
		"the password is incorrect; the secret is missing; the token was revoked",
		"TokenExpiredError: jwt expired; Token::Invalid raised",
		"key: value pairs are logged at debug level",
		"{Name:worker Token:<nil> Retries:3}",
		"GET /v1/items?key=user-preferences&sort=asc&session=active",
		"fe80:0:0:0:1\n12:30:45:678:abc\nmain.go:12:5:x:y z",
		`sensitive_fields=["password", "email"]; os.Getenv("API_TOKEN")`,
		"session 42 ended; auth_mode=oidc credential_source=Environment",
		"MountVolume.SetUp failed: secret: default/db-creds-2 not mounted",
		"error: token: https://auth.example.com/oauth/token unreachable; password: config.go:42 not readable",
		"error: token: v1.2.3 is too old",
		"the token is valid for 3600 seconds; the secret is stored in vault/prod/db",
	} {
		if out := testRedactor.Scrub(text); out != text {
			t.Errorf("ordinary text changed:\n in: %s\nout: %s", text, out)
		}
	}
}

// TestKeyBlockTails: the tail of a stream cut inside a key, as an agent's
// stderr tail is (lines flattened to spaces, an ellipsis in front), masks
// the key material back to the cut and keeps the text before it.
func TestKeyBlockTails(t *testing.T) {
	g := newSgen(44)
	for i := 0; i < 50; i++ {
		var lines []string
		for j := 2 + g.r.Intn(4); j > 0; j-- {
			lines = append(lines, g.chars(b64, 64))
		}
		lines = append(lines, g.chars(b64, 10)+"==")
		kind := g.pick("RSA PRIVATE KEY", "OPENSSH PRIVATE KEY", "PGP PRIVATE KEY BLOCK")
		sep := g.pick(" ", "\n", `\n`)
		body := strings.Join(lines, sep)[g.r.Intn(40):]
		prefix := g.pick("agent exited with exit status 1: …", "", "stderr: ")
		text := prefix + body + sep + "-----END " + kind + "-----" + sep + "done"
		out := testRedactor.Scrub(text)
		for _, l := range lines {
			for k := 0; k+8 <= len(l); k++ {
				if strings.Contains(body, l[k:k+8]) && strings.Contains(out, l[k:k+8]) {
					t.Fatalf("key material %q survives:\n in: %s\nout: %s", l[k:k+8], text, out)
				}
			}
		}
		if !strings.HasPrefix(out, prefix) || !strings.Contains(out, "-----END "+kind+"-----") {
			t.Errorf("lost the text around the block:\n in: %s\nout: %s", text, out)
		}
	}
}

// TestScrubIsLinearOnRepeatedTriggers: a long line full of one rule's
// trigger (a tool's flag, a header that masks to the end of its line)
// costs time in proportion to its length: each line is searched for tool
// names once, and a header read to its end is not read again per key.
func TestScrubIsLinearOnRepeatedTriggers(t *testing.T) {
	cost := func(s string) time.Duration {
		best := time.Duration(1 << 62)
		for i := 0; i < 5; i++ {
			t0 := time.Now()
			testRedactor.Scrub(s)
			best = min(best, time.Since(t0))
		}
		return best
	}
	for _, unit := range []string{" mysql -p x", " redis-cli -a b", "Authorization: Digest ", "Cookie: a=b ", "sqlplus a/b@c "} {
		small := strings.Repeat(unit, (64<<10)/len(unit))
		large := strings.Repeat(unit, (512<<10)/len(unit))
		cs, cl := cost(small), cost(large)
		// Eight times the text: linear is 8x, quadratic 64x. The floor keeps
		// a loaded machine's noise on small times from failing it: quadratic
		// on 512 KiB of one trigger costs seconds.
		if cl > 24*cs && cl > 250*time.Millisecond {
			t.Errorf("%q: 64 KiB took %v, 512 KiB took %v", unit, cs, cl)
		}
	}
}
