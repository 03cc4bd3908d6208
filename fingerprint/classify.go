package fingerprint

import (
	"bytes"
	"strings"
)

// Token classifiers shared by v2 and v3: what a word is (a code, an
// address, a path, a host, a timestamp's part) and appendMasked, which
// masks the data runs of a token. They decide alike in both versions; a
// rule that should change for the live version only is copied into its
// files first, so that v2 stays as its release computed it (the golden
// files under testdata check that).

// units follow a number in sizes, durations and rates.
var units = map[string]bool{
	"b": true, "kb": true, "mb": true, "gb": true, "tb": true, "pb": true,
	"kib": true, "mib": true, "gib": true, "tib": true, "byte": true, "bytes": true,
	"bit": true, "bits": true, "ns": true, "us": true, "µs": true, "ms": true, "s": true,
	"sec": true, "secs": true, "second": true, "seconds": true, "min": true, "mins": true,
	"minute": true, "minutes": true, "h": true, "hr": true, "hrs": true, "hour": true,
	"hours": true, "day": true, "days": true, "%": true, "kbps": true, "mbps": true,
	"gbps": true, "b/s": true, "kb/s": true, "mb/s": true,
}

// isCodeKey: a word or key after which a number identifies the defect
// rather than varying within it: "HTTP 410", "exit 137", "status: 422",
// "signal 9", "errno 2", "exit_code=137", "statusCode=404".
func isCodeKey(k string) bool {
	if codeWords[k] {
		return true
	}
	if strings.HasPrefix(k, "http/") {
		return true // "HTTP/1.1 404"
	}
	return len(k) > 4 && (strings.HasSuffix(k, "code") || strings.HasSuffix(k, "status") || strings.HasSuffix(k, "errno"))
}

var codeWords = map[string]bool{
	"http": true, "status": true, "code": true, "exit": true, "exited": true, "errno": true,
	"signal": true, "sig": true, "error": true, "err": true, "sqlstate": true, "rc": true, "ora": true,
	"winerror": true, "hresult": true,
}

var lowerHTTPMethods = newWordSet("get", "post", "put", "delete", "patch", "head", "options")

// isHTTPStatus: three digits from 100 to 599.
func isHTTPStatus(c string) bool {
	return len(c) == 3 && c[0] >= '1' && c[0] <= '5' && isDigit(c[1]) && isDigit(c[2])
}

// reasonPhrase words start HTTP reason phrases ("404 Not Found", "502 Bad
// Gateway", "404 Client Error"): the number before them is a status.
var reasonPhrase = map[string]bool{
	"OK": true, "Created": true, "Accepted": true, "No": true, "Moved": true, "Found": true,
	"See": true, "Not": true, "Temporary": true, "Permanent": true, "Bad": true,
	"Unauthorized": true, "Payment": true, "Forbidden": true, "Method": true, "Proxy": true,
	"Request": true, "Conflict": true, "Gone": true, "Length": true, "Precondition": true,
	"Payload": true, "URI": true, "Unsupported": true, "Range": true, "Expectation": true,
	"Misdirected": true, "Unprocessable": true, "Locked": true, "Failed": true, "Too": true,
	"Upgrade": true, "Internal": true, "Service": true, "Gateway": true, "HTTP": true,
	"Variant": true, "Insufficient": true, "Loop": true, "Network": true, "Client": true,
	"Server": true, "Validation": true,
}

// userWords precede a user name, which varies per person, not per defect.
var userWords = newWordSet("user", "username")

// hostWords precede a machine's name.
var hostWords = newWordSet("host", "hostname")

// valueWords precede a quoted input echoed back: `parsing "abc"`,
// `invalid value "x" for flag`, `literal 'y'`.
var valueWords = newWordSet("parsing", "value", "literal", "input")

// httpMethods precede a request path, which carries ids and data.
var httpMethods = map[string]bool{
	"GET": true, "POST": true, "PUT": true, "DELETE": true, "PATCH": true, "HEAD": true, "OPTIONS": true,
}

// isDeviceSlot: an upper-case device or clock name with its unit number in
// brackets, as LOCAL(0), COM(1) or DISK[2]: the unit varies per machine.
func isDeviceSlot(c string) bool {
	i := 0
	for i < len(c) && c[i] >= 'A' && c[i] <= 'Z' {
		i++
	}
	if i < 2 || i+3 > len(c) || (c[i] != '(' && c[i] != '[') {
		return false
	}
	j := i + 1
	for j < len(c) && isDigit(c[j]) {
		j++
	}
	return j > i+1 && j == len(c)-1 && (c[j] == ')' || c[j] == ']')
}

// isQuotedData: a quoted single token is a name (a field, table, module or
// tool: identifier-shaped) or a value echoed from data. A token with data in
// it (a digit run) and punctuation no identifier has — a model name
// 'gpt-5.1-codex', a branch 'fix/4521-login', a version '1.4.2-rc1' — is a
// value, masked whole so its words cannot split the defect either. Paths,
// URLs and project file names keep their own rules.
func isQuotedData(inner string) bool {
	punct := false
	for i := 0; i < len(inner); i++ {
		c := inner[i]
		if !isAlnum(c) && c != '_' && c != '.' {
			punct = true
			break
		}
	}
	if !punct || isPath(inner) || strings.Contains(inner, "://") || isProjectFileName(inner) {
		return false
	}
	return hasData(inner, false)
}

// isUserAtHost: a login at a machine, as in an scp-style git remote
// ("git@github.com:acme/widget.git") or an ssh endpoint ("git@10.0.0.4:22").
func isUserAtHost(c string) bool {
	at := strings.IndexByte(c, '@')
	if at <= 0 {
		return false
	}
	for i := 0; i < at; i++ {
		if ch := c[i]; !isAlnum(ch) && ch != '_' && ch != '-' && ch != '.' {
			return false
		}
	}
	host := c[at+1:]
	if k := strings.IndexByte(host, ':'); k >= 0 {
		host = host[:k]
	}
	return isIP(host) || strings.IndexByte(host, '.') > 0 && isHostName(host)
}

// isEmail: local@domain.tld. An address names a person, not a defect.
func isEmail(c string) bool {
	at := strings.IndexByte(c, '@')
	if at <= 0 || at == len(c)-1 {
		return false
	}
	for i := 0; i < at; i++ {
		ch := c[i]
		if !isAlnum(ch) && strings.IndexByte("._%+-", ch) < 0 {
			return false
		}
	}
	domain := c[at+1:]
	dot := strings.LastIndexByte(domain, '.')
	if dot <= 0 || len(domain)-dot-1 < 2 {
		return false
	}
	for i := 0; i < len(domain); i++ {
		ch := domain[i]
		if !isAlnum(ch) && ch != '-' && ch != '.' {
			return false
		}
	}
	return isLetters(domain[dot+1:])
}

// isEnumConstant: SCREAMING_SNAKE_CASE without digits.
func isEnumConstant(s string) bool {
	if len(s) < 2 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z') && c != '_' {
			return false
		}
	}
	return true
}

// isCodeValue: a status/exit/error code: digits, or a short code of
// letters and digits like "42P01", "0x1", "-2".
func isCodeValue(s string) bool {
	if s == "" || len(s) > 12 {
		return false
	}
	digits := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isDigit(c):
			digits++
		case isASCIILetter(c):
		case c == '-' && i == 0:
		default:
			return false
		}
	}
	return digits > 0
}

// isVendorCode: an error code made of an upper-case prefix and a number,
// like ORA-00942, E11000, SQL0204N, TS2304, CS0246.
func isVendorCode(s string) bool {
	i := 0
	for i < len(s) && s[i] >= 'A' && s[i] <= 'Z' {
		i++
	}
	if i == 0 || i > 5 {
		return false
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	d := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i-d < 3 || i-d > 6 {
		return false
	}
	if i < len(s) && s[i] >= 'A' && s[i] <= 'Z' {
		i++
	}
	return i == len(s)
}

// isPlainName: a word made of name characters, e.g. a user name.
func isPlainName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isWordByte(c) && c != '-' && c != '.' && c != '@' && c < 0x80 {
			return false
		}
	}
	return s != ""
}

func isBoolean(s string) bool {
	if len(s) < 4 || len(s) > 5 {
		return false
	}
	return strings.EqualFold(s, "true") || strings.EqualFold(s, "false") || strings.EqualFold(s, "null")
}

// isUUID: 8-4-4-4-12 hex digits (a UUID with no decimal digit in one group
// would otherwise keep that group).
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if s[i] != '-' {
				return false
			}
		} else if !isHexByte(s[i]) {
			return false
		}
	}
	return true
}

// keyValueSplit returns the index of the '=' splitting a key=value token,
// or -1. The key must look like an identifier.
func keyValueSplit(c string) int {
	eq := strings.IndexByte(c, '=')
	if eq <= 0 {
		return -1
	}
	if eq+1 < len(c) && (c[eq+1] == '=' || c[eq+1] == '>') {
		return -1
	}
	for i := 0; i < eq; i++ {
		ch := c[i]
		if !isWordByte(ch) && ch != '.' && ch != '-' && ch != '[' && ch != ']' && ch != '(' && ch != ')' {
			return -1
		}
	}
	return eq
}

// appendTokenMasked splits a token into segments (between brackets,
// commas, quotes, '=', ':' and '@') and those into alphanumeric runs and separators. A
// segment holding a long id (6+ digits, or 7+ hex digits) is an id as a
// whole ("attempt_1445144423722_0020_m_000000_0"). Otherwise the runs that
// hold data (numbers, hex, letters mixed with digits) are masked, and
// masks joined only by separators merge, so "1.5s", "30ms",
// "2026-01-01T00:00:00Z" and "10.0.0.1:8080" each become one mask, and
// "blk_-123" and "blk_456" the same "blk_<*>".
//
// A segment that is a relative slash path with data in it — a per-run
// branch ("the-loop/4521-fix-login-3fa9c1"), a ref, a generated directory —
// names one run, not the defect, and is masked as a whole, keeping only a
// project file's name at its end. API and module major versions (api/v2,
// loop/v2/internal) are not data.
func appendTokenMasked(b []byte, s string) []byte { return appendMasked(b, s, false) }

// appendFileNameMasked masks a file's base name. Unlike prose, a file name
// holds no device names: "run-abc0.json" and "run-abc1.json" are two runs
// of one defect, so every run with a digit is data (code names excepted).
func appendFileNameMasked(b []byte, s string) []byte { return appendMasked(b, s, true) }

// appendMasked masks a token (appendMaskedV3 adds v3's generated names).
func appendMasked(b []byte, s string, fileName bool) []byte {
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
			if hasLongID(seg) {
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
		inFileName := fileName || i >= fileFrom && i < fileTo
		if run := s[i:j]; volatileRun(run) || inFileName && fileNameData(run) {
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

// hasData: part of a slash path holds data — a number, an id, in a file
// name any digit run — rather than names. An API or module major version
// (api/v2, yaml.v3) is a name.
func hasData(part string, fileName bool) bool {
	for i := 0; i < len(part); {
		if !isAlnum(part[i]) {
			i++
			continue
		}
		j := runEnd(part, i)
		if run := part[i:j]; !isVersionMarker(run) && (volatileRun(run) || fileName && fileNameData(run)) {
			return true
		}
		i = j
	}
	return false
}

// isVersionMarker: "v2", "V10".
func isVersionMarker(run string) bool {
	if len(run) < 2 || len(run) > 4 || run[0]|0x20 != 'v' {
		return false
	}
	return strings.Trim(run[1:], "0123456789") == ""
}

// hasLongID: a run of 6+ digits, or a run of 7+ hex digits with a digit
// among them (a short SHA, an address, a hash).
func hasLongID(seg string) bool {
	digitRun, hexRun, hexHasDigit := 0, 0, false
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if isDigit(c) {
			digitRun++
			if digitRun >= 6 {
				return true
			}
		} else {
			digitRun = 0
		}
		if isHexByte(c) {
			hexRun++
			hexHasDigit = hexHasDigit || isDigit(c)
			if hexRun >= 7 && hexHasDigit && (i+1 == len(seg) || !isAlnum(seg[i+1])) {
				return true
			}
		} else {
			hexRun, hexHasDigit = 0, false
		}
	}
	return false
}

// fileNameData: in a file name, a run with a digit is data even when it
// looks like a device name (abc0), unless it is a code name (utf8, sha256).
func fileNameData(run string) bool {
	for i := 0; i < len(run); i++ {
		if isDigit(run[i]) {
			return !isCodeName(run)
		}
	}
	return false
}

// isProjectFileName: a file name with a configuration, state or source
// extension, which names what a message is about.
func isProjectFileName(base string) bool {
	if k := strings.IndexByte(base, ':'); k >= 0 {
		base = base[:k]
	}
	dot := strings.LastIndexByte(base, '.')
	return dot > 0 && projectExtensions[strings.ToLower(base[dot+1:])]
}

// codeNames are identifiers with digits that name code, not data.
var codeNames = []string{
	"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
	"float32", "float64", "complex64", "complex128", "utf8", "utf16", "utf32", "utf8mb4",
	"latin1", "ucs2", "sha1", "sha224", "sha256", "sha384", "sha512", "md5", "crc32",
	"crc64", "adler32", "base32", "base58", "base64", "ipv4", "ipv6", "http1", "http2",
	"http3", "h2", "h2c", "oauth1", "oauth2", "x509", "pkcs1", "pkcs7", "pkcs8", "pkcs12",
	"ed25519", "x25519", "p256", "p384", "aes128", "aes256", "s3", "ec2", "k8s", "i18n",
	"l10n", "log4j", "slf4j", "py2", "py3", "python2", "python3", "es5", "es6", "ssh2",
	"socks4", "socks5", "win32", "win64", "amd64", "arm64", "x86", "x64", "i386", "i686",
	"bzip2", "mp3", "mp4", "h264", "ecdsa256",
}

var codeNameSet = func() map[string]bool {
	m := make(map[string]bool, len(codeNames))
	for _, s := range codeNames {
		m[s] = true
	}
	return m
}()

// volatileRun decides whether an alphanumeric run is data. Runs without
// digits are words and kept, unless they are long enough hex to be a hash.
// Runs with digits are masked (instance names like node7, storage1412 and
// an14 are data), except code names such as int64, sha256, utf8, ipv6 —
// alone or ending a CamelCase name (ParseInt64).
func volatileRun(run string) bool {
	digits, hexOnly := 0, true
	for i := 0; i < len(run); i++ {
		c := run[i]
		if isDigit(c) {
			digits++
		} else if !isHexByte(c) {
			hexOnly = false
		}
	}
	if digits == 0 {
		// Hex without a digit: a hash when long, a short SHA or id
		// ("bcadcab") when it is one case — words of only a-f are rare
		// that long, and CamelCase ones ("DeadBeef") are names.
		return hexOnly && (len(run) >= 12 || len(run) >= minHexWord && singleCase(run))
	}
	if len(run) > 16 {
		return true
	}
	// A name with one trailing digit is a device or interface (eth0, en0,
	// sda1), which says where the failure is; more digits make an instance
	// or a counter (node128, an142), and a longer run of hex letters is an
	// id ("fbcef7").
	if digits == 1 && len(run) >= 3 && isDigit(run[len(run)-1]) && isASCIILetter(run[0]) && isASCIILetter(run[1]) &&
		!(hexOnly && len(run) >= 5) {
		return false
	}
	return !isCodeName(run)
}

// minHexWord is the shortest run of hex letters without digits masked as
// an id; shorter ones ("added", "faced", "dead") are too often words.
const minHexWord = 6

// singleCase: no upper-case letter, or no lower-case one.
func singleCase(s string) bool {
	lower, upper := false, false
	for i := 0; i < len(s); i++ {
		lower = lower || s[i] >= 'a' && s[i] <= 'z'
		upper = upper || s[i] >= 'A' && s[i] <= 'Z'
	}
	return !(lower && upper)
}

// isCodeName: a code name such as int64, sha256, utf8 or ipv6, alone or
// ending a CamelCase name (ParseInt64).
func isCodeName(run string) bool {
	if len(run) > 16 {
		return false
	}
	var buf [16]byte
	lower := buf[:len(run)]
	for i := 0; i < len(run); i++ {
		lower[i] = run[i] | 0x20*byte(boolInt(run[i] >= 'A' && run[i] <= 'Z'))
	}
	for k := 0; k < len(lower); k++ {
		if k > 0 && !isASCIILetter(lower[k-1]) {
			break // the prefix before a code name must be letters
		}
		if codeNameSet[string(lower[k:])] {
			return true
		}
	}
	return false
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// isPath: an absolute, home-relative, dot-relative or Windows path.
func isPath(c string) bool {
	switch {
	case c[0] == '/' && len(c) > 1:
		return true
	case c[0] == '~' && (len(c) == 1 || c[1] == '/'):
		return true
	case strings.HasPrefix(c, "./") || strings.HasPrefix(c, "../"):
		return true
	case len(c) > 2 && isASCIILetter(c[0]) && c[1] == ':' && (c[2] == '\\' || c[2] == '/'):
		return true
	case strings.HasPrefix(c, `\\`):
		return true
	}
	return false
}

var projectExtensions = map[string]bool{
	"yaml": true, "yml": true, "json": true, "toml": true, "ini": true, "conf": true,
	"cfg": true, "env": true, "db": true, "sqlite": true, "sqlite3": true, "lock": true,
	"jsonl": true, "go": true, "py": true, "js": true, "mjs": true, "cjs": true, "ts": true,
	"tsx": true, "jsx": true, "rb": true, "java": true, "kt": true, "rs": true, "c": true,
	"h": true, "cc": true, "cpp": true, "hpp": true, "cs": true, "sh": true, "php": true,
	"swift": true, "mod": true, "sum": true, "md": true, "xml": false, "service": true, "socket": true,
	"sock": true, "pem": true, "key": true, "crt": true,
}

// isIP: IPv4 (optionally with port or prefix), IPv6, or a MAC address.
func isIP(c string) bool {
	// An IPv6 zone ("%eth0") names the local interface the address is on.
	if k := strings.IndexByte(c, '%'); k > 0 {
		e := k + 1
		for e < len(c) && isAlnum(c[e]) {
			e++
		}
		c = c[:k] + c[e:]
	}
	colons, dots, hex := 0, 0, 0
	for i := 0; i < len(c); i++ {
		ch := c[i]
		switch {
		case ch == ':':
			colons++
		case ch == '.':
			dots++
		case isHexByte(ch):
			hex++
		case ch == '/' || ch == '%' || ch == '[' || ch == ']':
		default:
			return false
		}
	}
	return hex > 0 && (colons >= 2 || dots == 3)
}

// genericTLDs end host names; code identifiers (os.Open, config.yaml) don't.
var genericTLDs = map[string]bool{
	"com": true, "net": true, "org": true, "io": true, "edu": true, "gov": true, "mil": true,
	"internal": true, "local": true, "localdomain": true, "lan": true, "cloud": true,
	"info": true, "biz": true, "asia": true, "svc": true, "amazonaws": true, "arpa": true,
}

// fileExtensions look like two-letter country TLDs but end file names.
var fileExtensions = map[string]bool{
	"py": true, "rs": true, "md": true, "sh": true, "js": true, "ts": true, "cc": true,
	"so": true, "pl": true, "pm": true, "ps": true, "db": true, "gz": true, "xz": true,
	"cs": true, "fs": true, "kt": true, "rb": true, "hs": true, "mk": true, "in": true,
	"id": true, "go": true, "ml": true,
}

// isHostName: "localhost", a dotted name ending in a generic TLD, a name of
// three or more labels ending in a country TLD, or a lower-case
// "host:port" endpoint.
func isHostName(c string) bool {
	host := c
	if p := strings.LastIndexByte(c, ':'); p > 0 {
		port := c[p+1:]
		if port == "" || len(port) > 5 {
			return false
		}
		for i := 0; i < len(port); i++ {
			if !isDigit(port[i]) {
				return false
			}
		}
		host = c[:p]
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	labels := 1
	for i := 0; i < len(host); i++ {
		ch := host[i]
		switch {
		case ch == '.':
			labels++
		case isAlnum(ch) || ch == '-':
		default:
			return false
		}
	}
	if host == "" || host[0] == '.' || host[0] == '-' || host[len(host)-1] == '.' {
		return false
	}
	if len(host) < len(c) && strings.ToLower(host) == host && !projectExtensions[host[strings.LastIndexByte(host, '.')+1:]] {
		return true // "host:port"
	}
	if labels < 2 {
		return false
	}
	tld := strings.ToLower(host[strings.LastIndexByte(host, '.')+1:])
	if genericTLDs[tld] {
		return true
	}
	return labels >= 3 && len(tld) == 2 && isASCIILetter(tld[0]) && isASCIILetter(tld[1]) && !fileExtensions[tld]
}

var monthsAndDays = map[string]bool{
	"jan": true, "feb": true, "mar": true, "apr": true, "may": true, "jun": true,
	"jul": true, "aug": true, "sep": true, "oct": true, "nov": true, "dec": true,
	"mon": true, "tue": true, "wed": true, "thu": true, "fri": true, "sat": true, "sun": true,
	"am": true, "pm": true, "utc": true, "gmt": true,
	"january": true, "february": true, "march": true, "april": true, "june": true, "july": true,
	"august": true, "september": true, "october": true, "november": true, "december": true,
	"monday": true, "tuesday": true, "wednesday": true, "thursday": true, "friday": true,
	"saturday": true, "sunday": true,
}

// isMonthOrDay: part of a written-out timestamp. Only masked next to a
// masked number, so the word "may" survives in prose.
func isMonthOrDay(lower string) bool { return monthsAndDays[lower] }
