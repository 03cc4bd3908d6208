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
	for _, proto := range [...]string{"@tcp(", "@unix(", "@udp(", "@tcp6("} {
		for off := 0; ; {
			i := strings.Index(s[off:], proto)
			if i < 0 {
				break
			}
			at := off + i
			off = at + len(proto)
			us := at
			for us > 0 && !urlTokenEnd(s[us-1]) {
				us--
			}
			if us < at && !isPlaceholderAt(s, us) {
				userinfo(sc, us, at)
			}
		}
	}
	findOracleConnect(sc)
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
	for at := slash - 1; at > as; at-- {
		if s[at] == '@' && hostFollows(s, at+1, te) {
			return at
		}
	}
	// A '/' in the password: user:pa/ss@host. Only a user:password start
	// (not host:port) may reach past the first '/'.
	c := strings.IndexByte(s[as:slash], ':')
	if c <= 0 || slash >= te || allPortChars(s[as+c+1:slash]) || strings.ContainsAny(s[as:as+c], "@?#") {
		return -1
	}
	for at := slash + 1; at < te; at++ {
		if s[at] == '@' && hostFollows(s, at+1, te) {
			return at
		}
		if s[at] == '/' && at+1 < te && s[at+1] == '/' {
			return -1
		}
	}
	return -1
}

// hostFollows reports whether s[i:te] starts with a host: a name or an
// address, an optional :port, then the path, query, fragment or the end.
func hostFollows(s string, i, te int) bool {
	j := i
	if j < te && s[j] == '[' { // [::1]
		k := strings.IndexByte(s[j:te], ']')
		if k < 0 {
			return false
		}
		j += k + 1
	} else {
		for j < te && (isAlnum(s[j]) || s[j] == '.' || s[j] == '-' || s[j] == '_') {
			j++
		}
		if j == i {
			return false
		}
	}
	if j < te && s[j] == ':' {
		j++
		for j < te && (isDigit(s[j]) || s[j] == ',') {
			j++
		}
	}
	return j == te || s[j] == '/' || s[j] == '?' || s[j] == '#' || s[j] == ')' || s[j] == ',' || s[j] == ';' || s[j] == '.' && j+1 == te
}

// oracleTools take user/password[@connect] as an argument.
var oracleTools = []string{"sqlplus", "sqlldr", "expdp", "impdp", "rman", "dgmgrl", "exp ", "imp ", "userid=", "connect "}

// findOracleConnect masks the password of Oracle's user/password@service,
// in JDBC thin URLs (jdbc:oracle:thin:user/pass@host:1521/svc) and as the
// argument of Oracle's tools (sqlplus scott/tiger@orcl).
func findOracleConnect(sc *scan) {
	s, lower := sc.s, sc.lower
	for off := 0; ; {
		i := strings.Index(lower[off:], "thin:")
		if i < 0 {
			break
		}
		p := off + i + len("thin:")
		off = p
		oracleUserPassword(sc, p, true)
	}
	for _, tool := range oracleTools {
		for off := 0; ; {
			i := strings.Index(lower[off:], tool)
			if i < 0 {
				break
			}
			p := off + i + len(tool)
			off = p
			if tool[len(tool)-1] != ' ' && tool[len(tool)-1] != '=' {
				if p < len(s) && s[p] != ' ' {
					continue
				}
			}
			// The first argument that is not a flag.
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
			if strings.HasPrefix(lower[p:], "target ") || strings.HasPrefix(lower[p:], "auxiliary ") {
				p = strings.IndexByte(s[p:], ' ') + p + 1
			}
			oracleUserPassword(sc, p, false)
		}
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
