package redact

import "strings"

// Credentials in URLs and connection strings. The userinfo of a URL ends
// at the LAST '@' before the host, because a raw password may hold '#',
// '@', '?', '%' and even '/' (clients pass it through unescaped): the host
// is what follows that '@' — a host name or address, an optional port, then
// the path, the query or the end of the token. Oracle's EZConnect
// user/password@service and Go's MySQL user:password@tcp(host) have their
// own shapes and are read by theirs.

// findURLSecrets masks the password in scheme://user:password@host (and a
// user part that is itself a token, https://ghs_x@github.com), in Go MySQL
// DSNs and in Oracle connect strings.
func findURLSecrets(sc *scan) {
	s := sc.s
	for off := 0; ; {
		i := strings.Index(s[off:], "://")
		if i < 0 {
			break
		}
		as := off + i + 3
		off = as
		te := as
		for te < len(s) && !urlTokenEnd(s[te]) {
			te++
		}
		if at := userinfoEnd(s, as, te); at > as {
			userinfo(sc, as, at)
			off = at
		}
	}
	for off := 0; ; {
		i := strings.IndexByte(s[off:], '@')
		if i < 0 {
			break
		}
		at := off + i
		off = at + 1
		if !(strings.HasPrefix(s[at:], "@tcp(") || strings.HasPrefix(s[at:], "@unix(") || strings.HasPrefix(s[at:], "@udp(") || strings.HasPrefix(s[at:], "@tcp6(")) {
			oracleConnect(sc, at)
			continue
		}
		us := at
		for us > 0 && !urlTokenEnd(s[us-1]) {
			us--
		}
		if us < at && !isPlaceholderAt(s, us) {
			userinfo(sc, us, at)
		}
	}
	if strings.Contains(sc.lower, "sqlplus") {
		findOracleLocalLogins(sc)
	}
	findPgpass(sc)
}

// urlTokenEnd ends a URL token: whitespace, quotes and the brackets that
// enclose URLs in prose and markup.
func urlTokenEnd(c byte) bool {
	return c <= ' ' || c == '"' || c == '\'' || c == '`' || c == '<' || c == '>' || c == '\\'
}

// userinfoEnd returns the '@' that ends the userinfo of the authority
// starting at as (token end te), or -1.
func userinfoEnd(s string, as, te int) int {
	slash := as
	for slash < te && s[slash] != '/' {
		slash++
	}
	// Without '/' in the password: the last '@' before the first '/' that
	// a host follows.
	first, strength := -1, 0
	for at := slash - 1; at > as; at-- {
		if s[at] == '@' {
			if strength = hostFollows(s, at+1, te); strength > 0 {
				first = at
				break
			}
		}
	}
	if first >= 0 && strength == 2 {
		return first
	}
	// A '/' in the password: user:pa/ss@host. Only a user:password start
	// (not host:port) may reach past the first '/', and only to a host
	// named with a dot, a port or an address; a bare name after the first
	// '@' is weaker evidence than that.
	c := strings.IndexByte(s[as:slash], ':')
	if c <= 0 || slash >= te || (as+c+1 < slash && allPortChars(s[as+c+1:slash])) || strings.ContainsAny(s[as:as+c], "@?#") {
		return first
	}
	for at := slash + 1; at < te; at++ {
		if s[at] == '@' {
			if st := hostFollows(s, at+1, te); st == 2 || (st == 1 && first < 0) {
				return at
			}
		}
		if s[at] == '/' && at+1 < te && s[at+1] == '/' {
			break
		}
	}
	return first
}

// hostFollows reports whether s[i:te] starts with a host: a name or an
// address, an optional :port, then the path, query, fragment or the end.
// It returns 2 for a host with a dot, a port or brackets, 1 for a bare
// name (db, cache), 0 for no host.
func hostFollows(s string, i, te int) int {
	j := i
	strong := false
	// A seed list (mongodb://u:p@a:27017,b:27017) is hosts joined by ','.
	for {
		var st int
		st, j = oneHost(s, j, te)
		if st == 0 {
			return 0
		}
		strong = strong || st == 2
		if !(j+1 < te && s[j] == ',' && (isAlnum(s[j+1]) || s[j+1] == '[')) {
			break
		}
		j++
	}
	// Then the path, query or fragment, or punctuation closing the token
	// in prose ("…@db:5432: refused", "(…@db).").
	if !(j == te || s[j] == '/' || s[j] == '?' || s[j] == '#' || strings.Trim(s[j:te], ".,;:)]}!") == "") {
		return 0
	}
	if strong {
		return 2
	}
	return 1
}

// oneHost reads one host[:port] at i: 2 for a host with a dot, a port or
// brackets, 1 for a bare name, 0 for none; and where it ends.
func oneHost(s string, i, te int) (int, int) {
	j := i
	strong := false
	if j < te && s[j] == '[' { // [::1]
		k := strings.IndexByte(s[j:te], ']')
		if k < 0 {
			return 0, j
		}
		j += k + 1
		strong = true
	} else {
		for j < te && (isAlnum(s[j]) || s[j] == '.' || s[j] == '-' || s[j] == '_') {
			if s[j] == '.' && j > i && j+1 < te && isAlnum(s[j+1]) {
				strong = true
			}
			j++
		}
		if j == i {
			return 0, j
		}
	}
	if j+1 < te && s[j] == ':' && isDigit(s[j+1]) {
		strong = true
		j++
		for j < te && isDigit(s[j]) {
			j++
		}
	}
	if strong {
		return 2, j
	}
	return 1, j
}

// oracleTools take user/password[@connect] as an argument.
var oracleTools = []string{"sqlplus", "sqlldr", "expdp", "impdp", "rman", "dgmgrl", "exp ", "imp ", "userid=", "connect ", "oracle"}

// oracleConnect masks the password of Oracle's user/password@service that
// ends at the '@' at, in JDBC thin URLs (jdbc:oracle:thin:user/pass@h:1521/s)
// and as the argument of Oracle's tools (sqlplus scott/tiger@orcl).
func oracleConnect(sc *scan, at int) {
	s := sc.s
	ts := at
	for ts > 0 && !urlTokenEnd(s[ts-1]) {
		ts--
	}
	if c := strings.LastIndex(s[ts:at], "thin:"); c >= 0 {
		oracleUserPassword(sc, ts+c+len("thin:"), true)
		return
	}
	if eq := strings.IndexByte(s[ts:at], '='); eq >= 0 {
		ts += eq + 1 // userid=u/p@db
	}
	// Exactly one '/' between user and '@': image@sha256 and paths have more.
	if sl := strings.IndexByte(s[ts:at], '/'); sl <= 0 || strings.IndexByte(s[ts+sl+1:at], '/') >= 0 || s[ts] == '-' {
		return
	}
	if sc.lineHas(at, oracleTools) {
		oracleUserPassword(sc, ts, true)
	}
}

// findOracleLocalLogins masks sqlplus user/password without a connect
// identifier: the first argument that is not a flag.
func findOracleLocalLogins(sc *scan) {
	s, lower := sc.s, sc.lower
	for off := 0; ; {
		i := strings.Index(lower[off:], "sqlplus ")
		if i < 0 {
			return
		}
		p := off + i + len("sqlplus ")
		off = p
		for {
			for p < len(s) && (s[p] == ' ' || s[p] == '\t') {
				p++
			}
			if p < len(s) && s[p] == '-' {
				for p < len(s) && s[p] > ' ' {
					p++
				}
				continue
			}
			break
		}
		oracleUserPassword(sc, p, false)
	}
}

// oracleUserPassword masks the password of user/password[@connect] at p.
func oracleUserPassword(sc *scan, p int, needAt bool) {
	s := sc.s
	if p < len(s) && (s[p] == '"' || s[p] == '\'') {
		p++
	}
	us := p
	for p < len(s) && (isAlnum(s[p]) || s[p] == '_' || s[p] == '$' || s[p] == '#' || s[p] == '.') {
		p++
	}
	if p == us || p >= len(s) || s[p] != '/' || (p+1 < len(s) && s[p+1] == '/') {
		return
	}
	ps := p + 1
	te := ps
	for te < len(s) && !urlTokenEnd(s[te]) {
		te++
	}
	pe := strings.LastIndexByte(s[ps:te], '@')
	if pe < 0 {
		if needAt {
			return
		}
		pe = te - ps
	}
	if pe > 0 && !isPlaceholderAt(s, ps) && !trivialValue(s[ps:ps+pe]) {
		sc.add(ps, ps+pe, "password")
	}
}

// findPgpass masks the password of .pgpass lines,
// host:port:database:user:password — a line of exactly five fields with
// no spaces, a port (or *) second and a user name with a letter fourth.
func findPgpass(sc *scan) {
	s := sc.s
	for ls := 0; ls < len(s); {
		le := strings.IndexByte(s[ls:], '\n')
		if le < 0 {
			le = len(s)
		} else {
			le += ls
		}
		line := strings.TrimRight(s[ls:le], "\r")
		if strings.Count(line, ":") == 4 && !strings.ContainsAny(line, " \t") {
			f := strings.Split(line, ":")
			portOK := f[1] == "*" || (f[1] != "" && strings.Trim(f[1], "0123456789") == "")
			if portOK && f[0] != "" && f[2] != "" && f[4] != "" && strings.IndexFunc(f[3], func(r rune) bool { return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' }) >= 0 && strings.IndexFunc(f[0], func(r rune) bool { return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || r == '*' }) >= 0 {
				ps := ls + len(line) - len(f[4])
				if !isPlaceholderAt(s, ps) && !trivialValue(f[4]) {
					sc.add(ps, ls+len(line), "password")
				}
			}
		}
		ls = le + 1
	}
}
