package fingerprint

import (
	"bytes"
	"strings"
)

// NormalizeV3's word rules, on top of the rules it shares with v2
// (classify.go): thread names, assertions, resolver failures, generated
// names (pods, node ids, letters-only ids), URL routes.

// Thread names say which worker ran the code, not what failed: the name
// after "thread" ('Exception in thread "http-nio-8080-exec-11"', "Exception
// in thread Thread-7 (worker):") and thread-pool names anywhere
// (pool-3-thread-1, ForkJoinPool-1-worker-3) are masked.
var threadWords = newWordSet("thread")

func isThreadNameAfterKeyword(c string) bool {
	if isQuote(c[0]) {
		return len(c) > 2 && c[len(c)-1] == c[0]
	}
	return isPlainName(c) && (strings.ContainsAny(c, "-.0123456789_") || c == "main" || c == "MainThread")
}

func isThreadName(c string) bool {
	if len(c) < 6 || !isDigit(c[len(c)-1]) || strings.IndexByte(c, '-') < 0 {
		return false
	}
	return strings.HasPrefix(c, "Thread-") || strings.Contains(c, "-thread-") || strings.Contains(c, "-exec-") ||
		strings.HasPrefix(c, "ForkJoinPool") || strings.HasPrefix(c, "pool-") || strings.Contains(c, "-worker-")
}

// A namespace is the tenant or environment an object lives in, which
// varies per deployment: the quoted or generated name after "namespace"
// ('in namespace "team-a-prod"', 'namespaces "x" not found') and the name
// in "namespace/prod-eu" are masked.
var namespaceWords = newWordSet("namespace", "namespaces")

// A host is where, however it is spelt: a compose service's bare name
// ("postgres"), localhost, an address or a DNS name. Beyond v2's rules, a
// quoted name after "host", any name after "host:", a name shown with its
// address ('"db" (10.0.0.5)'), and what a resolver failed to find
// (ENOTFOUND x, UnknownHostException: x, "lookup x: no such host") are
// masked.
var resolverWords = newWordSet("enotfound", "eai_again", "lookup")

// In an assertion the compared values are the defect: a small number after
// assert, expected/received, got/want, actual, or a comparison operator
// ("assert 404 == 201", "Expected: 201", "got 3, want 4", pytest's "where
// 500 = ...", JUnit's "expected:<201> but was:<400>") is kept, unless a unit
// follows (a measurement).
var assertWords = newWordSet("assert", "expected", "received", "got", "want", "wanted", "actual", "expect", "where")

var comparisonOps = map[string]bool{"==": true, "!=": true, "===": true, "!==": true, "<=": true, ">=": true, "<": true, ">": true}

// isAssertWord: "assert", "AssertionError:", "assertEqual(", "expect(x)".
func isAssertWord(w string) bool {
	for len(w) > 0 && (w[0] == '(' || w[0] == '[' || w[0] == '{') {
		w = w[1:]
	}
	if len(w) < 6 {
		return false
	}
	switch w[0] {
	case 'a', 'A':
		return strings.EqualFold(w[:6], "assert")
	case 'e':
		return strings.HasPrefix(w, "expect(")
	}
	return false
}

// isSmallNumber: an integer of up to 6 digits or a short decimal, signed.
func isSmallNumber(c string) bool {
	i := 0
	if i < len(c) && c[i] == '-' {
		i++
	}
	d := i
	for i < len(c) && isDigit(c[i]) {
		i++
	}
	if i == d || i-d > 6 {
		return false
	}
	if i < len(c) && c[i] == '.' {
		i++
		f := i
		for i < len(c) && isDigit(c[i]) {
			i++
		}
		if i == f || i-f > 4 {
			return false
		}
	}
	return i == len(c)
}

// coreV3 applies the word rules of v3 that come before v2's; done reports
// that it wrote the word.
func (n *normalizer) coreV3(c string) (done, masked bool) {
	if n.prev != "" {
		switch {
		case n.prevIs(threadWords) && isThreadNameAfterKeyword(c):
			n.absorbParen = true
			return true, n.maskValue(c)
		case n.prevIs(namespaceWords) && (isQuotedToken(c) || isPlainName(c) && strings.ContainsAny(c, "-0123456789")):
			return true, n.maskValue(c)
		case n.prevIs(hostWords) && (isQuotedToken(c) || n.prevColon && isPlainName(c)):
			return true, n.maskValue(c)
		case n.prevIs(resolverWords) && isPlainName(c) && (n.prev[0]|0x20 != 'l' || resolverFailure(n.next)),
			strings.HasSuffix(n.prev, "UnknownHostException") && isPlainName(c):
			return true, n.mask()
		case isDigit(c[len(c)-1]) && n.prevIs(assertWords) && isSmallNumber(c) && !units[strings.ToLower(strings.Trim(n.next, ",.;:()"))] &&
			(n.prev[0]|0x20 != 'w' || n.prev[1] != 'h' || n.next == "="):
			n.out = append(n.out, c...)
			return true, false
		}
	}
	switch {
	case n.assertLine && comparisonOps[n.prevRaw] && isSmallNumber(c):
		n.out = append(n.out, c...)
		return true, false
	case isQuotedToken(c) && isPlainName(c[1:len(c)-1]) && isParenIP(n.next):
		return true, n.maskValue(c)
	case isThreadName(c):
		return true, n.mask()
	case c[len(c)-1] == '>' && isExpectedWas(c):
		n.out = append(n.out, c...)
		return true, false
	}
	if slash := strings.IndexByte(c, '/'); slash > 0 {
		if namespaceWords.hasFold(c[:slash]) && isPlainName(c[slash+1:]) {
			n.out = append(n.out, c[:slash+1]...)
			n.out = append(n.out, Mask...)
			return true, false
		}
		// A path glued to its key ("source path:/var/log/x") is a path.
		if k := strings.IndexByte(c, ':'); k >= 2 && k+1 == slash && isIdentifier(c[:k]) && (k+2 == len(c) || c[k+2] != '/') {
			n.out = append(n.out, c[:k+1]...)
			n.path(c[k+1:])
			return true, false
		}
	}
	if isDataFileName(c) {
		return true, n.mask()
	}
	return false, false
}

// resolverFailure: the word after "lookup x" that Go's resolver errors
// continue with.
func resolverFailure(next string) bool {
	switch next {
	case "no", "i/o", "server", "read", "dial", "Temporary", "temporary":
		return true
	}
	return false
}

// maskValue masks a value, keeping its quotes when quoted.
func (n *normalizer) maskValue(c string) bool {
	if isQuotedToken(c) {
		n.out = append(n.out, c[0])
		n.out = append(n.out, Mask...)
		n.out = append(n.out, c[0])
		return false
	}
	return n.mask()
}

func isQuotedToken(c string) bool {
	return len(c) > 2 && isQuote(c[0]) && c[len(c)-1] == c[0]
}

// isParenIP: "(10.0.0.5)," — an address in brackets.
func isParenIP(w string) bool {
	if len(w) < 4 || w[0] != '(' {
		return false
	}
	w = strings.TrimRight(w, ",;:.")
	return len(w) > 2 && w[len(w)-1] == ')' && isIP(w[1:len(w)-1])
}

// isExpectedWas: JUnit's "expected:<201>" or "was:<[400]>".
func isExpectedWas(c string) bool {
	k := strings.Index(c, ":<")
	if k <= 0 {
		return false
	}
	key := strings.ToLower(c[:k])
	if key != "expected" && key != "was" {
		return false
	}
	return isSmallNumber(strings.Trim(c[k+2:len(c)-1], "[]"))
}

// isIdentifier: letters, digits and underscores, starting with a letter.
func isIdentifier(s string) bool {
	if s == "" || !isASCIILetter(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isWordByte(s[i]) {
			return false
		}
	}
	return true
}

// isQuotedDataV3: a quoted token with punctuation and a generated part
// (a pod's name, a generated id) is data, as v2's isQuotedData says of one
// with digits.
func isQuotedDataV3(inner string) bool {
	if !strings.ContainsAny(inner, "-_") || strings.ContainsAny(inner, " /") {
		return false
	}
	if podWorkload(inner) > 0 {
		return true
	}
	for i := 0; i < len(inner); {
		if !isAlnum(inner[i]) {
			i++
			continue
		}
		j := runEnd(inner, i)
		if generatedRun(inner, i, j, false) {
			return true
		}
		i = j
	}
	return false
}

// podWorkload: the length of the workload's name in a Kubernetes pod name
// "<workload>-<hash>-<suffix>" (a pod-template hash of 5–10 lower-case
// letters and digits with a digit or no vowel, then a 5-character suffix),
// or 0.
func podWorkload(seg string) int {
	// The kubelet writes a pod as "<pod>_<namespace>": both are masked.
	if u := strings.IndexByte(seg, '_'); u > 0 {
		seg = seg[:u]
	}
	last := strings.LastIndexByte(seg, '-')
	if last < 0 || len(seg)-last-1 != 5 || !lowerAlnum(seg[last+1:]) {
		return 0
	}
	prev := strings.LastIndexByte(seg[:last], '-')
	if prev <= 0 || !isASCIILetter(seg[0]) {
		return 0
	}
	hash := seg[prev+1 : last]
	if len(hash) < 5 || len(hash) > 10 || !lowerAlnum(hash) || !(strings.ContainsAny(hash, "0123456789") || noVowelRun(hash)) {
		return 0
	}
	for i := 0; i < prev; i++ {
		if c := seg[i]; !(c >= 'a' && c <= 'z' || isDigit(c) || c == '-') {
			return 0
		}
	}
	return prev
}

func lowerAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || isDigit(c)) {
			return false
		}
	}
	return s != ""
}

// A data file's name — a log, capture, dump, report or archive — that
// carries a run's stamp (a run of two or more digits) names one run's
// output, as a path's data leaf does: it is masked whole, like v2 masks it
// after a directory.
func isDataFileName(c string) bool {
	dot := strings.LastIndexByte(c, '.')
	if dot <= 0 || dot == len(c)-1 || strings.ContainsAny(c, `/\`) {
		return false
	}
	if !dataExtensions[strings.ToLower(c[dot+1:])] {
		return false
	}
	run := 0
	for i := 0; i < dot; i++ {
		if isDigit(c[i]) {
			run++
			if run >= 2 {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}

var dataExtensions = map[string]bool{
	"txt": true, "log": true, "out": true, "err": true, "xml": true, "csv": true, "tsv": true,
	"dat": true, "bin": true, "dump": true, "dmp": true, "pcap": true, "pcapng": true, "gz": true,
	"tgz": true, "zip": true, "tar": true, "bz2": true, "xz": true, "zst": true, "tmp": true,
	"bak": true, "png": true, "jpg": true, "jpeg": true, "pdf": true, "hprof": true, "trace": true,
	"parquet": true, "avro": true, "crash": true, "ips": true, "core": true,
}

// lettersV3 writes a word of letters only: a generated mixed-case id is
// masked, and a plural after a count is written singular.
func (n *normalizer) lettersV3(c string) bool {
	if len(c) >= 5 && mixedCaseGenerated(c) {
		return n.mask()
	}
	if n.lastMasked {
		n.out = appendSingular(n.out, c)
		return false
	}
	n.out = append(n.out, c...)
	return false
}

// A count's plural agrees with the count ("1 test failed", "3 tests
// failed"; "1 of 5 replicas", "1 of 1 replica"): after a masked number a
// lower-case plural is written singular.
func appendSingular(b []byte, w string) []byte {
	l := len(w)
	if l < 4 || w[l-1] != 's' || w[0] < 'a' || w[0] > 'z' {
		return append(b, w...)
	}
	switch {
	case strings.HasSuffix(w, "ies") && l >= 5:
		b = append(b, w[:l-3]...)
		return append(b, 'y')
	case strings.HasSuffix(w, "sses"), strings.HasSuffix(w, "shes"), strings.HasSuffix(w, "ches"), strings.HasSuffix(w, "xes"), strings.HasSuffix(w, "zes"):
		return append(b, w[:l-2]...)
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"), strings.HasSuffix(w, "is"), strings.HasSuffix(w, "os"):
		return append(b, w...)
	}
	return append(b, w[:l-1]...)
}

// Generated ids of letters only: a name's case follows its words — lower,
// UPPER, Capitalized, camelCase and acronyms (getUserName, HTTPServer,
// XMLHttpRequest, IOError) — so a mixed-case run whose capitals mostly
// start one- or two-letter "words" (nimZWk, kwDOAbCdEf) is random; a
// lower-case run of 5+ letters without a vowel after '-' or '_' (a
// Kubernetes hash or pod suffix, "api-bdfkq") is not a word either.
// mixedCaseGenerated reports the first.
func mixedCaseGenerated(run string) bool { return mixedCaseShape(run, false) }

// mixedCaseShape judges a mixed-case run of letters by its humps: a new
// hump starts at a capital after a lower-case letter, and at the last
// capital of an acronym followed by a lower-case letter. A hump after the
// first is a word when it is a capital and two or more lower-case letters,
// an acronym of two or more capitals, or a two-letter word (By, Id, ...).
// Anywhere, a run is generated when most of its later humps are not words
// (and at least two); in a token's suffix (after '-', '_' or '.'), where
// names are rarely camelCase, one such hump suffices.
func mixedCaseShape(run string, suffix bool) bool {
	upper, lower := 0, 0
	for i := 0; i < len(run); i++ {
		switch c := run[i]; {
		case c >= 'A' && c <= 'Z':
			upper++
		case c >= 'a' && c <= 'z':
			lower++
		default:
			return false
		}
	}
	if upper == 0 || lower == 0 || upper == 1 && run[0] <= 'Z' {
		return false
	}
	humps, bad := 0, 0
	isUp := func(c byte) bool { return c >= 'A' && c <= 'Z' }
	end := func(s, e int) {
		if s == 0 {
			return // the first hump may be anything: "iPhone", "eBay"
		}
		humps++
		h := run[s:e]
		acronym := len(h) >= 2 && isUp(h[len(h)-1])
		if len(h) <= 2 && !acronym && !twoLetterWords[h] {
			bad++
		}
	}
	start := 0
	for i := 1; i < len(run); i++ {
		if isUp(run[i]) && !isUp(run[i-1]) || isUp(run[i]) && isUp(run[i-1]) && i+1 < len(run) && !isUp(run[i+1]) {
			end(start, i)
			start = i
		}
	}
	end(start, len(run))
	if suffix {
		return bad >= 1
	}
	return bad >= 2 && 2*bad > humps
}

// twoLetterWords are humps of camelCase names: findByIdAndUpdate, isOk.
var twoLetterWords = map[string]bool{
	"By": true, "Id": true, "Of": true, "On": true, "In": true, "To": true, "At": true, "Is": true,
	"Or": true, "No": true, "Up": true, "Ok": true, "Io": true, "Db": true, "Ui": true, "Js": true,
	"Os": true, "As": true, "If": true, "Go": true, "Do": true, "Me": true, "My": true, "An": true,
}

// noVowelRun: lower-case letters only, none of them a vowel (y counts).
func noVowelRun(run string) bool {
	for i := 0; i < len(run); i++ {
		switch c := run[i]; c {
		case 'a', 'e', 'i', 'o', 'u', 'y':
			return false
		default:
			if c < 'a' || c > 'z' {
				return false
			}
		}
	}
	return true
}

// generatedRun: the alphanumeric run s[i:j] of a token is a generated id
// of letters (see mixedCaseGenerated and noVowelRun) or a Kubernetes pod's
// random suffix: Kubernetes names a pod by its workload, a pod-template
// hash and a 5-character suffix ("api-7d4b9c8f6d-x2k9p"); the generated
// parts are masked and the workload's name kept.
func generatedRun(s string, i, j int, lastWasMask bool) bool {
	run := s[i:j]
	if len(run) < 5 {
		return false
	}
	inSuffix := i > 0 && (s[i-1] == '-' || s[i-1] == '_' || s[i-1] == '.') && len(run) <= 12
	if mixedCaseShape(run, inSuffix) {
		return true
	}
	if i > 0 && (s[i-1] == '-' || s[i-1] == '_') && noVowelRun(run) {
		return true
	}
	// The pod suffix after a masked hash, ending the token's name.
	if len(run) != 5 || !lastWasMask || i < 2 || s[i-1] != '-' || j < len(s) && (isAlnum(s[j]) || s[j] == '-' || s[j] == '_' || s[j] == '.') {
		return false
	}
	for k := 0; k < len(run); k++ {
		if c := run[k]; !(c >= 'a' && c <= 'z' || isDigit(c)) {
			return false
		}
	}
	k := i - 2
	digit := false
	for k >= 0 && (s[k] >= 'a' && s[k] <= 'z' || isDigit(s[k])) {
		digit = digit || isDigit(s[k])
		k--
	}
	hash := i - 2 - k
	return digit && hash >= 5 && hash <= 10 && k > 0 && s[k] == '-'
}

// isGeneratedID: a GitHub GraphQL node id ("I_kwDOAbCdEf", "PR_kwDOHxyzAB",
// "U_kgDOBHqYmw"): a type prefix, '_', and a base64 tail whose msgpack
// header shows as "k" + a lower-case letter + two capitals.
func isGeneratedID(seg string) bool {
	u := strings.IndexByte(seg, '_')
	if u < 1 || u > 4 || len(seg) < u+8 {
		return false
	}
	for k := 0; k < u; k++ {
		if seg[k] < 'A' || seg[k] > 'Z' {
			return false
		}
	}
	t := seg[u+1:]
	if t[0] != 'k' || t[1] < 'a' || t[1] > 'z' || t[2] < 'A' || t[2] > 'Z' || t[3] < 'A' || t[3] > 'Z' {
		return false
	}
	for k := 0; k < len(t); k++ {
		if c := t[k]; !isAlnum(c) && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// isUserAtHostV3: a login at a machine named by a plain label
// ("deploy@ip-10-0-3-7", "ubuntu@web-01:~$", "root@db:/var/lib"): the user
// and the machine vary per environment. A lower-case user and a host that
// starts with a letter and shows a digit, dash or dot — or is followed by
// ':' — keep package@version ("lodash@4.17.21", "eslint@latest") and
// object ids ("com.acme.Store@6d06d69c") out.
func isUserAtHostV3(c string) bool {
	at := strings.IndexByte(c, '@')
	if at <= 0 || at == len(c)-1 {
		return false
	}
	for i := 0; i < at; i++ {
		if ch := c[i]; !(ch >= 'a' && ch <= 'z') && !isDigit(ch) && ch != '_' && ch != '-' && ch != '.' {
			return false
		}
	}
	host := c[at+1:]
	colon := false
	if k := strings.IndexByte(host, ':'); k >= 0 {
		host, colon = host[:k], true
	}
	if host == "" || !isASCIILetter(host[0]) {
		return false
	}
	hex := true
	for i := 0; i < len(host); i++ {
		ch := host[i]
		if !isAlnum(ch) && ch != '-' && ch != '.' {
			return false
		}
		hex = hex && isHexByte(ch)
	}
	return !hex && (colon || strings.ContainsAny(host, "-.0123456789"))
}

// joinPathWords: a path may hold spaces ("/Users/John Smith/Library/x.db",
// "C:\Program Files (x86)\App\x.dll"), unquoted: a path word is joined
// with the next word when that continues it (holds the path's separator),
// so the directories are masked as one path. On Windows up to two words
// without a separator may stand between ("Program Files (x86)\").
func joinPathWords(s string, i, j int) int {
	if j-i < 2 {
		return j
	}
	var sep byte
	switch c := s[i]; {
	case c == '/' || c == '~' && s[i+1] == '/':
		sep = '/'
	case j-i > 3 && isASCIILetter(c) && s[i+1] == ':' && s[i+2] == '\\':
		sep = '\\'
	default:
		return j
	}
	for {
		if !isAlnum(s[j-1]) && s[j-1] != ')' {
			return j // a path ends at punctuation
		}
		k, between := j, 0
		for {
			if k+1 >= len(s) || s[k] != ' ' || !(isAlnum(s[k+1]) || sep == '\\' && s[k+1] == '(') {
				return j
			}
			e := k + 1
			for e < len(s) && !isSpace(s[e]) && s[e] != '"' && s[e] != '\'' {
				e++
			}
			if e < len(s) && !isSpace(s[e]) {
				return j
			}
			next := s[k+1 : e]
			if strings.IndexByte(next, sep) > 0 && !strings.Contains(next, "://") {
				j = e
				break
			}
			if sep == '/' || between == 2 {
				return j
			}
			between++
			k = e
		}
	}
}

// Routes in URLs: a route names the operation ("/users/123" and
// "/orders/456" are two endpoints), so v3 keeps a URL's path words and
// masks what is data in it — numbers, ids, hex, generated names, the query
// string and fragment, percent-encoded parts — and the member of a
// collection named by its users: the owner and repository after GitHub's
// "/repos/", the name after users/, orgs/, projects/ (GitLab's id or
// url-encoded path), groups/ and namespaces/. The host is masked as in v2.
var namedCollections = map[string]int{
	"repos": 2, "users": 1, "orgs": 1, "owners": 1, "projects": 1, "groups": 1, "namespaces": 1,
}

// urlRoute writes the route of a URL after its scheme and authority
// (rest is the text after "://"; the authority's mask is already written).
func (n *normalizer) urlRoute(rest string) {
	k := strings.IndexAny(rest, "/?#")
	if k < 0 {
		return
	}
	n.route(rest[k:])
}

// Two kinds of URL are not routes. A gateway or availability status after
// it (502, 503, 504) is the server's state, whatever was asked: the path is
// masked as in v2. A URL that locates a file or a repository (its last
// segment has an extension: ".../acme/widget.git", ".../v1.2/app.tar.gz")
// is a location, masked like a path: its directories are data and only a
// project file's name is kept.
func (n *normalizer) route(p string) {
	switch strings.Trim(n.next, ",.:;()") {
	case "502", "503", "504":
		if !bytes.HasSuffix(n.out, maskBytes) {
			n.out = append(n.out, Mask...)
		}
		return
	}
	if k := strings.IndexAny(p, "?#"); k >= 0 {
		p = p[:k] // the query string and fragment are data, there or not
	}
	if v, ok := strings.CutPrefix(p, "/api/"); ok {
		if k := strings.IndexByte(v, '/'); k > 0 && isVersionMarker(v[:k]) {
			p = v[k:] // the mount point: /api/v3 on GitHub Enterprise
		}
	}
	if leaf := strings.TrimRight(p, "/"); strings.IndexByte(leaf, '/') >= 0 {
		leaf = leaf[strings.LastIndexByte(leaf, '/')+1:]
		if dot := strings.LastIndexByte(leaf, '.'); dot > 0 && dot < len(leaf)-1 && isLetters(leaf[dot+1:]) {
			if isProjectFileName(leaf) {
				n.out = append(n.out, "/"+Mask+"/"...)
				n.out = appendFileNameMasked(n.out, leaf)
			} else if !bytes.HasSuffix(n.out, maskBytes) {
				n.out = append(n.out, Mask...)
			}
			return
		}
	}
	member := 0
	for len(p) > 0 {
		seg := p
		if k := strings.IndexByte(p, '/'); k >= 0 {
			seg, p = p[:k], p[k+1:]
			n.out = appendRouteSegment(n.out, seg, &member)
			n.out = append(n.out, '/')
			continue
		}
		p = ""
		n.out = appendRouteSegment(n.out, seg, &member)
	}
}

func appendRouteSegment(b []byte, seg string, member *int) []byte {
	switch {
	case seg == "":
		return b
	case *member > 0:
		*member--
		return append(b, Mask...)
	case strings.IndexByte(seg, '%') >= 0:
		return append(b, Mask...)
	}
	if m, ok := namedCollections[strings.ToLower(seg)]; ok {
		*member = m
	}
	return appendMaskedV3(b, seg)
}

// appendMaskedV3 is appendMasked (of a token, not a file name) with v3's
// generated names: letters-only ids, Kubernetes suffixes, GitHub node ids.
func appendMaskedV3(b []byte, s string) []byte {
	lastWasMask := false
	sepStart := 0 // start in s of the separators not yet written
	writeMask := func(i int) {
		if !lastWasMask {
			seps := s[sepStart:i]
			// A minus sign directly before a number is part of it.
			if strings.HasSuffix(seps, "-") && (len(seps) > 1 || i == 1) {
				seps = seps[:len(seps)-1]
			}
			b = append(b, seps...)
			b = append(b, Mask...)
		} // else: the separators between two masks are absorbed.
		lastWasMask = true
	}
	// Runs in [fileFrom, fileTo) belong to a project file's name at the end
	// of a relative path ("cache/run-abc0.json").
	fileFrom, fileTo := -1, -1
	i := 0
	for i < len(s) {
		if (i == 0 || isSegmentDelim(s[i-1])) && !isSegmentDelim(s[i]) {
			e := i
			for e < len(s) && !isSegmentDelim(s[e]) {
				e++
			}
			seg := s[i:e]
			if w := podWorkload(seg); w > 0 {
				// A pod: its workload's name, then the generated parts.
				b = append(b, s[sepStart:i+w]...)
				b = append(b, '-')
				b = append(b, Mask...)
				lastWasMask = true
				sepStart, i = e, e
				continue
			}
			if hasLongID(seg) || isGeneratedID(seg) {
				writeMask(i)
				sepStart, i = e, e
				continue
			}
			if slash := strings.LastIndexByte(seg, '/'); slash >= 0 {
				leaf := seg[slash+1:]
				project := isProjectFileName(leaf)
				if hasData(seg[:slash], false) || !project && hasData(leaf, strings.IndexByte(leaf, '.') > 0) {
					// A ref, branch or relative path with per-run data in
					// it names one run; only a project file's name is kept.
					writeMask(i)
					if project {
						b = append(b, '/')
						b = appendFileNameMasked(b, leaf)
						lastWasMask = bytes.HasSuffix(b, maskBytes)
					}
					sepStart, i = e, e
					continue
				}
				if project {
					fileFrom, fileTo = i+slash+1, e
				}
			}
		}
		if !isAlnum(s[i]) {
			i++
			continue
		}
		j := runEnd(s, i)
		inFileName := i >= fileFrom && i < fileTo
		if run := s[i:j]; volatileRun(run) || inFileName && fileNameData(run) || generatedRun(s, i, j, lastWasMask) {
			writeMask(i)
		} else {
			b = append(b, s[sepStart:i]...)
			b = append(b, run...)
			lastWasMask = false
		}
		sepStart, i = j, j
	}
	return append(b, s[sepStart:]...)
}
