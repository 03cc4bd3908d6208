package redact

import (
	"encoding/base64"
	"strings"
)

// Provider credentials by context. A provider's public id travels with its
// secret: the value right after an access key id (AKIA…:SECRET, a Twilio
// account SID beside its auth token, Alibaba's LTAI… and its secret) is the
// secret, whatever its shape. And "Basic x" is a credential wherever it
// appears when x decodes to user:password.

// pairedIDs are public ids whose secret follows them.
var pairedIDs = []struct {
	prefix  string
	idLen   int
	rest    func(string) bool
	label   string
	secret  func(string) bool // the shape of the secret that follows
	minRest int
}{
	{"AKIA", 20, upperAlnumRest, "aws-secret-key", nil, 30},
	{"ASIA", 20, upperAlnumRest, "aws-secret-key", nil, 30},
	{"LTAI", 0, mixedRest, "alibaba-secret", nil, 24},
	{"AC", 34, hexRest, "twilio-auth-token", hexRest, 32},
}

// findPairedSecrets masks the secret that follows a provider's public id,
// separated by a colon, a comma, an equals sign, quotes or spaces.
func findPairedSecrets(sc *scan) {
	s := sc.s
	for _, pid := range pairedIDs {
		for off := 0; ; {
			i := strings.Index(s[off:], pid.prefix)
			if i < 0 {
				break
			}
			is := off + i
			off = is + len(pid.prefix)
			if is > 0 && runChar(s[is-1]) {
				continue
			}
			ie := is
			for ie < len(s) && runChar(s[ie]) {
				ie++
			}
			id := s[is:ie]
			if (pid.idLen > 0 && len(id) != pid.idLen) || len(id) < 16 || !pid.rest(id[len(pid.prefix):]) {
				continue
			}
			off = ie
			p := ie
			for n := 0; p < len(s) && n < 4 && strings.IndexByte(":,;= \t\"'", s[p]) >= 0; n++ {
				p++
			}
			if p == ie {
				continue
			}
			e := p
			for e < len(s) && (isAlnum(s[e]) || s[e] == '/' || s[e] == '+' || s[e] == '=') {
				e++
			}
			v := s[p:e]
			if len(v) < pid.minRest || isPlaceholderAt(s, p) || (pid.secret != nil && !pid.secret(v)) {
				continue
			}
			if pid.secret == nil && !looksSecret(strings.TrimRight(v, "=")) && !mixedRest(v) {
				continue
			}
			sc.add(p, e, pid.label)
			off = e
		}
	}
}

// basicCredential reports whether v is base64 of user:password.
func basicCredential(v string) bool {
	if len(v) < 8 {
		return false
	}
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		b, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(v, "="))
	}
	if err != nil {
		return false
	}
	c := strings.IndexByte(string(b), ':')
	if c <= 0 || c == len(b)-1 {
		return false
	}
	for _, x := range b {
		if x < ' ' || x > '~' {
			return false
		}
	}
	return true
}

// findBasicCredentials masks "Basic <base64 of user:password>" anywhere:
// curl -H arguments, JSON headers, prose.
func findBasicCredentials(sc *scan) {
	s, lower := sc.s, sc.lower
	for off := 0; ; {
		p := nextWordEnd(lower, off, len(lower), "basic ")
		if p < 0 {
			return
		}
		off = p
		for p < len(s) && s[p] == ' ' {
			p++
		}
		e := base64LineEnd(s, p)
		if e > p && !isPlaceholderAt(s, p) && basicCredential(s[p:e]) {
			sc.add(p, e, "token")
			off = e
		}
	}
}
