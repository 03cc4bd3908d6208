package redact

import (
	"strings"

	"github.com/nyaruka/phonenumbers"
)

// PII: numbers that identify a person (payment cards, IBANs, phone numbers,
// US social security numbers), other people's account names in login and
// permission messages, and machines named under private DNS suffixes.
//
// Numbers are found by one cheap byte scan and then confirmed by what makes
// each kind what it is (a Luhn digit and an issuer prefix, a mod-97 check,
// the SSA's allocation rules, libphonenumber's numbering plans), so the
// numbers a maintainer needs (timestamps, versions, ids, ports, counts) stay.

// findNumbers masks payment cards, US SSNs and phone numbers.
func findNumbers(sc *scan) {
	s := sc.s
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(isDigit(c) || ((c == '+' || c == '(') && i+1 < len(s) && isDigit(s[i+1]))) {
			continue
		}
		if numberGluedBefore(s, i) {
			for i+1 < len(s) && (isAlnum(s[i+1]) || s[i+1] == '_') {
				i++
			}
			continue
		}
		n, ok := readNumber(s, i)
		if !ok {
			i = n.end - 1
			continue
		}
		if label := n.classify(s[i:n.end]); label != "" {
			sc.add(i, n.end, label)
		}
		i = n.end - 1
	}
}

// numberGluedBefore: a number glued to a word, a version, a path, a time or
// an amount is part of that, never a number of its own.
func numberGluedBefore(s string, i int) bool {
	if i == 0 {
		return false
	}
	switch p := s[i-1]; {
	case isAlnum(p) || placeholderEndsAt(s, i):
		return true
	case strings.IndexByte("._-/\\:#@$%&+*^~", p) >= 0:
		return true
	}
	return false
}

// number is the shape of a candidate: digit groups and what separates them.
type number struct {
	end         int
	digits      [20]byte
	nd          int
	groups      [8]int // digits per group
	ng          int
	sep         byte // the one separator between groups (' ', '-', '.'), 0 when none
	plus, paren bool
}

// readNumber reads digit groups separated by one consistent separator, with
// an optional leading '+' or "(area)". ok is false when the run is glued to
// more text after it (2025-11-04T…, 1.2.3-rc1, 10.0.0.1:80) or too long.
func readNumber(s string, i int) (number, bool) {
	var n number
	p := i
	if s[p] == '+' {
		n.plus = true
		p++
	}
	for {
		if s[p] == '(' && !n.paren && n.ng == 0 {
			n.paren = true
			p++
		}
		start := p
		for p < len(s) && isDigit(s[p]) {
			if n.nd < len(n.digits) {
				n.digits[n.nd] = s[p]
			}
			n.nd++
			p++
		}
		if p == start || n.ng == len(n.groups) || n.nd > len(n.digits) {
			n.end = max(p, i+1)
			return n, false
		}
		n.groups[n.ng] = p - start
		n.ng++
		if n.paren && n.ng == 1 {
			if p >= len(s) || s[p] != ')' {
				n.end = p
				return n, false
			}
			p++
			if p < len(s) && s[p] == ' ' {
				p++
			}
			if p >= len(s) || !isDigit(s[p]) {
				n.end = p
				return n, false
			}
			continue
		}
		// International numbers mix spaces and dashes (+81 3-1234-5678).
		if p+1 < len(s) && (s[p] == ' ' || s[p] == '-' || s[p] == '.') && isDigit(s[p+1]) &&
			(n.sep == 0 || n.sep == s[p] || (n.plus && n.sep != '.' && s[p] != '.')) {
			if n.sep == 0 || !n.plus {
				n.sep = s[p]
			}
			p++
			continue
		}
		break
	}
	n.end = p
	if p < len(s) {
		c := s[p]
		if isAlnum(c) || c == '_' || isPlaceholderAt(s, p) {
			return n, false
		}
		if (c == '.' || c == '-' || c == ':' || c == '/' || c == ',') && p+1 < len(s) && isDigit(s[p+1]) {
			return n, false
		}
	}
	return n, true
}

func (n *number) classify(text string) string {
	d := string(n.digits[:min(n.nd, len(n.digits))])
	if !n.plus && !n.paren && n.nd >= 13 && n.nd <= 19 && (n.sep == 0 || n.sep == ' ' || n.sep == '-') && card(d, n) {
		return "card"
	}
	if n.sep == '-' && n.ng == 3 && n.groups[0] == 3 && n.groups[1] == 2 && n.groups[2] == 4 && !n.plus && !n.paren && ssn(d) {
		return "ssn"
	}
	if n.phoneShape(d) && validPhone(text, n) {
		return "phone"
	}
	return ""
}

// card: an issuer's prefix and length, grouped as cards are printed, and a
// valid Luhn check digit.
func card(d string, n *number) bool {
	if n.sep != 0 {
		for k := 0; k < n.ng; k++ {
			if n.groups[k] < 3 || n.groups[k] > 6 {
				return false
			}
		}
	}
	l := len(d)
	p2 := int(d[0]-'0')*10 + int(d[1]-'0')
	p4 := p2*100 + int(d[2]-'0')*10 + int(d[3]-'0')
	issuer := false
	switch {
	case d[0] == '4': // Visa
		issuer = l == 13 || l == 16 || l == 19
	case p2 >= 51 && p2 <= 55, p4 >= 2221 && p4 <= 2720: // Mastercard
		issuer = l == 16
	case p2 == 34 || p2 == 37: // American Express
		issuer = l == 15
	case p4 == 6011 || p2 == 65 || (p4 >= 6440 && p4 <= 6499) || p2 == 62: // Discover, UnionPay
		issuer = l >= 16
	case p4 >= 3528 && p4 <= 3589: // JCB
		issuer = l >= 16
	case (p4 >= 3000 && p4 <= 3059) || p2 == 36 || p2 == 38: // Diners Club
		issuer = l >= 14
	case p2 == 50 || (p2 >= 56 && p2 <= 69): // Maestro
		issuer = l >= 12
	}
	return issuer && luhn(d)
}

func luhn(d string) bool {
	sum := 0
	for i := len(d) - 1; i >= 0; i-- {
		v := int(d[i] - '0')
		if (len(d)-1-i)%2 == 1 {
			v *= 2
			if v > 9 {
				v -= 9
			}
		}
		sum += v
	}
	return sum%10 == 0
}

// ssn: AAA-GG-SSSS as the SSA allocates them: no area 000, 666 or 900-999,
// no group 00, no serial 0000.
func ssn(d string) bool {
	area, group, serial := d[:3], d[3:5], d[5:]
	return area != "000" && area != "666" && area[0] != '9' && group != "00" && serial != "0000"
}

// phoneShape: a number written as a phone number: international (+CC …),
// "(area) …", a national number starting with its trunk prefix 0, or the
// North American 3-3-4 grouping. A bare digit run (an id, a Unix time) is
// not a phone number, whatever libphonenumber would make of it.
func (n *number) phoneShape(d string) bool {
	if n.nd < 7 || n.nd > 15 || n.sep == '.' && n.ng > 4 {
		return false
	}
	for k := 1; k < n.ng; k++ {
		if n.groups[k] < 2 && !n.plus {
			return false
		}
	}
	switch {
	case n.plus:
		return n.ng == 1 || n.ng <= 6
	case n.paren:
		return n.ng >= 2 && n.ng <= 3
	case n.ng == 3 && n.groups[0] == 3 && n.groups[1] == 3 && n.groups[2] == 4:
		return true
	case d[0] == '0' && n.ng >= 2 && n.ng <= 4 && n.sep != 0 && n.groups[0] >= 2 && n.groups[0] <= 5 && n.nd >= 9:
		return true
	}
	return false
}

// trunkRegions are countries whose national numbers start with a trunk
// prefix 0: a "0…" number is checked against each one's numbering plan.
var trunkRegions = []string{"GB", "DE", "FR", "NL", "IT", "AU", "IN", "JP", "CH", "AT", "BE", "SE", "NZ", "ZA", "IE"}

// validPhone asks libphonenumber whether a phone-shaped candidate is a
// number some numbering plan allocates. Only candidates reach it: parsing
// is costly and the byte scan above keeps the text's other numbers away.
func validPhone(text string, n *number) bool {
	regions := trunkRegions
	switch {
	case n.plus:
		regions = []string{"ZZ"}
	case text[0] == '(' || text[0] != '0':
		regions = []string{"US"}
	}
	for _, region := range regions {
		num, err := phonenumbers.Parse(text, region)
		if err != nil {
			continue
		}
		// Written with +country it is meant as a phone number: a plan's
		// length for that country is enough (a new or unlisted range is
		// someone's number too). Other shapes must be allocated numbers.
		if phonenumbers.IsValidNumber(num) || n.plus && phonenumbers.IsPossibleNumber(num) {
			return true
		}
	}
	return false
}

// ibanLengths are the IBAN lengths of the countries that issue them.
var ibanLengths = map[string]int{
	"AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BR": 29,
	"CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24,
	"FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HR": 21,
	"HU": 28, "IE": 22, "IL": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LI": 21,
	"LT": 20, "LU": 20, "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30,
	"NL": 18, "NO": 15, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "SA": 24,
	"SE": 24, "SI": 19, "SK": 24, "SM": 27, "TN": 24, "TR": 26, "UA": 29, "VG": 24, "XK": 20, "LC": 32,
	"SC": 31, "ST": 25, "TL": 23, "BY": 28, "IQ": 23, "SV": 28, "VA": 22, "LY": 25, "SD": 18,
}

func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }

// findIBANs masks IBANs, contiguous or printed in groups of four: a
// country's length and a valid mod-97 check.
func findIBANs(sc *scan) {
	s := sc.s
	for i := 0; i+15 <= len(s); i++ {
		if !isUpper(s[i]) || !isUpper(s[i+1]) || !isDigit(s[i+2]) || !isDigit(s[i+3]) {
			continue
		}
		if i > 0 && (isAlnum(s[i-1]) || s[i-1] == '_' || s[i-1] == '-' || placeholderEndsAt(s, i)) {
			continue
		}
		want, ok := ibanLengths[s[i:i+2]]
		if !ok {
			continue
		}
		var buf [34]byte
		nb := 0
		p := i
		grouped := false
		for p < len(s) && nb < want {
			c := s[p]
			if isDigit(c) || isUpper(c) {
				buf[nb] = c
				nb++
				p++
				continue
			}
			if c == ' ' && nb%4 == 0 && nb > 0 && p+1 < len(s) && (isDigit(s[p+1]) || isUpper(s[p+1])) && (grouped || nb == 4) {
				grouped = true
				p++
				continue
			}
			break
		}
		if nb != want || (p < len(s) && (isAlnum(s[p]) || s[p] == '_')) {
			continue
		}
		if ibanChecksum(buf[:nb]) {
			sc.add(i, p, "iban")
			i = p - 1
		}
	}
}

// ibanChecksum: the country and check digits moved to the end, letters as
// 10..35, the number is 1 mod 97.
func ibanChecksum(b []byte) bool {
	rem := 0
	for k := 0; k < len(b); k++ {
		c := b[(k+4)%len(b)]
		if isDigit(c) {
			rem = (rem*10 + int(c-'0')) % 97
		} else {
			v := int(c-'A') + 10
			rem = (rem*100 + v) % 97
		}
	}
	return rem == 1
}

// privateSuffixes are DNS suffixes no public resolver answers: a name under
// one is a machine of a private network.
var privateSuffixes = []string{
	".svc.cluster.local", ".cluster.local", ".home.arpa", ".internal", ".corp", ".local",
	".lan", ".intranet", ".localdomain", ".private", ".intra", ".svc",
}

// findInternalHosts masks the labels of a host name under a private
// suffix and keeps the suffix, so the reader still sees "an internal name".
// One pass over the dots: a suffix is tried only where its first letter
// follows a dot.
func findInternalHosts(sc *scan) {
	s, lower := sc.s, sc.lower
	for off := 0; ; {
		i := strings.IndexByte(lower[off:], '.')
		if i < 0 || off+i+1 >= len(s) {
			return
		}
		dot := off + i
		off = dot + 1
		switch lower[dot+1] {
		case 's', 'c', 'h', 'i', 'l', 'p':
		default:
			continue
		}
		for _, suf := range privateSuffixes {
			if !strings.HasPrefix(lower[dot:], suf) {
				continue
			}
			e := dot + len(suf)
			if e < len(s) && (nameChar(s[e]) || (s[e] == '.' && e+1 < len(s) && isAlnum(s[e+1]))) {
				continue // config.local.yaml, x.corporate, com.acme.internal.Foo
			}
			p := dot
			for p > 0 && (nameChar(s[p-1]) || (s[p-1] == '.' && p >= 2 && nameChar(s[p-2]))) {
				p--
			}
			if p == dot || !isAlnum(s[p]) || placeholderEndsAt(s, p) || (p > 0 && s[p-1] == '.' && placeholderEndsAt(s, p-1)) ||
				(p > 0 && (s[p-1] == '/' && !(p >= 2 && s[p-2] == '/') || s[p-1] == '\\')) {
				off = e // ~/.local/share, /usr/.local, <redacted:host>.cluster.local
				break
			}
			if w, _ := prevWord(lower, p); w == "import" || w == "package" || w == "from" && strings.HasPrefix(lower[e:], " import") {
				break // a Python or Java module, not a host
			}
			sc.add(p, dot, "host")
			off = e
			break
		}
	}
}

// loginKeys name an account where a quoted or key=value name follows:
// user "x", username='x', login: x, role "x".
var loginKeys = map[string]bool{
	"user": true, "username": true, "user_name": true, "login": true, "logname": true,
	"role": true, "account": true, "db_user": true, "dbuser": true,
}

// notAccountNames are words that follow "for user" in prose, not names.
var notAccountNames = map[string]bool{
	"in": true, "with": true, "and": true, "or": true, "the": true, "a": true, "an": true, "to": true,
	"of": true, "is": true, "was": true, "not": true, "accounts": true, "account": true, "input": true,
	"data": true, "name": true, "names": true, "id": true, "ids": true, "session": true, "sessions": true,
	"agent": true, "interface": true, "who": true, "that": true, "which": true, "on": true, "at": true,
	"from": true, "by": true, "if": true, "when": true, "as": true, "are": true, "has": true, "had": true,
	"requests": true, "request": true, "profile": true, "settings": true, "access": true, "login": true,
}

// findLoginUsers masks the account named in a login or permission message,
// whoever it is: for user x, user 'x', login failed for user "x",
// 'x'@'host', role "x" does not exist, username=x, x is not in the sudoers.
func findLoginUsers(sc *scan) {
	s, lower := sc.s, sc.lower
	for _, kw := range [...]string{"user", "login", "logname", "role", "account"} {
		for off := 0; ; {
			i := strings.Index(lower[off:], kw)
			if i < 0 {
				break
			}
			p := off + i
			off = p + len(kw)
			ws := p // the key's word: db_user, username
			for ws > 0 && (isAlnum(s[ws-1]) || s[ws-1] == '_') && p-ws < 4 {
				ws--
			}
			if ws > 0 && (isAlnum(s[ws-1]) || s[ws-1] == '_') {
				continue
			}
			ke := off
			for ke < len(s) && (isAlnum(s[ke]) || s[ke] == '_') && ke-ws < 12 {
				ke++
			}
			if key := lower[ws:ke]; loginKeys[key] {
				loginValue(sc, key, ke)
			}
		}
	}
	for off := 0; ; {
		i := strings.IndexByte(s[off:], '@')
		if i < 0 {
			break
		}
		close := off + i - 1
		off += i + 1
		if close < 1 {
			continue
		}
		q := s[close]
		if q != '\'' && q != '"' && q != '`' {
			continue
		}
		open := strings.LastIndexByte(s[max(0, close-64):close], q)
		if open < 0 {
			continue
		}
		open += max(0, close-64)
		if v := s[open+1 : close]; v != "" && !strings.ContainsAny(v, " \t\n") && !isPlaceholderAt(s, open+1) {
			sc.add(open+1, close, "user")
		}
	}
	for off := 0; ; {
		i := strings.Index(lower[off:], "sudoers")
		if i < 0 {
			break
		}
		off += i + 1
		const tail = " is not in the "
		if off-1 < len(tail) || lower[off-1-len(tail):off-1] != tail {
			continue
		}
		e := off - 1 - len(tail)
		p := e
		for p > 0 && (nameChar(s[p-1]) || s[p-1] == '.') {
			p--
		}
		if p < e && !isPlaceholderAt(s, p) && !placeholderEndsAt(s, p) {
			sc.add(p, e, "user")
		}
	}
}

// loginValue masks the name after an account key ending at ke.
func loginValue(sc *scan, key string, ke int) {
	s := sc.s
	p := ke
	sep := byte(' ')
	for p < len(s) && s[p] == ' ' {
		p++
	}
	if p < len(s) && (s[p] == '=' || s[p] == ':') {
		sep = s[p]
		p++
		// "logname= uid=0": an empty value, not the next key's name.
		for sep == ':' && p < len(s) && s[p] == ' ' {
			p++
		}
	} else if p == ke {
		return // username_field, user.name
	}
	if p >= len(s) || isPlaceholderAt(s, p) {
		return
	}
	if q := s[p]; q == '"' || q == '\'' || q == '`' {
		end := strings.IndexByte(s[p+1:min(len(s), p+66)], q)
		if end <= 0 {
			return
		}
		v := s[p+1 : p+1+end]
		if strings.ContainsAny(v, " \t\n") || isPlaceholderAt(s, p+1) || trivialValue(v) {
			return
		}
		sc.add(p+1, p+1+end, "user")
		return
	}
	if key == "role" || key == "account" {
		return // an unquoted role or account is a kind (role admin), not a person
	}
	e := p
	for e < len(s) && (nameChar(s[e]) || s[e] == '.' || s[e] == '@' || s[e] == '$') {
		e++
	}
	for e > p && (s[e-1] == '.' || s[e-1] == '-') {
		e--
	}
	if e == p || isPlaceholderAt(s, e) || s[p] == '$' {
		return
	}
	v := strings.ToLower(s[p:e])
	if sep == ' ' {
		// "for user x": a bare name only after "for", and not a word of prose.
		if w, _ := prevWord(sc.lower, ke-len(key)); w != "for" || notAccountNames[v] {
			return
		}
	}
	if trivialValue(v) {
		return
	}
	sc.add(p, e, "user")
}
