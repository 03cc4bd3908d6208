package fingerprint

import (
	"strings"
	"unicode/utf8"
)

// Mask replaces every volatile token in a template.
const Mask = "<*>"

// maxTemplate caps a template's length. The cap is applied to the output,
// which volatile tokens no longer vary, so truncation stays deterministic
// under the substitutions that must not change a fingerprint.
const maxTemplate = 2048

// Normalize is the current (v2) template normalizer: it keeps what names a
// defect (words, code identifiers, error codes next to their keyword, file
// names) and masks what varies between occurrences of one defect (numbers,
// ids, hex, paths' directories, addresses, hosts, timestamps, quoted
// values, key=value values, user names). Multi-line errors (Python, Go,
// Java, Node stack traces) are reduced to the exception and its top in-app
// frame first.
func Normalize(errorText string) string {
	if strings.IndexByte(errorText, '\n') >= 0 {
		if t, ok := normalizeTrace(errorText); ok {
			return t
		}
		return normalizeLines(errorText)
	}
	var n normalizer
	n.line(errorText)
	return n.finish()
}

// normalizeLines normalizes each non-blank line of a multi-line text that is
// not a recognised stack trace.
func normalizeLines(text string) string {
	var n normalizer
	for len(text) > 0 && len(n.out) < maxTemplate {
		line := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		if len(n.out) > 0 {
			n.out = append(n.out, '\n')
		}
		n.line(line)
	}
	return n.finish()
}

// normalizer accumulates a template one line at a time.
type normalizer struct {
	out []byte
	// prev is the previous word of the current line, lowercased and
	// trimmed of punctuation: it decides whether a number is an identity
	// code ("HTTP 410", "exit 137") and whether a word is a user name.
	prev string
	// lastMasked is true when the last thing written was a masked word,
	// so runs of volatile words ("Mon Jan 2 15:04:05 2006") collapse into one mask.
	lastMasked bool
}

func (n *normalizer) finish() string {
	out := n.out
	if len(out) > maxTemplate {
		cut := maxTemplate
		for cut > 0 && !utf8.RuneStart(out[cut]) {
			cut--
		}
		out = out[:cut]
	}
	return string(out)
}

// isSpace is ASCII whitespace.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v' || c == '\n'
}

// line normalizes one line, word by word. Words are separated by
// whitespace, except that a quoted string may contain whitespace.
func (n *normalizer) line(s string) {
	n.prev = ""
	n.lastMasked = false
	start := len(n.out)
	i := 0
	for i < len(s) {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i >= len(s) {
			break
		}
		j := wordEnd(s, i)
		n.word(s[i:j], start)
		i = j
		if len(n.out) > maxTemplate {
			return
		}
	}
}

// wordEnd finds the end of the word starting at i: the next whitespace not
// inside a quoted string.
func wordEnd(s string, i int) int {
	j := i
	for j < len(s) && !isSpace(s[j]) {
		c := s[j]
		if (c == '"' || c == '\'' || c == '`') && quoteOpens(s, i, j) {
			if k := closingQuote(s, j); k > 0 {
				j = k + 1
				continue
			}
		}
		j++
	}
	return j
}

// quoteOpens reports whether the quote at j can open a quoted string: at
// the start of a word or after an opening bracket, '=' or ':' (an
// apostrophe inside a word, as in "can't", does not).
func quoteOpens(s string, wordStart, j int) bool {
	if j == wordStart {
		return true
	}
	switch s[j-1] {
	case '(', '[', '{', '<', '=', ':', ',':
		return true
	}
	return false
}

// closingQuote returns the index of the quote closing the one at j, or -1.
// The closing quote must be followed by a word boundary, so apostrophes in
// quoted prose don't end it early; quotes don't span lines.
func closingQuote(s string, j int) int {
	q := s[j]
	for k := j + 1; k < len(s) && k-j < 512; k++ {
		c := s[k]
		if c == '\n' {
			return -1
		}
		if c == '\\' && q == '"' {
			k++
			continue
		}
		if c == q && (k+1 == len(s) || !isWordByte(s[k+1])) {
			return k
		}
	}
	return -1
}

const (
	openers  = "([{<"
	closers  = ")]}>,;:.!?"
	quoteSet = "\"'`"
)

// word normalizes one whitespace-delimited word and appends it.
func (n *normalizer) word(w string, lineStart int) {
	// Leading brackets are structure, kept as they are.
	lead := 0
	for lead < len(w) && strings.IndexByte(openers, w[lead]) >= 0 {
		lead++
	}
	// Trailing punctuation too, unless it closes a quote or bracket
	// opened inside the word.
	trail := len(w)
	for trail > lead && strings.IndexByte(closers, w[trail-1]) >= 0 {
		trail--
	}
	prefix, core, suffix := w[:lead], w[lead:trail], w[trail:]

	var b []byte
	masked := false
	switch {
	case core == "":
		b = append(b, w...)
	default:
		b = append(b, prefix...)
		var m bool
		b, m = n.core(b, core)
		masked = m
		b = append(b, suffix...)
	}

	// Volatile runs collapse: "at <*> <*> <*>" and "at <*>" are the same
	// template, so timestamps written with spaces or number lists of any
	// length don't split a defect.
	if masked && n.lastMasked && prefix == "" && string(b) == Mask+suffix {
		// Replace the previous bare mask's trailing punctuation with ours.
		last := lastMaskEnd(n.out)
		if last >= 0 {
			n.out = append(n.out[:last], suffix...)
			n.prev = ""
			return
		}
	}
	if len(n.out) > lineStart {
		n.out = append(n.out, ' ')
	}
	n.out = append(n.out, b...)
	n.lastMasked = masked && prefix == "" && string(b) == Mask+suffix
	n.prev = strings.ToLower(strings.Trim(core, "[](){}<>#:=,;\"'`"))
	if masked {
		n.prev = ""
	}
}

// lastMaskEnd returns the index just after the last Mask in out when out
// ends with that mask plus optional punctuation, else -1.
func lastMaskEnd(out []byte) int {
	i := len(out)
	for i > 0 && strings.IndexByte(closers, out[i-1]) >= 0 {
		i--
	}
	if i >= len(Mask) && string(out[i-len(Mask):i]) == Mask {
		return i
	}
	return -1
}

// codeWords precede numbers that identify a defect rather than vary
// within one: "HTTP 410", "exit 137", "status: 422", "signal 9", "errno 2".
var codeWords = map[string]bool{
	"http": true, "status": true, "code": true, "exit": true, "errno": true,
	"signal": true, "sig": true, "sqlstate": true, "rc": true, "exitcode": true,
	"exit_code": true, "status_code": true, "statuscode": true, "returncode": true,
	"return_code": true, "error_code": true, "errorcode": true, "errcode": true,
	"http_status": true, "ora": true, "winerror": true, "hresult": true,
}

// userWords precede a user name, which varies per person, not per defect.
var userWords = map[string]bool{"user": true, "username": true, "for-user": true}

// httpMethods precede a request path, which carries ids and data.
var httpMethods = map[string]bool{
	"GET": true, "POST": true, "PUT": true, "DELETE": true, "PATCH": true, "HEAD": true, "OPTIONS": true,
}

// core normalizes a word stripped of surrounding brackets and punctuation.
// It returns whether the whole core was masked.
func (n *normalizer) core(b []byte, c string) ([]byte, bool) {
	if isQuote(c[0]) && len(c) >= 2 && c[len(c)-1] == c[0] {
		return n.quoted(b, c), false
	}
	if isQuote(c[0]) { // an unbalanced quote: keep it, normalize the rest
		b = append(b, c[0])
		if len(c) == 1 {
			return b, false
		}
		return n.core(b, c[1:])
	}
	if codeWords[n.prev] && isCodeValue(c) {
		return append(b, c...), false
	}
	if httpMethods[n.prev] && c[0] == '/' {
		return append(b, Mask...), true
	}
	if userWords[n.prev] && isPlainName(c) {
		return append(b, Mask...), true
	}
	if strings.Contains(c, "://") {
		return appendURL(b, c), true
	}
	if eq := keyValueSplit(c); eq > 0 {
		key := c[:eq]
		b = appendToken(b, key)
		b = append(b, c[eq])
		val := c[eq+1:]
		if val == "" {
			return b, false
		}
		if codeWords[strings.ToLower(key)] && isCodeValue(val) {
			return append(b, val...), false
		}
		if isQuote(val[0]) {
			return n.quoted(b, val), false
		}
		return append(b, Mask...), false
	}
	if isPath(c) {
		return appendPath(b, c)
	}
	if isIP(c) {
		return append(b, Mask...), true
	}
	if isHostName(c) {
		return append(b, Mask...), true
	}
	if isMonthOrDay(c) && n.lastMasked {
		return append(b, Mask...), true
	}
	return appendTokenMasked(b, c)
}

func isQuote(c byte) bool { return c == '"' || c == '\'' || c == '`' }

// quoted normalizes a quoted string: prose (anything with whitespace) is a
// data value echoed in the message and is masked; a single token such as a
// field, table, constraint or module name is kept after the usual masking.
func (n *normalizer) quoted(b []byte, c string) []byte {
	q := c[0]
	inner := c[1 : len(c)-1]
	b = append(b, q)
	switch {
	case inner == "":
	case strings.IndexFunc(inner, func(r rune) bool { return r == ' ' || r == '\t' }) >= 0:
		if sp := strings.IndexByte(inner, ' '); sp > 0 && httpMethods[inner[:sp]] {
			// A request line: the method is the operation, the rest data.
			b = append(b, inner[:sp]...)
			b = append(b, ' ')
		}
		b = append(b, Mask...)
	default:
		sub := normalizer{}
		sub.line(inner)
		b = append(b, sub.out...)
	}
	return append(b, q)
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

// isPlainName: a word made of name characters, e.g. a user name.
func isPlainName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isWordByte(c) && c != '-' && c != '.' && c != '@' && c < 0x80 {
			return false
		}
	}
	return true
}

// keyValueSplit returns the index of the '=' (or ':' for none) splitting a
// key=value token, or -1. The key must look like an identifier.
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

// appendToken appends a token with its digit-bearing parts masked.
func appendToken(b []byte, s string) []byte {
	b, _ = appendTokenMasked(b, s)
	return b
}

// appendTokenMasked splits a token into alphanumeric runs and separators,
// masks the runs that hold volatile data (numbers, hex, mixed letters and
// digits) and merges masks joined only by separators, so "1.5s", "30ms",
// "2026-01-01T00:00:00Z" and "10.0.0.1:8080" each become a single mask and
// "blk_-123" and "blk_456" the same "blk_<*>". It reports whether the whole
// token was masked.
func appendTokenMasked(b []byte, s string) ([]byte, bool) {
	start := len(b)
	sepStart := 0 // start in s of the separators not yet written
	lastWasMask := false
	allMasked := true
	i := 0
	for i < len(s) {
		if !isAlnum(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && isAlnum(s[j]) {
			j++
		}
		run, seps := s[i:j], s[sepStart:i]
		if volatileRun(run) {
			if !lastWasMask {
				// A minus sign directly before a number is part of it.
				if strings.HasSuffix(seps, "-") && (len(seps) > 1 || i == 1) {
					seps = seps[:len(seps)-1]
				}
				b = append(b, seps...)
				b = append(b, Mask...)
			} // else: the separators between two masks are absorbed.
			lastWasMask = true
		} else {
			b = append(b, seps...)
			b = append(b, run...)
			lastWasMask = false
			allMasked = false
		}
		sepStart = j
		i = j
	}
	if sepStart < len(s) {
		b = append(b, s[sepStart:]...)
		allMasked = false
	}
	return b, allMasked && len(b) > start
}

func isAlnum(c byte) bool { return isASCIILetter(c) || isDigit(c) }

// volatileRun decides whether an alphanumeric run is data. Runs without
// digits are words and kept. Runs with digits are masked, except
// identifiers that end in a short version-like number (sha256, int64, utf8,
// ipv6, http2, log4j), which name code rather than data.
func volatileRun(run string) bool {
	digits, letters, leadLetters := 0, 0, 0
	inLead := true
	hexOnly := true
	for i := 0; i < len(run); i++ {
		c := run[i]
		if isDigit(c) {
			digits++
			inLead = false
		} else {
			letters++
			if inLead {
				leadLetters++
			}
			if !isHexByte(c) {
				hexOnly = false
			}
		}
	}
	if digits == 0 {
		// Long pure-hex words are ids too (a SHA with no digit is rare,
		// but "deadbeefcafe" is not a word).
		return hexOnly && len(run) >= 12
	}
	if leadLetters >= 2 && digits <= 2 && !(hexOnly && len(run) >= 6) {
		return false
	}
	if leadLetters >= 3 && digits <= 3 && !hexOnly {
		return false
	}
	return true
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

// appendPath masks a path's directories (checkout roots, home and temp
// dirs vary per machine) but keeps a file name with an extension, which
// usually names the project file the message is about (config.yaml vs
// state.db). Route templates ("/repos/{owner}/{repo}") are kept whole.
func appendPath(b []byte, c string) ([]byte, bool) {
	if strings.IndexByte(c, '{') >= 0 && strings.IndexByte(c, '}') >= 0 {
		return append(b, c...), false
	}
	last := strings.LastIndexAny(c, `/\`)
	base := c[last+1:]
	// The file name stops at a ":line" suffix.
	if k := strings.IndexByte(base, ':'); k >= 0 {
		base = base[:k]
	}
	dot := strings.LastIndexByte(base, '.')
	if dot <= 0 || dot == len(base)-1 || !isExtension(base[dot+1:]) {
		return append(b, Mask...), true
	}
	b = append(b, Mask...)
	b = append(b, c[last])
	b, _ = appendTokenMasked(b, base)
	return b, false
}

// isExtension: a short, alphabetic file extension.
func isExtension(s string) bool {
	if len(s) > 5 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isASCIILetter(s[i]) {
			return false
		}
	}
	return true
}

// appendURL keeps a URL's scheme and masks the rest: hosts, ids in the
// path and query strings all vary.
func appendURL(b []byte, c string) []byte {
	k := strings.Index(c, "://")
	b = append(b, c[:k+3]...)
	return append(b, Mask...)
}

// isIP: IPv4 (optionally with port or prefix), IPv6, or a MAC address.
func isIP(c string) bool {
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

// hostTLDs end host names; code identifiers (os.Open, config.yaml) don't.
var hostTLDs = map[string]bool{
	"com": true, "net": true, "org": true, "io": true, "edu": true, "gov": true,
	"internal": true, "local": true, "localdomain": true, "lan": true, "cloud": true,
	"dev": true, "app": true, "us": true, "uk": true, "de": true, "cn": true, "hk": true,
	"jp": true, "fr": true, "ru": true, "info": true, "biz": true, "co": true, "ai": true,
	"svc": true, "cluster": true, "amazonaws": true,
}

// isHostName: "localhost", or a dotted name ending in a well-known TLD,
// optionally with a port.
func isHostName(c string) bool {
	if p := strings.LastIndexByte(c, ':'); p > 0 {
		port := c[p+1:]
		if port == "" {
			return false
		}
		for i := 0; i < len(port); i++ {
			if !isDigit(port[i]) {
				return false
			}
		}
		c = c[:p]
	}
	if strings.EqualFold(c, "localhost") {
		return true
	}
	dot := strings.LastIndexByte(c, '.')
	if dot <= 0 {
		return false
	}
	for i := 0; i < len(c); i++ {
		ch := c[i]
		if !isAlnum(ch) && ch != '-' && ch != '.' {
			return false
		}
	}
	return hostTLDs[strings.ToLower(c[dot+1:])]
}

var monthsAndDays = map[string]bool{
	"jan": true, "feb": true, "mar": true, "apr": true, "may": true, "jun": true,
	"jul": true, "aug": true, "sep": true, "oct": true, "nov": true, "dec": true,
	"mon": true, "tue": true, "wed": true, "thu": true, "fri": true, "sat": true, "sun": true,
	"am": true, "pm": true, "utc": true, "gmt": true,
}

// isMonthOrDay: part of a written-out timestamp (only masked next to
// another masked token, so the word "may" survives in prose).
func isMonthOrDay(c string) bool {
	if len(c) > 9 {
		return false
	}
	return monthsAndDays[strings.ToLower(c)] || monthsAndDays[strings.ToLower(c[:min(3, len(c))])] && isFullMonthOrDay(strings.ToLower(c))
}

var fullMonthsAndDays = map[string]bool{
	"january": true, "february": true, "march": true, "april": true, "june": true, "july": true,
	"august": true, "september": true, "october": true, "november": true, "december": true,
	"monday": true, "tuesday": true, "wednesday": true, "thursday": true, "friday": true,
	"saturday": true, "sunday": true,
}

func isFullMonthOrDay(s string) bool { return fullMonthsAndDays[s] }
