package fingerprint

import (
	"bytes"
	"regexp"
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
func Normalize(errorText string) string { return normalize(errorText, false) }

// normalize is Normalize (v2) or, with v3, NormalizeV3 after its text pass.
func normalize(errorText string, v3 bool) string {
	if strings.Contains(errorText, "' panicked at ") {
		errorText = rustPanic(errorText)
	}
	if strings.IndexByte(errorText, '\n') >= 0 {
		if t, ok := normalizeTrace(errorText, v3); ok {
			return t
		}
		return normalizeLines(errorText, v3)
	}
	n := newNormalizer(v3, len(errorText)+16)
	n.line(errorText)
	return n.finish()
}

// newNormalizer is a normalizer whose output (of about size bytes) and
// scratch word share one allocation, rather than each growing by
// reallocation a word at a time. Their ranges do not overlap: either grows
// into a new array once full.
func newNormalizer(v3 bool, size int) normalizer {
	const word = 64
	size = min(size, maxTemplate+word)
	buf := make([]byte, 0, size+word)
	return normalizer{out: buf[:0:size], scratch: buf[size:size], v3: v3}
}

// Rust panics: "thread 'NAME' panicked at 'MESSAGE', FILE:LINE:COL" (before
// Rust 1.73) or "thread 'NAME' panicked at FILE:LINE:COL:" with the message
// on the next line. The thread name varies per run; the message is the
// defect, though quoted prose is otherwise data; the file's place is masked
// as everywhere.
var (
	rustPanicOld = regexp.MustCompile(`thread '[^'\n]*' panicked at '(.*)', (\S+?):\d+:\d+`)
	rustPanicNew = regexp.MustCompile(`thread '[^'\n]*' panicked at (\S+?):\d+:\d+:`)
)

func rustPanic(text string) string {
	text = rustPanicOld.ReplaceAllString(text, "thread panicked at $2: $1")
	return rustPanicNew.ReplaceAllString(text, "thread panicked at $1:")
}

// normalizeLines normalizes each non-blank line of a multi-line text that is
// not a recognised stack trace. Caller frames in the remaining trace shapes
// are the call path, which varies per occurrence: Ruby's "from x.rb:9:in
// `run'" lines are dropped, and of numbered frames ("#0 /x.php(31): f()",
// gdb's "#1  0x7f… in g ()") only the first, innermost, is kept.
func normalizeLines(text string, v3 bool) string {
	n := newNormalizer(v3, len(text))
	dropOptional := v3 && hasRequiredLine(text)
	numberedFrame := false
	for len(text) > 0 && len(n.out) < maxTemplate {
		line := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		t := strings.TrimSpace(line)
		if t == "" || isRubyCaller(line, t) || dropOptional && isOptionalLine(t) {
			continue
		}
		if isNumberedFrame(t) || isRubyFrame(line, t) {
			// Only the innermost frame: the callers are the call path.
			if numberedFrame {
				continue
			}
			numberedFrame = true
		}
		if len(n.out) > 0 {
			n.out = append(n.out, '\n')
		}
		n.line(line)
	}
	return n.finish()
}

// isRubyCaller: an indented "from path:line:in ..." frame.
func isRubyCaller(line, t string) bool {
	return len(line) > len(t) && strings.HasPrefix(t, "from ") && strings.Contains(t, ":in ")
}

// isRubyFrame: an indented Rails-style frame without "from":
// "  app/models/order.rb:12:in `summary'".
func isRubyFrame(line, t string) bool {
	i := strings.Index(t, ".rb:")
	return len(line) > len(t) && i > 0 && !strings.ContainsAny(t[:i], " \t") && strings.Contains(t[i:], ":in ")
}

// isNumberedFrame: "#<digits> " opening a line that names a call — it has
// an argument list — or PHP's "{main}"; a line like "#4521 merged" is not
// a frame.
func isNumberedFrame(t string) bool {
	if len(t) < 3 || t[0] != '#' {
		return false
	}
	i := 1
	for i < len(t) && isDigit(t[i]) {
		i++
	}
	if i == 1 || i == len(t) || t[i] != ' ' {
		return false
	}
	rest := t[i:]
	return strings.IndexByte(rest, '(') >= 0 || strings.TrimSpace(rest) == "{main}"
}

// normalizer accumulates a template one line at a time.
type normalizer struct {
	out []byte
	// prev is the previous word of the current line, lowercased and
	// trimmed of punctuation: it decides whether a number is an identity
	// code ("HTTP 410", "exit 137") and whether a word is a user name.
	prev string
	// lastMasked is true when the last word written was wholly masked, so
	// runs of volatile words ("Mon Jan 2 15:04:05 2006", "1190 bytes
	// (1.16 KB)", id lists) collapse into one mask; maskEnd is where that
	// mask ends in out, before the word's trailing punctuation.
	lastMasked bool
	maskEnd    int
	maskOpen   int // brackets opened by the masked run and not yet closed
	// accessLog is set once the line shows a quoted HTTP request line
	// ("GET /x HTTP/1.1"): such a line reports one request among many, and
	// its status is per-request data like its length and timing.
	accessLog bool
	// urlSeen is set by a URL word; prevURL tells the next word that the
	// previous one was a URL, after which three digits are its response
	// status ("POST https://x/y: 403 You have exceeded ...").
	urlSeen, prevURL bool
	// next is the raw word after the current one.
	next string
	// lastWord and lastBodyEnd delimit the last word written (without its
	// trailing punctuation), so a list of like values ("blk_<*> blk_<*>")
	// collapses into one.
	lastWord, lastBodyEnd int
	// scratch holds a word's normalized body before it is written.
	scratch []byte
	// dateRun is where a run of month/day names starts in out (-1: none),
	// so "Sun Jul 3 ..." masks its names once the number shows it is a date.
	dateRun int
	// valueSeen: a value word ("literal", "value", ...) came earlier on the
	// line; prevColon: the previous raw word ended with ':'. Together they
	// mark a quoted token as the value a message echoes ("invalid literal
	// for int() with base 10: 'abc'"), not a name ("KeyError: 'user_id'").
	valueSeen, prevColon bool
	// v3 turns on NormalizeV3's rules (normalize_v3.go); prevRaw is the
	// previous raw word, and absorbParen says a masked thread name may be
	// followed by its "(target)".
	v3          bool
	prevRaw     string
	absorbParen bool
	assertLine  bool // an assert... word came earlier on the line
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
	n.valueSeen, n.prevColon = false, false
	n.assertLine, n.prevRaw = false, ""
	n.lastMasked = false
	n.accessLog = false
	n.dateRun = -1
	n.lastWord = -1
	start := len(n.out)
	i, nextEnd := 0, 0
	for i < len(s) {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i >= len(s) {
			break
		}
		j := nextEnd
		if j <= i {
			j = wordEnd(s, i)
		}
		if n.v3 {
			j = joinPathWords(s, i, j)
		}
		// The next word, for the few rules that look ahead ("404 Not Found").
		k := j
		for k < len(s) && isSpace(s[k]) {
			k++
		}
		nextEnd = wordEnd(s, k)
		n.next = s[k:nextEnd]
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
	for j < len(s) && !wordStop[s[j]] {
		j++
	}
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
	openers = "([{<"
	closers = ")]}>,;:.!?"
)

// word normalizes one whitespace-delimited word and appends it.
func (n *normalizer) word(w string, lineStart int) {
	defer n.noteWord(w)
	// Leading brackets and trailing punctuation are structure, kept as
	// they are around the normalized core.
	lead := 0
	for lead < len(w) && strings.IndexByte(openers, w[lead]) >= 0 {
		lead++
	}
	trail := len(w)
	for trail > lead && strings.IndexByte(closers, w[trail-1]) >= 0 {
		// A bracket closing one opened inside the word stays: "LOCAL(0)".
		if k := strings.IndexByte(")]}>", w[trail-1]); k >= 0 && strings.IndexByte(w[lead:trail-1], "([{<"[k]) >= 0 {
			break
		}
		trail--
	}
	prefix, core, suffix := w[:lead], w[lead:trail], w[trail:]
	if n.absorbParen {
		// "Thread-1 (worker):": Python 3.10+ adds the thread's target.
		n.absorbParen = false
		if n.lastMasked && prefix == "(" && strings.HasPrefix(suffix, ")") && isIdentifier(core) {
			n.out = append(n.out[:n.maskEnd], suffix[1:]...)
			return
		}
	}
	if core == "" {
		if n.lastMasked && isEmptyBrackets(w) {
			// "from <*> ()" and "from <*> (<*>)": an absent value.
			return
		}
		n.emit(w, lineStart)
		n.lastMasked, n.dateRun, n.prev, n.lastWord = false, -1, "", -1
		return
	}

	// core() appends to n.out; point it at the scratch buffer meanwhile,
	// so the body can be inspected before it is written (no allocation).
	out := n.out
	n.out = append(n.scratch[:0], prefix...)
	n.urlSeen = false
	masked := n.core(core)
	n.prevURL = n.urlSeen
	body := n.out // prefix + normalized core
	n.scratch = body
	n.out = out

	var lowerBuf [16]byte
	lowerCore := lowerInto(lowerBuf[:0], core)
	// A unit after a masked number is part of the measurement: "850.0 B"
	// and "5.2 KB" are one size, "3 ms" and "2 s" one duration.
	if !masked && prefix == "" && n.lastMasked && units[string(lowerCore)] {
		masked = true
	}
	// Month and day names next to a masked number are part of a timestamp.
	if !masked && prefix == "" && len(lowerCore) >= 2 && len(lowerCore) <= 9 && monthsAndDays[string(lowerCore)] {
		if n.lastMasked {
			masked = true
		} else {
			if n.dateRun < 0 {
				n.dateRun = len(n.out)
			}
			n.emit2(body, suffix, lineStart)
			n.prev, n.lastWord = "", -1
			return
		}
	}

	if masked {
		// Brackets opened by the masked run close with it: "(1.16 KB)"
		// is one masked measurement.
		open := len(prefix)
		if n.lastMasked {
			open += n.maskOpen
		}
		for open > 0 && suffix != "" && strings.IndexByte(")]}>", suffix[0]) >= 0 {
			suffix = suffix[1:]
			open--
		}
		n.maskOpen = open
		switch {
		case n.lastMasked:
			// Collapse into the previous mask; the later punctuation wins.
			n.out = append(n.out[:n.maskEnd], suffix...)
		case n.dateRun >= 0:
			// "Sun Jul" turned out to start a timestamp.
			n.out = n.out[:n.dateRun]
			n.emit(Mask, lineStart)
			n.maskEnd = len(n.out)
			n.out = append(n.out, suffix...)
		default:
			if len(n.out) > lineStart {
				n.out = append(n.out, ' ')
			}
			n.out = append(n.out, Mask...)
			n.maskEnd = len(n.out)
			n.out = append(n.out, suffix...)
		}
		n.lastMasked, n.dateRun, n.prev, n.lastWord = true, -1, "", -1
		return
	}
	if n.lastWord >= 0 && bytes.Contains(body, maskBytes) && bytes.Equal(n.out[n.lastWord:n.lastBodyEnd], body) {
		// Another value of the same shape: "blk_<*> blk_<*>" is a list.
		n.out = append(n.out[:n.lastBodyEnd], suffix...)
		return
	}
	if len(n.out) > lineStart {
		n.out = append(n.out, ' ')
	}
	n.lastWord = len(n.out)
	n.out = append(n.out, body...)
	n.lastBodyEnd = len(n.out)
	n.out = append(n.out, suffix...)
	n.lastMasked, n.dateRun = false, -1
	n.prev = trimPunct(core)
}

// noteWord records what the next word needs to know about this one.
func (n *normalizer) noteWord(w string) {
	n.prevRaw = w
	if n.v3 && !n.assertLine && len(w) >= 6 {
		n.assertLine = isAssertWord(w)
	}
	n.prevColon = strings.HasSuffix(w, ":")
	if valueWords.hasFold(trimPunct(w)) {
		n.valueSeen = true
	}
}

var maskBytes = []byte(Mask)

// lowerInto lower-cases an ASCII word into buf; a word longer than buf's
// capacity yields an empty result (no keyword is that long).
func lowerInto(buf []byte, s string) []byte {
	if len(s) > cap(buf) {
		return buf[:0]
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf = append(buf, c)
	}
	return buf
}

// trimPunct strips brackets, quotes and punctuation around a keyword.
func trimPunct(s string) string {
	for len(s) > 0 && keywordPunct[s[0]] {
		s = s[1:]
	}
	for len(s) > 0 && keywordPunct[s[len(s)-1]] {
		s = s[:len(s)-1]
	}
	return s
}

var keywordPunct = func() (t [256]bool) {
	for _, c := range []byte("[](){}<>#:=,;\"'`") {
		t[c] = true
	}
	return t
}()

// wordStop marks the bytes wordEnd must look at: whitespace and quotes.
var wordStop = func() (t [256]bool) {
	for _, c := range []byte(" \t\r\f\v\n\"'`") {
		t[c] = true
	}
	return t
}()

// prevIs reports whether the previous word, lower-cased, is in set.
func (n *normalizer) prevIs(set wordSet) bool { return set.hasFold(n.prev) }

// wordSet is a small set of lower-case keywords, asked about words of any
// case. It rules a word out by its length before lower-casing and hashing
// it: the normalizer asks about every word, and most words are of a length
// no keyword in the set has.
type wordSet struct {
	lengths uint64 // bit n set: a keyword has n bytes (all are under 64)
	words   map[string]bool
}

func newWordSet(words ...string) wordSet {
	s := wordSet{words: map[string]bool{}}
	for _, w := range words {
		s.lengths |= 1 << len(w)
		s.words[w] = true
	}
	return s
}

// hasFold reports whether w, lower-cased, is in the set.
func (s wordSet) hasFold(w string) bool {
	if len(w) >= 64 || s.lengths&(1<<len(w)) == 0 {
		return false
	}
	var buf [64]byte
	return s.words[string(lowerInto(buf[:0], w))]
}

// isEmptyBrackets: "()", "[]", "{}" or "<>", alone.
func isEmptyBrackets(w string) bool {
	return w == "()" || w == "[]" || w == "{}" || w == "<>"
}

// emit2 appends body and suffix as the next word of the line.
func (n *normalizer) emit2(body []byte, suffix string, lineStart int) {
	if len(n.out) > lineStart {
		n.out = append(n.out, ' ')
	}
	n.out = append(n.out, body...)
	n.out = append(n.out, suffix...)
}

// emit appends s as the next word of the line.
func (n *normalizer) emit(s string, lineStart int) {
	if len(n.out) > lineStart {
		n.out = append(n.out, ' ')
	}
	n.out = append(n.out, s...)
}

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

func (n *normalizer) prevIsCodeKey() bool {
	var buf [24]byte
	l := lowerInto(buf[:0], n.prev)
	return len(l) > 0 && isCodeKey(string(l))
}

var lowerHTTPMethods = newWordSet("get", "post", "put", "delete", "patch", "head", "options")

// isLetters: ASCII letters only.
func isLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isASCIILetter(s[i]) {
			return false
		}
	}
	return true
}

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

// core appends the normalized form of a word stripped of surrounding
// brackets and punctuation, and reports whether it was wholly masked.
func (n *normalizer) core(c string) bool {
	if n.v3 {
		if done, masked := n.coreV3(c); done {
			return masked
		}
	}
	if isQuote(c[0]) {
		if len(c) >= 2 && c[len(c)-1] == c[0] {
			n.quoted(c)
			return false
		}
		// An unbalanced quote: keep it, normalize the rest.
		n.out = append(n.out, c[0])
		if len(c) == 1 {
			return false
		}
		return n.core(c[1:]) && false
	}
	if isLetters(c) {
		// The common case, a plain word: most rules cannot apply.
		switch {
		case len(n.prev) >= 4 && n.prev[0]|0x20 == 'u' && n.prevIs(userWords):
			return n.mask()
		case isBoolean(c), len(c) >= minHexWord && volatileRun(c):
			return n.mask()
		case n.v3:
			return n.lettersV3(c)
		}
		n.out = append(n.out, c...)
		return false
	}
	switch {
	case isCodeValue(c) && !n.accessLog && n.prevIsCodeKey(),
		isHTTPStatus(c) && (n.prevURL || reasonPhrase[strings.Trim(n.next, ",.:;()")]):
		n.out = append(n.out, c...)
		return false
	case c[0] == '/' && n.prevIs(lowerHTTPMethods) && strings.IndexByte(c, '{') < 0:
		if n.v3 {
			n.route(c)
			return false
		}
		return n.mask()
	case n.prev != "" && n.prevIs(userWords) && isPlainName(c):
		return n.mask()
	case n.prev != "" && n.prevIs(hostWords) && isPlainName(c) && strings.ContainsAny(c, ".-0123456789"):
		// "on host build-agent-07", "resolve host: ghe.corp": a machine's
		// name, whatever its shape. A plain word ("host key") stays.
		return n.mask()
	case strings.Contains(c, "://"):
		k := strings.Index(c, "://")
		if !isPlainName(c[:k]) {
			break
		}
		// Keep the scheme; host, path ids and query strings all vary.
		n.out = append(n.out, c[:k+3]...)
		n.out = append(n.out, Mask...)
		n.urlSeen = true
		if n.v3 {
			n.urlRoute(c[k+3:])
		}
		return false
	}
	if eq := keyValueSplit(c); eq > 0 {
		n.keyValue(c[:eq], c[eq+1:])
		return false
	}
	switch {
	case isPath(c):
		return n.path(c)
	case isIP(c), isHostName(c), isBoolean(c), isUUID(c), isEmail(c), isUserAtHost(c), n.v3 && isUserAtHostV3(c):
		return n.mask()
	case isVendorCode(c):
		n.out = append(n.out, c...)
		return false
	}
	if k := strings.IndexByte(c, ':'); k > 0 && k < len(c)-1 && c[k+1] != ':' && c[k-1] != ':' && isBoolean(c[k+1:]) {
		n.out = appendTokenMasked(n.out, c[:k])
		n.out = append(n.out, ':')
		n.out = append(n.out, Mask...)
		return false
	}
	if isDeviceSlot(c) {
		return n.mask()
	}
	start := len(n.out)
	n.out = appendMasked(n.out, c, false, n.v3)
	if onlyMasksAndSymbols(n.out[start:]) {
		// "#3#", "+0x1d", "$5": a number dressed in symbols.
		n.out = append(n.out[:start], Mask...)
		return true
	}
	return false
}

// onlyMasksAndSymbols: masks and ASCII punctuation, at least one mask.
func onlyMasksAndSymbols(b []byte) bool {
	masks := 0
	for i := 0; i < len(b); {
		if i+len(Mask) <= len(b) && string(b[i:i+len(Mask)]) == Mask {
			masks++
			i += len(Mask)
			continue
		}
		if isAlnum(b[i]) || b[i] >= 0x80 {
			return false
		}
		i++
	}
	return masks > 0
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

func (n *normalizer) mask() bool {
	n.out = append(n.out, Mask...)
	return true
}

func isQuote(c byte) bool { return c == '"' || c == '\'' || c == '`' }

// quoted normalizes a quoted string: prose (anything with whitespace) is a
// data value echoed in the message and is masked; a single token such as a
// field, table, constraint or module name is kept after the usual masking.
func (n *normalizer) quoted(c string) {
	q := c[0]
	inner := c[1 : len(c)-1]
	n.out = append(n.out, q)
	switch {
	case inner == "":
	case n.v3 && isPath(inner) && strings.IndexAny(inner[strings.LastIndexAny(inner, `/\`)+1:], " \t") < 0:
		// A quoted path may hold spaces ("/Users/John Smith/x.yaml").
		n.path(inner)
	case strings.IndexAny(inner, " \t") >= 0:
		if sp := strings.IndexByte(inner, ' '); sp > 0 && httpMethods[inner[:sp]] {
			// A request line: the method is the operation, the rest data.
			n.accessLog = true
			n.out = append(n.out, inner[:sp]...)
			n.out = append(n.out, ' ')
		}
		n.out = append(n.out, Mask...)
	case isQuotedData(inner), n.prev != "" && n.prevIs(valueWords), n.valueSeen && n.prevColon, n.v3 && isQuotedDataV3(inner):
		n.out = append(n.out, Mask...)
	default:
		sub := normalizer{out: n.out, dateRun: -1, v3: n.v3}
		sub.word(inner, len(n.out))
		n.out = sub.out
	}
	n.out = append(n.out, q)
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

// keyValue: the key names a field (kept); the value is data (masked),
// except identity codes (exit_code=137) and enum constants
// (action=ACTION_DOWN), which name what happened.
func (n *normalizer) keyValue(key, val string) {
	n.out = appendTokenMasked(n.out, key)
	n.out = append(n.out, '=')
	switch {
	case val == "":
	case isCodeKey(strings.ToLower(key)) && isCodeValue(val):
		n.out = append(n.out, val...)
	case isEnumConstant(val):
		n.out = append(n.out, val...)
	default:
		n.out = append(n.out, Mask...)
	}
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
func appendTokenMasked(b []byte, s string) []byte { return appendMasked(b, s, false, false) }

// appendFileNameMasked masks a file's base name. Unlike prose, a file name
// holds no device names: "run-abc0.json" and "run-abc1.json" are two runs
// of one defect, so every run with a digit is data (code names excepted).
func appendFileNameMasked(b []byte, s string) []byte { return appendMasked(b, s, true, false) }

// appendMasked masks a token; v3 adds NormalizeV3's generated names
// (letters-only ids, Kubernetes suffixes, GitHub node ids).
func appendMasked(b []byte, s string, fileName, v3 bool) []byte {
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
			if v3 {
				if w := podWorkload(seg); w > 0 {
					// A pod: its workload's name, then the generated parts.
					b = append(b, s[sepStart:i+w]...)
					b = append(b, '-')
					b = append(b, Mask...)
					lastWasMask = true
					sepStart, i = e, e
					continue
				}
			}
			if hasLongID(seg) || v3 && isGeneratedID(seg) {
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
		if run := s[i:j]; volatileRun(run) || inFileName && fileNameData(run) || v3 && generatedRun(s, i, j, lastWasMask) {
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

// runEnd returns the end of the alphanumeric run at i. A micro sign
// (µ or μ) inside a run belongs to it, so "81.7µs" masks like "81.7ms".
func runEnd(s string, i int) int {
	for i < len(s) {
		switch {
		case isAlnum(s[i]):
			i++
		case i+1 < len(s) && (s[i] == 0xC2 && s[i+1] == 0xB5 || s[i] == 0xCE && s[i+1] == 0xBC):
			i += 2
		default:
			return i
		}
	}
	return i
}

func isSegmentDelim(c byte) bool {
	switch c {
	case '{', '}', '(', ')', '[', ']', '<', '>', ',', ';', '"', '\'', '`', '|', '=', ':', '@':
		return true
	}
	return false
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

func isAlnum(c byte) bool { return isASCIILetter(c) || isDigit(c) }

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

// path masks a path's directories (checkout roots, home and temp dirs vary
// per machine) and keeps the file name only when it names a project file —
// configuration, state or source (config.yaml vs state.db vs main.go);
// data files (logs, dumps, binaries, captures) vary per run. Route
// templates ("/repos/{owner}/{repo}") are code and kept whole.
func (n *normalizer) path(c string) bool {
	if strings.IndexByte(c, '{') >= 0 && strings.IndexByte(c, '}') >= 0 {
		n.out = append(n.out, c...)
		return false
	}
	last := strings.LastIndexAny(c, `/\`)
	base := c[last+1:]
	if k := strings.IndexByte(base, ':'); k >= 0 {
		base = base[:k] // a ":line:col" suffix
	}
	dot := strings.LastIndexByte(base, '.')
	if dot <= 0 || !projectExtensions[strings.ToLower(base[dot+1:])] {
		return n.mask()
	}
	n.out = append(n.out, Mask...)
	if n.v3 {
		// One file on Windows and on POSIX: the separator is the OS's.
		n.out = append(n.out, '/')
	} else {
		n.out = append(n.out, c[last])
	}
	n.out = appendFileNameMasked(n.out, base)
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

// NormalizeV3 is the v3 template normalizer: Normalize, plus what varies
// across environments and library versions (see the package comment).
func NormalizeV3(errorText string) string {
	return normalize(canonV3(errorText), true)
}
