package redact

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/nyaruka/phonenumbers"
)

// piiGen draws the varied shapes of personal data that real logs carry.
type piiGen struct{ r *rand.Rand }

func newPIIGen(seed int64) *piiGen { return &piiGen{rand.New(rand.NewSource(seed))} }

func (g *piiGen) digits(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('0' + g.r.Intn(10))
	}
	return string(b)
}

func (g *piiGen) pick(xs ...string) string { return xs[g.r.Intn(len(xs))] }

func (g *piiGen) name() string {
	first := g.pick("lena", "omar", "priya", "sven", "ingrid", "tomasz", "fatima", "kwame", "mei", "diego", "anika", "jurgen")
	switch g.r.Intn(4) {
	case 0:
		return first
	case 1:
		return first + "." + g.pick("berg", "novak", "raman", "okafor", "silva")
	case 2:
		return first[:1] + g.pick("castillo", "petrov", "zhang", "mensah")
	}
	return first + g.digits(2)
}

// luhnComplete appends the check digit that makes body pass Luhn.
func luhnComplete(body string) string {
	for d := byte('0'); d <= '9'; d++ {
		if luhn(body + string(d)) {
			return body + string(d)
		}
	}
	panic("unreachable")
}

func (g *piiGen) card() string {
	var pan string
	switch g.r.Intn(5) {
	case 0:
		pan = luhnComplete("4" + g.digits(14))
	case 1:
		pan = luhnComplete(fmt.Sprint(51+g.r.Intn(5)) + g.digits(13))
	case 2:
		pan = luhnComplete(g.pick("34", "37") + g.digits(12))
	case 3:
		pan = luhnComplete("6011" + g.digits(11))
	default:
		pan = luhnComplete(fmt.Sprint(2221+g.r.Intn(500)) + g.digits(11))
	}
	sep := g.pick("", " ", "-")
	if sep == "" {
		return pan
	}
	var groups []string
	sizes := []int{4, 4, 4, 4, 3}
	if len(pan) == 15 {
		sizes = []int{4, 6, 5}
	}
	for p, k := 0, 0; p < len(pan); k++ {
		e := min(len(pan), p+sizes[k])
		groups = append(groups, pan[p:e])
		p = e
	}
	return strings.Join(groups, sep)
}

func (g *piiGen) iban() string {
	countries := []string{"DE", "GB", "FR", "NL", "ES", "IT", "CH", "BE", "PL", "SE"}
	cc := countries[g.r.Intn(len(countries))]
	n := ibanLengths[cc] - 4
	bban := []byte(g.digits(n))
	if cc == "GB" || cc == "NL" {
		for i := 0; i < 4; i++ {
			bban[i] = byte('A' + g.r.Intn(26))
		}
	}
	for ck := 2; ck < 100; ck++ {
		v := fmt.Sprintf("%s%02d%s", cc, ck, bban)
		if ibanChecksum([]byte(v)) {
			if g.r.Intn(2) == 0 {
				return v
			}
			var parts []string
			for i := 0; i < len(v); i += 4 {
				parts = append(parts, v[i:min(len(v), i+4)])
			}
			return strings.Join(parts, " ")
		}
	}
	panic("no check digits")
}

func (g *piiGen) ssn() string {
	for {
		a, gr, s := 1+g.r.Intn(899), 1+g.r.Intn(99), 1+g.r.Intn(9999)
		if a != 666 {
			return fmt.Sprintf("%03d-%02d-%04d", a, gr, s)
		}
	}
}

// phone returns a number libphonenumber's own metadata gives for a region,
// written the way people write it (E.164, international, national).
func (g *piiGen) phone() string {
	regions := []string{"US", "GB", "DE", "FR", "NL", "AU", "IN", "JP", "CH", "BR", "ES", "SE", "IE", "CA"}
	region := regions[g.r.Intn(len(regions))]
	kinds := []phonenumbers.PhoneNumberType{phonenumbers.MOBILE, phonenumbers.FIXED_LINE}
	num := phonenumbers.GetExampleNumberForType(region, kinds[g.r.Intn(2)])
	if num == nil {
		num = phonenumbers.GetExampleNumber(region)
	}
	formats := []phonenumbers.PhoneNumberFormat{phonenumbers.E164, phonenumbers.INTERNATIONAL}
	if region == "US" || region == "CA" || region == "GB" || region == "DE" || region == "FR" || region == "NL" || region == "AU" {
		formats = append(formats, phonenumbers.NATIONAL)
	}
	return phonenumbers.Format(num, formats[g.r.Intn(len(formats))])
}

// usPhone makes a North American number of its own, in the common layouts.
func (g *piiGen) usPhone() string {
	area := g.pick("415", "212", "646", "312", "617", "206", "303", "512")
	ex := fmt.Sprint(2+g.r.Intn(8)) + g.digits(2)
	line := g.digits(4)
	switch g.r.Intn(4) {
	case 0:
		return "(" + area + ") " + ex + "-" + line
	case 1:
		return area + "-" + ex + "-" + line
	case 2:
		return "+1" + area + ex + line
	}
	return "+1 " + area + " " + ex + " " + line
}

func (g *piiGen) publicIPv4() string {
	for {
		a := 11 + g.r.Intn(200)
		if a == 100 || a == 127 || a == 169 || a == 172 || a == 192 || a == 198 || a == 203 {
			continue
		}
		return fmt.Sprintf("%d.%d.%d.%d", a, g.r.Intn(256), g.r.Intn(256), 1+g.r.Intn(254))
	}
}

func (g *piiGen) publicIPv6() string {
	return fmt.Sprintf("2a0%d:%x:%x::%x", 1+g.r.Intn(8), 0x1000+g.r.Intn(0xe000), g.r.Intn(0xffff), 1+g.r.Intn(0xfff))
}

func (g *piiGen) internalHost() string {
	label := g.pick("pg-primary", "redis-7", "billing", "vault", "ldap01", "build-agent-3", "kafka-2", "db")
	mid := g.pick("", "globex.", "eu-west.", "ops.", "payments.")
	suf := g.pick("internal", "corp", "local", "lan", "intranet", "home.arpa", "svc.cluster.local", "cluster.local")
	return label + "." + mid + suf
}

func TestPIIIsMaskedInVariedShapes(t *testing.T) {
	r := New(Options{})
	g := newPIIGen(13)
	type gen struct {
		label string
		make  func() string
		ctx   []string // %s is the value
	}
	gens := []gen{
		{"card", g.card, []string{"charge declined for card %s", `{"pan":"%s","amount":1200}`, "card_number=%s exp=04/29", "Payment failed: %s (insufficient funds)"}},
		{"iban", g.iban, []string{"refund to %s failed", `"iban": "%s"`, "SEPA transfer rejected: account %s closed"}},
		{"ssn", g.ssn, []string{"applicant ssn=%s rejected", "SSN %s does not match the record", `"tax_id":"%s"`}},
		{"phone", g.phone, []string{"sms to %s failed: 21211 invalid number", `"phone": "%s"`, "callback %s not reachable", "twilio: cannot send to %s"}},
		{"phone", g.usPhone, []string{"sms to %s failed", `{"to":"%s"}`, "call %s: busy", "contact: %s"}},
		{"email", func() string { return g.name() + "@" + g.pick("gmail.com", "globex.io", "initech.co.uk") }, []string{"invite failed for %s", "From: <%s>"}},
		{"ip", g.publicIPv4, []string{"rate limited client %s", "Failed password for root from %s port 52113 ssh2", "X-Forwarded-For: %s", `%s - - [04/Nov/2025:15:48:28 +0000] "GET / HTTP/1.1" 200`, "remote_addr=%s"}},
		{"ip", g.publicIPv6, []string{"blocked client %s", "remote_addr=[%s]:443"}},
		{"user", g.name, []string{`FATAL: password authentication failed for user "%s"`, "Access denied for user '%s'@'10.1.2.3'", "Permission denied for user %s", `role "%s" does not exist`, "login failed for user '%s'", "sudo: %s is not in the sudoers file", "username=%s"}},
		{"host", g.internalHost, []string{"dial tcp: lookup %s: no such host", "connect to %s:5432 refused", "https://%s/api/v1 returned 502"}},
	}
	n := 0
	for _, gn := range gens {
		for _, ctx := range gn.ctx {
			for k := 0; k < 6; k++ {
				v := gn.make()
				text := fmt.Sprintf(ctx, v)
				out := r.Scrub(text)
				n++
				leak := v
				if gn.label == "host" {
					leak, _, _ = strings.Cut(v, ".")
				}
				if strings.Contains(out, leak) || !strings.Contains(out, "<redacted:"+gn.label+">") {
					t.Errorf("%s %q not masked as %s:\n in: %s\nout: %s", gn.label, v, gn.label, text, out)
				}
				if again := r.Scrub(out); again != out {
					t.Errorf("not idempotent: %q -> %q", out, again)
				}
			}
		}
	}
	t.Logf("%d PII snippets", n)
}

// TestNumbersAMaintainerNeedsStay: no phone, card or IBAN false positives
// on the numbers of ordinary logs.
func TestNumbersAMaintainerNeedsStay(t *testing.T) {
	r := New(Options{})
	g := newPIIGen(14)
	keep := []string{
		"2025-11-04T15:48:28.483Z", "v0.0.0-20251120153012-c6d07ef7b77e", "1700000000", "1700000000123",
		"took 1h34m8s", "listening on :8080", "HTTP 404", "exit status 137", "line 238", "at main.go:404",
		"commit d7e70cad19461922995d84016e51c6b36d6f3c9f", "request_id=728b93e8-3190-42d3-a67d-53e5753dc98f",
		"Trying 140.82.112.6:443...", "dial tcp 34.120.195.249:443: i/o timeout", "nameserver 8.8.8.8", "127.0.0.1:6379",
		"0.0.0.0:9464", "[::1]:5432", "fe80::1%eth0", "2001:db8::42", "224.0.0.251", "255.255.255.0",
		"processed 27900 rows in 661ms", "pid 93319", "PR #1234", "version 1.22.3", "go1.26.8", "12:30:45.123",
		"2025/11/04 15:48:28", "order 7" + g.digits(15) + " shipped", "api.github.com", "registry.npmjs.org",
		"config.local.yaml", "~/.local/share/the-loop", "com.acme.internal.Foo.bar(Foo.java:42)", "from acme.internal import util",
		"sha256:9aecac22ae386fb856967b282e2a7c91a5a97a327707c2822009bff43a25544a", "user-agent: curl/8.5.0",
		"for user in users:", "Access denied for user", "the user is not authorised", "role admin is required",
		"std::vector<int>::iterator", "authentication failure; logname= uid=0 euid=0 tty=ssh ruser= rhost=", "mac 3c:22:fb:a1:07:9e", "duration=22s attempt=5", "ISBN 978-3-16-148410-0",
		"invoice INV-2025-000123", "build 20251120.4", "tel: 555", "1,234,567 bytes", "GB 2025 report", "DE12 is a label",
		"0x7ffd5c3e9a10", "at 10:15:33 +0000", "port 5432 5433 5434", "123-45-678", "000-12-3456", "666-12-3456",
	}
	for i := 0; i < 60; i++ {
		keep = append(keep, fmt.Sprintf("attempt %d/%d after %dms (status %d)", i%5+1, 5, g.r.Intn(100000), 200+g.r.Intn(400)))
		keep = append(keep, fmt.Sprintf("job %s took %d.%03ds", g.digits(9), g.r.Intn(100), g.r.Intn(1000)))
	}
	for _, text := range keep {
		if out := r.Scrub(text); out != text {
			t.Errorf("ordinary number changed:\n in: %s\nout: %s", text, out)
		}
	}
}
