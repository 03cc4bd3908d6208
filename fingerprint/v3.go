package fingerprint

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// Version 3: the record's identity masked (MaskIdentity), then the live
// normalizer, NormalizeV3, which v4 runs too (after maskData). Its text
// pass is in v3_text.go, its word rules in v3_rules.go. Any change here
// changes the v3 aliases (testdata/golden-v3.jsonl): v3 must first be
// frozen as a copy, as v2 is, and the change made as a new version.

// NormalizeV3 is the v3 template normalizer: Normalize, plus what varies
// across environments and library versions (v3_text.go, v3_rules.go).
func NormalizeV3(errorText string) string {
	return normalize(canonV3(errorText))
}

// templateV3 is the v3 template: the record's identity runs masked, then
// NormalizeV3.
func templateV3(in Input) string {
	if strings.TrimSpace(in.Error) != "" {
		return NormalizeV3(MaskIdentity(in.Error, in.Identity))
	}
	return fieldsTemplate(in)
}

// identityPlaceholder stands in for the record's identity before the text
// is normalized. It is data by every rule of the normalizer (a long run of
// digits: masked as a bare word, a quoted value, a path segment, a ref's
// leaf, an e-mail's local part) and never a code value (longer than 12),
// so the template around it is the one any other value of the same
// identity would give. A literal Mask would instead be parsed as brackets
// and split the word it stands in ("<*>@example.com", "<*>/.git/x").
const identityPlaceholder = "0000000000000"

// MaskIdentity replaces each range of text with identityPlaceholder, for
// the normalizer to mask. Ranges that are out of order, overlapping or out
// of bounds are skipped, so a caller's mistake can only mask less.
func MaskIdentity(text string, ranges [][2]int) string {
	if len(ranges) == 0 {
		return text
	}
	var b strings.Builder
	b.Grow(len(text))
	at := 0
	for _, r := range ranges {
		if r[0] < at || r[1] <= r[0] || r[1] > len(text) {
			continue
		}
		b.WriteString(text[at:r[0]])
		if c := text[r[0]]; c == '/' || c == '\\' {
			// A masked working directory stays a path: "/<id>/.git/x"
			// normalizes as "<cwd>/.git/x" would.
			b.WriteByte(c)
		}
		b.WriteString(identityPlaceholder)
		at = r[1]
	}
	b.WriteString(text[at:])
	return b.String()
}

// normalize is NormalizeV3 after its text pass.
func normalize(errorText string) string {
	if strings.Contains(errorText, "' panicked at ") {
		errorText = rustPanic(errorText)
	}
	if strings.IndexByte(errorText, '\n') >= 0 {
		if t, ok := parseTrace(errorText); ok {
			return render(t)
		}
		return normalizeLines(errorText)
	}
	n := newNormalizer(len(errorText) + 16)
	n.line(errorText)
	return n.finish()
}

// normalizeLines normalizes each non-blank line of a multi-line text that is
// not a recognised stack trace. Caller frames in the remaining trace shapes
// are the call path, which varies per occurrence: Ruby's "from x.rb:9:in
// `run'" lines are dropped, and of numbered frames ("#0 /x.php(31): f()",
// gdb's "#1  0x7f… in g ()") only the first, innermost, is kept.
func normalizeLines(text string) string {
	n := newNormalizer(len(text))
	dropOptional := hasRequiredLine(text)
	numberedFrame := false
	for len(text) > 0 && len(n.out) < maxTemplate {
		var line string
		line, text, _ = strings.Cut(text, "\n")
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

// render writes a trace's normalized message lines and its top frame.
func render(t trace) string {
	message, frames := t.message, t.frames
	size := 0
	for _, m := range message {
		size += len(m) + 1
	}
	n := newNormalizer(size + 64) // and the frame
	optional, required := optionalLines(message)
	dropOptional := optional && required
	for _, m := range message {
		if t := strings.TrimSpace(m); t == "" || dropOptional && isOptionalLine(t) {
			continue
		}
		if len(n.out) > 0 {
			n.out = append(n.out, '\n')
		}
		n.line(m)
	}
	if f, ok := topFrame(frames); ok {
		if len(n.out) > 0 {
			n.out = append(n.out, '\n')
		}
		n.out = append(n.out, "  at "...)
		n.out = append(n.out, f.function...)
		if f.file != "" {
			n.out = append(n.out, " ("...)
			n.out = append(n.out, f.file...)
			n.out = append(n.out, ')')
		}
	}
	return n.finish()
}

// newNormalizer is a normalizer whose output (of about size bytes) and
// scratch word share one allocation, rather than each growing by
// reallocation a word at a time. Their ranges do not overlap: either grows
// into a new array once full.
func newNormalizer(size int) normalizer {
	const word = 64
	size = min(size, maxTemplate+word)
	buf := make([]byte, 0, size+word)
	return normalizer{out: buf[:0:size], scratch: buf[size:size]}
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
	// prevRaw is the previous raw word, and absorbParen says a masked
	// thread name may be followed by its "(target)".
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
		j = joinPathWords(s, i, j)
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
	if !n.assertLine && len(w) >= 6 {
		n.assertLine = isAssertWord(w)
	}
	n.prevColon = strings.HasSuffix(w, ":")
	if valueWords.hasFold(trimPunct(w)) {
		n.valueSeen = true
	}
}

// prevIs reports whether the previous word, lower-cased, is in set.
func (n *normalizer) prevIs(set wordSet) bool { return set.hasFold(n.prev) }

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

func (n *normalizer) prevIsCodeKey() bool {
	var buf [24]byte
	l := lowerInto(buf[:0], n.prev)
	return len(l) > 0 && isCodeKey(string(l))
}

// core appends the normalized form of a word stripped of surrounding
// brackets and punctuation, and reports whether it was wholly masked.
func (n *normalizer) core(c string) bool {
	if done, masked := n.coreV3(c); done {
		return masked
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
		}
		return n.lettersV3(c)
	}
	switch {
	case isCodeValue(c) && !n.accessLog && n.prevIsCodeKey(),
		isHTTPStatus(c) && (n.prevURL || reasonPhrase[strings.Trim(n.next, ",.:;()")]):
		n.out = append(n.out, c...)
		return false
	case c[0] == '/' && n.prevIs(lowerHTTPMethods) && strings.IndexByte(c, '{') < 0:
		n.route(c)
		return false
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
		n.urlRoute(c[k+3:])
		return false
	}
	if eq := keyValueSplit(c); eq > 0 {
		n.keyValue(c[:eq], c[eq+1:])
		return false
	}
	switch {
	case isPath(c):
		return n.path(c)
	case isIP(c), isHostName(c), isBoolean(c), isUUID(c), isEmail(c), isUserAtHost(c), isUserAtHostV3(c):
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
	n.out = appendMaskedV3(n.out, c)
	if onlyMasksAndSymbols(n.out[start:]) {
		// "#3#", "+0x1d", "$5": a number dressed in symbols.
		n.out = append(n.out[:start], Mask...)
		return true
	}
	return false
}

func (n *normalizer) mask() bool {
	n.out = append(n.out, Mask...)
	return true
}

// quoted normalizes a quoted string: prose (anything with whitespace) is a
// data value echoed in the message and is masked; a single token such as a
// field, table, constraint or module name is kept after the usual masking.
func (n *normalizer) quoted(c string) {
	q := c[0]
	inner := c[1 : len(c)-1]
	n.out = append(n.out, q)
	switch {
	case inner == "":
	case isPath(inner) && strings.IndexAny(inner[strings.LastIndexAny(inner, `/\`)+1:], " \t") < 0:
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
	case isQuotedData(inner), n.prev != "" && n.prevIs(valueWords), n.valueSeen && n.prevColon, isQuotedDataV3(inner):
		n.out = append(n.out, Mask...)
	default:
		sub := normalizer{out: n.out, dateRun: -1}
		sub.word(inner, len(n.out))
		n.out = sub.out
	}
	n.out = append(n.out, q)
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
	// One file on Windows and on POSIX: the separator is the OS's.
	n.out = append(n.out, '/')
	n.out = appendFileNameMasked(n.out, base)
	return false
}
