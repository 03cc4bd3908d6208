package redact

import (
	"strings"
)

// HTTP credentials: the Authorization header's credential (keeping its
// scheme), every value of a Cookie or Set-Cookie line, and "Bearer X"
// anywhere. findKeyValues routes Authorization and Cookie keys here.

var authSchemes = map[string]bool{
	"bearer": true, "basic": true, "token": true, "bot": true, "negotiate": true, "ntlm": true,
	"apikey": true, "api-key": true, "sso-key": true, "ssws": true, "jwt": true, "key": true,
	"oauth": true, "digest": true, "hmac": true, "splunk": true, "dsn": true, "klaviyo-api-key": true,
	"genieKey": true, "mac": true, "pat": true,
}

// authorizationValue masks the credential of an Authorization header value
// starting at p, keeping the scheme so readers see how the client
// authenticated. AWS SigV4 values are left to the key=value rules
// (Credential=AKIA..., Signature=...).
func authorizationValue(sc *scan, p int) {
	s := sc.s
	q := byte(0)
	if p < len(s) && (s[p] == '"' || s[p] == '\'') {
		q = s[p]
		p++
	} else if strings.HasPrefix(s[p:], `\"`) {
		q = '\\'
		p += 2
	}
	ws := p
	for p < len(s) && (isAlnum(s[p]) || s[p] == '-' || s[p] == '_') {
		p++
	}
	scheme := strings.ToLower(s[ws:p])
	if strings.HasPrefix(scheme, "aws4-") || strings.HasPrefix(scheme, "aws-") || strings.HasPrefix(scheme, "goog4-") {
		return
	}
	if p < len(s) && s[p] == ' ' && authSchemes[scheme] {
		for p < len(s) && s[p] == ' ' {
			p++
		}
		if scheme == "digest" || scheme == "oauth" {
			// Parameter lists: mask to the end of the header value.
			e := p
			for e < len(s) && s[e] != '\n' && s[e] != '\r' && (q == 0 || s[e] != q) {
				e++
			}
			if !isPlaceholderAt(s, p) {
				sc.add(p, e, "token")
			}
			sc.skipTo = e
			return
		}
	} else {
		p = ws
	}
	e := p
	for e < len(s) && s[e] > ' ' && s[e] != '"' && s[e] != '\'' && s[e] != ',' && s[e] != '\\' && s[e] != '<' && s[e] != ']' && s[e] != '}' {
		e++
	}
	if e > p && !trivialValue(s[p:e]) {
		sc.add(p, e, "token")
	}
}

var cookieAttributes = map[string]bool{
	"path": true, "domain": true, "expires": true, "max-age": true, "samesite": true,
	"secure": true, "httponly": true, "priority": true, "partitioned": true, "version": true,
	"comment": true,
}

// cookieValue masks every cookie value on a Cookie or Set-Cookie line,
// keeping names and attributes (Path, Expires, ...).
func cookieValue(sc *scan, p int) {
	s := sc.s
	end := p
	for end < len(s) && s[end] != '\n' && s[end] != '\r' && s[end] != '"' && s[end] != '\\' {
		end++
	}
	sc.skipTo = end
	for p < end {
		for p < end && (s[p] == ' ' || s[p] == ';' || s[p] == '\t') {
			p++
		}
		ns := p
		for p < end && s[p] != '=' && s[p] != ';' {
			p++
		}
		if p >= end || s[p] != '=' {
			continue
		}
		name := strings.ToLower(strings.TrimSpace(s[ns:p]))
		p++
		vs := p
		for p < end && s[p] != ';' && s[p] != ' ' {
			p++
		}
		// theme=dark or lang=en are preferences, not sessions.
		if v := s[vs:p]; len(v) <= 10 && countClasses(v).lower == len(v) {
			continue
		}
		if !cookieAttributes[name] && p > vs && !isPlaceholderAt(s, vs) && !trivialValue(s[vs:p]) {
			sc.add(vs, p, "cookie")
		}
	}
}

// findBearer masks "Bearer <token>" wherever it appears, not only in an
// Authorization header (curl -H, quoted strings, logs).
func findBearer(sc *scan) {
	s, lower := sc.s, sc.lower
	for off := 0; ; {
		p := nextWordEnd(lower, off, len(lower), "bearer ")
		if p < 0 {
			return
		}
		off = p
		for p < len(s) && s[p] == ' ' {
			p++
		}
		e := p
		for e < len(s) && (tokenChar(s[e])) {
			e++
		}
		v := s[p:e]
		if len(v) >= 8 && !isPlaceholderAt(s, p) && (countClasses(v).digit > 0 || len(v) >= 20) && !trivialValue(v) {
			sc.add(p, e, "token")
		}
	}
}
