package redact

import (
	"net/netip"
	"strings"
)

// userinfo masks the secret part of s[start:end], a URL's user[:password].
func userinfo(sc *scan, start, end int) {
	s := sc.s
	ui := s[start:end]
	if c := strings.IndexByte(ui, ':'); c >= 0 {
		if c+1 < len(ui) && !isPlaceholderAt(s, start+c+1) {
			sc.add(start+c+1, end, "url-credentials")
		}
		return
	}
	if looksSecret(ui) || prefixLabel(ui) != "" {
		sc.add(start, end, "url-credentials")
	}
}

func authorityEnd(c byte) bool {
	return c <= ' ' || c == '/' || c == '?' || c == '#' || c == '"' || c == '\'' || c == '`' || c == '<' || c == '>' || c == '\\' || c == ')' || c == '(' || c == ','
}

// webhookURLs are URLs whose path is the credential.
var webhookURLs = []string{
	"hooks.slack.com/services/", "hooks.slack.com/workflows/", "hooks.slack.com/triggers/",
	"discord.com/api/webhooks/", "discordapp.com/api/webhooks/", ".webhook.office.com/webhookb2/",
	"outlook.office.com/webhook/", "hooks.zapier.com/hooks/catch/",
	"api.telegram.org/bot", "hooks.mattermost.com/", "maker.ifttt.com/trigger/",
}

func findWebhooks(sc *scan) {
	s, lower := sc.s, sc.lower
	if !strings.Contains(lower, "hook") && !strings.Contains(lower, "api.telegram.org") && !strings.Contains(lower, "ifttt.com") {
		return
	}
	for _, w := range webhookURLs {
		for off := 0; ; {
			i := strings.Index(lower[off:], w)
			if i < 0 {
				break
			}
			p := off + i + len(w)
			off = p
			e := p
			for e < len(s) && !(s[e] <= ' ' || s[e] == '"' || s[e] == '\'' || s[e] == '`' || s[e] == '<' || s[e] == '>' || s[e] == ')' || s[e] == '\\') {
				e++
			}
			if e-p >= 8 && !isPlaceholderAt(s, p) {
				sc.add(p, e, "webhook")
			}
		}
	}
}

// findEmails masks e-mail addresses. "git@github.com" (an SSH remote) and
// URL user names (handled by the URL rules) are not addresses.
func findEmails(sc *scan) {
	s := sc.s
	for off := 0; ; {
		i := strings.IndexByte(s[off:], '@')
		if i < 0 {
			return
		}
		at := off + i
		off = at + 1
		ls := at
		for ls > 0 && emailLocalChar(s[ls-1]) {
			ls--
		}
		for ls < at && s[ls] == '.' {
			ls++
		}
		if ls == at {
			continue
		}
		de := at + 1
		lastDot := -1
		for de < len(s) && (isAlnum(s[de]) || s[de] == '-' || s[de] == '.') {
			if s[de] == '.' {
				lastDot = de
			}
			de++
		}
		for de > at+1 && (s[de-1] == '.' || s[de-1] == '-') {
			de--
		}
		if lastDot < 0 || lastDot >= de-2 || lastDot <= at+1 {
			continue
		}
		tld := s[lastDot+1 : de]
		if !allLetters(tld) {
			continue
		}
		local := s[ls:at]
		if local == "git" || (ls >= 3 && s[ls-3:ls] == "://") {
			continue
		}
		if ls > 0 && s[ls-1] == ':' && urlUserinfoBefore(s, ls-1) {
			continue
		}
		sc.add(ls, de, "email")
		off = de
	}
}

func emailLocalChar(c byte) bool {
	return isAlnum(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-'
}

func allLetters(v string) bool {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return v != ""
}

// urlUserinfoBefore reports whether s[:colon] ends in "scheme://user".
func urlUserinfoBefore(s string, colon int) bool {
	i := colon
	for i > 0 && !authorityEnd(s[i-1]) && s[i-1] != ':' {
		i--
	}
	return i >= 3 && s[i-3:i] == "://"
}

// findIPs masks IP addresses that identify a machine someone owns: every
// private address (it maps an internal network) and every public one except
// where this process dialled it (Trying X, dial tcp X, connect to X: a public
// service). Loopback, unspecified, link-local, multicast, documentation and
// benchmark ranges and the well-known public resolvers say nothing about
// anyone and stay.
func findIPs(sc *scan) {
	s := sc.s
	// Jump from dot to dot: an address's first octet ends at its first dot.
	for off := 0; ; {
		d := strings.IndexByte(s[off:], '.')
		if d < 0 {
			break
		}
		d += off
		off = d + 1
		i := d
		for i > 0 && d-i < 4 && isDigit(s[i-1]) {
			i--
		}
		if i == d || d-i > 3 || (i > 0 && (s[i-1] == '.' || s[i-1] == '-' || s[i-1] == '_')) || gluedBefore(s, i) {
			continue
		}
		var oct [4]byte
		p := i
		ok := true
		for k := 0; k < 4; k++ {
			if k > 0 {
				if p >= len(s) || s[p] != '.' {
					ok = false
					break
				}
				p++
			}
			n, digits := 0, 0
			for p < len(s) && isDigit(s[p]) && digits < 4 {
				n = n*10 + int(s[p]-'0')
				p++
				digits++
			}
			if digits == 0 || digits > 3 || n > 255 {
				ok = false
				break
			}
			oct[k] = byte(n)
		}
		if !ok {
			continue
		}
		if gluedAfter(s, p) || p < len(s) && (s[p] == '_' || (s[p] == '.' && p+1 < len(s) && isDigit(s[p+1]))) {
			for p < len(s) && (isAlnum(s[p]) || s[p] == '.' || s[p] == '_') {
				p++ // 1.2.3.4.5, 10.0.0.1a: not an address; skip the whole run
			}
			off = p
			continue
		}
		if maskIP(netip.AddrFrom4(oct), sc.lower, i) {
			sc.add(i, p, "ip")
		}
		off = p
	}
	findIPv6(sc)
}

// wellKnownResolvers are public DNS services: naming one identifies nobody.
var wellKnownResolvers = map[netip.Addr]bool{}

func init() {
	for _, a := range [...]string{"8.8.8.8", "8.8.4.4", "1.1.1.1", "1.0.0.1", "9.9.9.9", "149.112.112.112",
		"208.67.222.222", "208.67.220.220", "4.2.2.1", "4.2.2.2", "64.6.64.6", "94.140.14.14",
		"2001:4860:4860::8888", "2001:4860:4860::8844", "2606:4700:4700::1111", "2606:4700:4700::1001", "2620:fe::fe", "2620:fe::9"} {
		wellKnownResolvers[netip.MustParseAddr(a)] = true
	}
}

var keptPrefixes = func() (out []netip.Prefix) {
	for _, p := range [...]string{"0.0.0.0/8", "192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "198.18.0.0/15",
		"192.0.0.0/24", "240.0.0.0/4", "2001:db8::/32", "100::/64"} {
		out = append(out, netip.MustParsePrefix(p))
	}
	return out
}()

var cgnat = netip.MustParsePrefix("100.64.0.0/10")

func maskIP(a netip.Addr, lower string, at int) bool {
	if a.IsPrivate() || cgnat.Contains(a) {
		return true
	}
	if a.IsLoopback() || a.IsUnspecified() || a.IsLinkLocalUnicast() || a.IsMulticast() || a.IsLinkLocalMulticast() ||
		!a.IsGlobalUnicast() || wellKnownResolvers[a] {
		return false
	}
	for _, p := range keptPrefixes {
		if p.Contains(a) {
			return false
		}
	}
	return !dialled(lower, at)
}

// dialWords precede an address this process connected to.
var dialWords = []string{"trying ", "connect to ", "connecting to ", "connected to ", "dial tcp ", "dial udp ",
	"dial tcp4 ", "dial tcp6 ", "dial ", "resolved to ", "upstream ", "proxying to ", "-> "}

// dialled reports whether the address at i follows a dial word, or is the
// "(addr)" of curl's "Connected to host (addr)".
func dialled(lower string, i int) bool {
	w := lower[max(0, i-48):i]
	w = strings.TrimRight(w, "[")
	for _, d := range dialWords {
		if strings.HasSuffix(w, d) {
			return true
		}
	}
	if strings.HasSuffix(w, " (") {
		if k := strings.LastIndex(w, "connected to "); k >= 0 && !strings.ContainsAny(w[k+13:len(w)-2], " \t\n") {
			return true
		}
	}
	return false
}

// findIPv6 masks unique-local (fc00::/7) and global addresses by the same
// rule as IPv4. Candidates are the hex groups before a colon that start
// with the first digit of one of those ranges.
func findIPv6(sc *scan) {
	s := sc.s
	// Jump from colon to colon: an address's first group ends at one.
	for off := 0; ; {
		j := strings.IndexByte(s[off:], ':')
		if j < 0 {
			return
		}
		j += off
		off = j + 1
		i := j
		for i > 0 && j-i < 5 && isHex(s[i-1]) {
			i--
		}
		if i == j || j-i == 5 {
			continue
		}
		if c := s[i]; c != '2' && c != '3' && c != 'f' && c != 'F' {
			continue
		}
		if i > 0 && (isAlnum(s[i-1]) || s[i-1] == ':' || s[i-1] == '.' || s[i-1] == '_' || s[i-1] == '-' || placeholderEndsAt(s, i)) {
			continue
		}
		e := j
		colons := 0
		for e < len(s) && (isHex(s[e]) || s[e] == ':' || s[e] == '.') && e-i < 45 {
			if s[e] == ':' {
				colons++
			}
			e++
		}
		for e > i && (s[e-1] == ':' && !(e-2 > i && s[e-2] == ':') || s[e-1] == '.') {
			e--
			if s[e] == ':' {
				colons--
			}
		}
		if colons < 2 || (colons < 7 && !strings.Contains(s[i:e], "::")) || (e < len(s) && (isAlnum(s[e]) || s[e] == '_' || isPlaceholderAt(s, e))) {
			continue
		}
		a, err := netip.ParseAddr(s[i:e])
		if err != nil || a.Is4In6() {
			continue
		}
		if a.Is6() && (maskIP(a, sc.lower, i) || (a.As16()[0]&0xfe) == 0xfc) {
			sc.add(i, e, "ip")
		}
		off = max(off, e)
	}
}

// homeDirMarkers precede a user name in a home directory path.
var homeDirMarkers = []string{"/home/", "/Users/", `\Users\`, `\\Users\\`}

var notUserDirs = map[string]bool{"Shared": true, "Public": true, "Default": true, "All Users": true, "Default User": true}

// findHomePaths masks the user name in /home/<u>/, /Users/<u>/ and
// C:\Users\<u>\ for any user, not only this machine's.
func findHomePaths(sc *scan) {
	s := sc.s
	for _, m := range homeDirMarkers {
		for off := 0; ; {
			i := strings.Index(s[off:], m)
			if i < 0 {
				break
			}
			p := off + i + len(m)
			off = p
			e := p
			for e < len(s) && (isAlnum(s[e]) || s[e] == '_' || s[e] == '-' || s[e] == '.') {
				e++
			}
			name := s[p:e]
			if name == "" || notUserDirs[name] || name == "." || name == ".." || isPlaceholderAt(s, p) {
				continue
			}
			sc.add(p, e, "user")
		}
	}
}

// findIdentity masks this machine's home directory, user name and host name
// where they stand as identity. A name that cannot be an ordinary word (it
// holds a digit or a separator: ci-runner-7, jdoe42, web-01.prod.example.com)
// is masked wherever it stands as a whole token; a name that can be a word
// (root, dev, loop, runner, api, build) only in a slot that names an account
// or a machine (user@host, user=NAME, "runs as NAME", host=NAME, "node NAME",
// a syslog line's host field), never as a bare word or inside another word.
func (r *Redactor) findIdentity(sc *scan) {
	s, lower := sc.s, sc.lower
	if r.home != "" {
		for off := 0; ; {
			i := strings.Index(s[off:], r.home)
			if i < 0 {
				break
			}
			p := off + i
			e := p + len(r.home)
			off = e
			if p > 0 && (keyChar(s[p-1]) || s[p-1] == '/') {
				continue
			}
			if e < len(s) && (isAlnum(s[e]) || s[e] == '_' || s[e] == '-') {
				continue
			}
			sc.add(p, e, "home")
		}
	}
	if r.user != "" {
		for off := 0; ; {
			i := strings.Index(s[off:], r.user)
			if i < 0 {
				break
			}
			p := off + i
			e := p + len(r.user)
			off = p + 1
			if !wholeName(s, p, e) {
				continue
			}
			if r.userDistinct || userSlot(s, lower, p, e) {
				sc.add(p, e, "user")
			}
		}
	}
	for k, h := range r.hosts {
		for off := 0; ; {
			i := strings.Index(lower[off:], h)
			if i < 0 {
				break
			}
			p := off + i
			e := p + len(h)
			off = p + 1
			if gluedNameBefore(s, p) || (p > 0 && s[p-1] == '.') || gluedNameAfter(s, e) {
				continue
			}
			// "api" before ".github.com" is another machine's first label;
			// a distinctive short name, or the labels of this machine's own
			// FQDN, before a dot are this machine.
			if te := hostTokenEnd(s, p); te > e && !r.hostDistinct[k] {
				full := r.hosts[0]
				if tok := lower[p:te]; !strings.HasPrefix(full, tok) || (len(tok) < len(full) && full[len(tok)] != '.') {
					continue
				}
				sc.add(p, e, "host")
				continue
			}
			if r.hostDistinct[k] || hostSlot(s, lower, p, e) {
				sc.add(p, e, "host")
			}
		}
	}
}

// nameChar is a character of a user or host name token.
func nameChar(c byte) bool { return isAlnum(c) || c == '_' || c == '-' }

// gluedNameBefore/After report whether a name at s[p:e] is part of a longer
// name (the-loop, runner-pool, dev_server) or touches a placeholder.
func gluedNameBefore(s string, p int) bool {
	return p > 0 && (nameChar(s[p-1]) || placeholderEndsAt(s, p))
}

func gluedNameAfter(s string, e int) bool {
	return e < len(s) && (nameChar(s[e]) || isPlaceholderAt(s, e))
}

// wholeName reports whether s[p:e] stands alone as a name: not glued to a
// longer name, not a file extension or a domain label (.dev, dev.example).
func wholeName(s string, p, e int) bool {
	if gluedNameBefore(s, p) || gluedNameAfter(s, e) {
		return false
	}
	if p > 0 && s[p-1] == '.' {
		return false
	}
	return !(e+1 < len(s) && s[e] == '.' && isAlnum(s[e+1]))
}

// hostTokenEnd returns the end of the host-name token starting at p.
func hostTokenEnd(s string, p int) int {
	e := p
	for e < len(s) && (nameChar(s[e]) || s[e] == '.') {
		e++
	}
	for e > p && s[e-1] == '.' {
		e--
	}
	return e
}

// distinctiveName reports whether a name cannot be an ordinary word: it holds
// a digit or a separator.
func distinctiveName(n string) bool {
	for i := 0; i < len(n); i++ {
		if distinctiveByte(n[i]) {
			return true
		}
	}
	return false
}

// distinctiveByte is what makes a name distinctive: a digit, '-', '_', '.'.
func distinctiveByte(c byte) bool { return isDigit(c) || c == '-' || c == '_' || c == '.' }

// accountSlotWords precede an account name: "user alice", "runs as alice",
// "sudo -u alice", "owned by alice".
var accountSlotWords = map[string]bool{
	"user": true, "username": true, "user_name": true, "login": true, "logname": true, "as": true,
	"owner": true, "by": true, "uid": true, "su": true, "-u": true, "account": true, "usr": true,
}

// hostSlotWords precede a machine name: "host build", "node api", "on server".
var hostSlotWords = map[string]bool{
	"host": true, "hostname": true, "node": true, "machine": true, "on": true, "server_name": true,
	"nodename": true, "instance": true, "worker": true,
}

// userSlot reports whether the word at s[p:e] stands where an account name
// does: user@host, after an account key or word, the user column of a ps
// row, before "is not in the sudoers file", uid=N(name), ~name.
func userSlot(s, lower string, p, e int) bool {
	if e+1 < len(s) && s[e] == '@' && isAlnum(s[e+1]) {
		return true
	}
	if p > 0 && s[p-1] == '~' {
		return true
	}
	if p > 0 && s[p-1] == '(' && e < len(s) && s[e] == ')' && p >= 2 && isDigit(s[p-2]) {
		return true // uid=1000(alice)
	}
	if strings.HasPrefix(lower[e:], " is not in the sudoers") {
		return true
	}
	if psRow(s, e) {
		return true
	}
	w, _ := prevWord(lower, p)
	return accountSlotWords[w]
}

// hostSlot reports whether the word at s[p:e] stands where a machine name
// does: after '@' or "://", after a host key or word, a syslog host field.
func hostSlot(s, lower string, p, e int) bool {
	if p > 0 && s[p-1] == '@' {
		return true
	}
	if p >= 3 && s[p-3:p] == "://" {
		return true
	}
	if syslogHost(s, p) {
		return true
	}
	w, _ := prevWord(lower, p)
	return hostSlotWords[w]
}

// prevWord returns the lower-cased word before p, skipping one opening
// quote, spaces and one '=' or ':' separator, and that separator.
func prevWord(lower string, p int) (string, byte) {
	j := p
	if j > 0 && (lower[j-1] == '"' || lower[j-1] == '\'' || lower[j-1] == '`') {
		j--
	}
	for k := 0; k < 3 && j > 0 && (lower[j-1] == ' ' || lower[j-1] == '\t'); k++ {
		j--
	}
	var sep byte = ' '
	if j > 0 && (lower[j-1] == '=' || lower[j-1] == ':') {
		sep = lower[j-1]
		j--
		for k := 0; k < 3 && j > 0 && (lower[j-1] == ' ' || lower[j-1] == '"' || lower[j-1] == '\''); k++ {
			j--
		}
	}
	if j == p {
		return "", 0
	}
	we := j
	for j > 0 && we-j < 16 && (nameChar(lower[j-1])) {
		j--
	}
	if j > 0 && nameChar(lower[j-1]) {
		return "", 0
	}
	return lower[j:we], sep
}

// psRow reports whether a name ending at e is the USER column of a ps row:
// two or more spaces, a PID, spaces, and a %CPU like 0.0.
func psRow(s string, e int) bool {
	i := e
	for i < len(s) && s[i] == ' ' {
		i++
	}
	if i-e < 2 {
		return false
	}
	d := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i == d || i >= len(s) || s[i] != ' ' {
		return false
	}
	for i < len(s) && s[i] == ' ' {
		i++
	}
	return i+2 < len(s) && isDigit(s[i]) && (s[i+1] == '.' || (isDigit(s[i+1]) && s[i+2] == '.'))
}

// syslogHost reports whether p follows a syslog timestamp "Nov 29 22:11:05 ".
func syslogHost(s string, p int) bool {
	if p < 9 || s[p-1] != ' ' {
		return false
	}
	t := s[p-9 : p-1]
	return isDigit(t[0]) && isDigit(t[1]) && t[2] == ':' && isDigit(t[3]) && isDigit(t[4]) && t[5] == ':' && isDigit(t[6]) && isDigit(t[7])
}

// findEnvSecrets masks the values of sensitive-named environment variables
// wherever they appear. Short values must stand alone; long ones are masked
// even inside a larger token (a URL, a base64 blob).
func (r *Redactor) findEnvSecrets(sc *scan) {
	s := sc.s
	for _, es := range r.envSecrets {
		for off := 0; ; {
			i := strings.Index(s[off:], es.value)
			if i < 0 {
				break
			}
			p := off + i
			e := p + len(es.value)
			off = p + 1
			if len(es.value) < 12 && !alnumBoundary(s, p, e) {
				continue
			}
			sc.add(p, e, "env:"+envLabel(es.name))
			off = e
		}
	}
}

func envLabel(name string) string {
	var b strings.Builder
	for i := 0; i < len(name) && b.Len() < 40; i++ {
		c := name[i]
		if isAlnum(c) || c == '_' {
			b.WriteByte(c)
		}
	}
	return b.String()
}

var harmlessLastWord = map[string]bool{
	"ttl": true, "seconds": true, "secs": true, "minutes": true, "timeout": true, "type": true,
	"mode": true, "source": true, "name": true, "file": true, "path": true, "dir": true,
	"sock": true, "length": true, "size": true, "count": true, "enabled": true, "disabled": true,
	"region": true, "endpoint": true, "kind": true, "provider": true, "method": true,
	"header": true, "scope": true, "scopes": true, "issuer": true, "audience": true,
	"version": true, "algorithm": true, "expiry": true, "expires": true, "format": true,
	"host": true, "port": true, "location": true, "backend": true, "helper": true, "store": true,
	"strategy": true, "plugin": true, "url": false, "user": true, "username": true,
}
