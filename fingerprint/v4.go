package fingerprint

import (
	"sort"
	"strings"
)

// v4's first pass: what the record and the text itself say is this
// occurrence's data, replaced by identityPlaceholder before NormalizeV3
// runs (which masks the placeholder wherever it stands). Each rule states
// one principle:
//
//   - The record's own identity (Input.Identity) and its field values
//     (Input.Values) found inside a larger token, across the usual glue
//     (_ - __ / . # : @), make the whole token data ("issue-1921-flaky-test"
//     on work item #1921); in an absolute path or a URL the token is the
//     segment, so the route or file around it stays.
//   - An enumerated field's value (echoedEnumFields) echoed in the message as
//     a word is data ("could not run cursor" on a cursor record).
//   - A quoted value that cannot be a code name is data: one starting with
//     '~' or '-', a ref of two or more segments with joined words or
//     digits after its first ('feat/x-y'); one holding a space or a tab is
//     quoted prose, which NormalizeV3 masks.
//   - user@host is a user and a host by position, whatever its words
//     ("root@ci", "dev@build-07.(none)").
//   - A value masked in one place is masked wherever it recurs.

// echoedEnumFields are the enumerated fields whose value, echoed in the
// message, is this occurrence's data (principle 3). exit_code and
// will_retry are not words a message echoes.
var echoedEnumFields = []string{"source", "gh_event", "harness", "via"}

// maskData replaces the record's and the text's data with
// identityPlaceholder (see above). It allocates only when it masks.
func maskData(in Input) string {
	text := in.Error
	var spans [][2]int
	add := func(s, e int) {
		if s >= 0 && e > s && e <= len(text) {
			spans = append(spans, [2]int{s, e})
		}
	}
	for _, r := range in.Identity {
		if r[0] >= 0 && r[1] > r[0] && r[1] <= len(text) {
			s, e := tokenAround(text, r[0], r[1])
			add(s, e)
		}
	}
	for _, v := range in.Values {
		gluedValue(text, v, add)
	}
	textData(text, add)
	// Where a token found so far recurs (words are found wherever they
	// stand already, and never glued).
	n := len(spans)
	for _, v := range in.Values {
		identityWords(v, func(w string) { wordOf(text, w, 2, add) })
	}
	for _, k := range echoedEnumFields {
		if v, ok := in.field(k).(string); ok {
			wordOf(text, v, 3, add)
		}
	}
	if len(spans) == 0 {
		return text
	}
	// A value masked in one place is masked wherever it recurs.
	seen := map[string]bool{}
	for _, sp := range spans[:n] {
		if v := strings.Trim(text[sp[0]:sp[1]], "/\\"); len(v) >= 4 && !seen[v] {
			seen[v] = true
			recurrences(text, v, add)
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i][0] < spans[j][0] })
	merged := spans[:1]
	for _, sp := range spans[1:] {
		if last := &merged[len(merged)-1]; sp[0] <= last[1] {
			last[1] = max(last[1], sp[1])
			continue
		}
		merged = append(merged, sp)
	}
	return MaskIdentity(text, merged)
}

// tokenStop ends a token: whitespace, quotes, brackets and list or
// assignment punctuation. Glue (_ - . / # : @) does not.
var tokenStop = func() (t [256]bool) {
	for _, c := range []byte(" \t\r\n\f\v\"'`()[]{}<>,;=|") {
		t[c] = true
	}
	return t
}()

// glue joins the parts of one token.
func isGlue(c byte) bool {
	switch c {
	case '_', '-', '.', '/', '\\', '#', ':', '@':
		return true
	}
	return false
}

// tokenAround widens [s, e) to the token holding it, without the token's
// trailing punctuation. In a path it widens to the segment only
// ("/home/x/acme__widgets__7.json" masks the file, not the directories),
// and in a URL not at all.
func tokenAround(text string, s, e int) (int, int) {
	ts, te := s, e
	for ts > 0 && !tokenStop[text[ts-1]] {
		ts--
	}
	for te < len(text) && !tokenStop[text[te]] {
		te++
	}
	for te > e && strings.IndexByte(":.,!?", text[te-1]) >= 0 {
		te--
	}
	tok := text[ts:te]
	if strings.Contains(tok, "://") {
		// A URL: the normalizer keeps its route and masks its data; the run
		// stands for a value there ("…/billing.io.git" stays a repository).
		return s, e
	}
	if isPath(tok) || strings.Count(tok, "/") >= 2 {
		for s > ts && !isSep(text[s-1]) {
			s--
		}
		for e < te && !isSep(text[e]) {
			e++
		}
		return s, e
	}
	return ts, te
}

func isSep(c byte) bool { return c == '/' || c == '\\' }

// gluedValue finds a record's field value, or one of its parts (split at
// / \ # : @ = and spaces), inside a larger token at glue boundaries, and
// adds the token when the part names one record (distinctivePart), when a
// number of any size is glued on both sides by - or _ ("issue-7-flaky"),
// or when two of the value's parts meet in the token ("acme__widgets__7");
// standing alone, a part is the identity rules' to judge.
func gluedValue(text, value string, add func(int, int)) {
	if len(value) > 256 {
		return
	}
	var pending [][3]int // tokens holding one weaker part: start, end, part
	try := func(k int, part string) {
		if len(part) < 1 || len(part) > 64 {
			return
		}
		number := allDigits(part)
		strong := distinctivePart(part)
		if !strong && !number && len(part) < 2 {
			return
		}
		occurrences(text, part, func(p, e int) {
			before := p == 0 || tokenStop[text[p-1]] || isGlue(text[p-1])
			after := e == len(text) || tokenStop[text[e]] || isGlue(text[e])
			if !before || !after {
				return
			}
			gluedBefore := p > 1 && isGlue(text[p-1]) && !tokenStop[text[p-2]]
			gluedAfter := e+1 < len(text) && isGlue(text[e]) && !tokenStop[text[e+1]]
			if !gluedBefore && !gluedAfter {
				return
			}
			if number && (p > 1 && text[p-1] == '.' && isDigit(text[p-2]) || e+1 < len(text) && text[e] == '.' && isDigit(text[e+1])) {
				return // part of a version or a decimal ("python3.12" on issue #12)
			}
			s, t := tokenAround(text, p, e)
			if strong || number && gluedBefore && gluedAfter && isJoin(text[p-1]) && isJoin(text[e]) {
				add(s, t)
				return
			}
			for _, q := range pending {
				if q[0] == s && q[1] == t && q[2] != k {
					add(s, t)
				}
			}
			pending = append(pending, [3]int{s, t, k})
		})
	}
	try(-1, value)
	start, k := 0, 0
	for i := 0; i <= len(value); i++ {
		if i < len(value) && strings.IndexByte("/\\#:@= ", value[i]) < 0 {
			continue
		}
		// A provider before its ':' ("github:acme/x#7") is every record's.
		if part := value[start:i]; part != value && !(start == 0 && i < len(value) && value[i] == ':' && isWord(part)) {
			try(k, part)
			k++
		}
		start = i + 1
	}
}

// isJoin: glue that joins words into one name.
func isJoin(c byte) bool { return c == '-' || c == '_' }

// distinctivePart: a value's part that names one record (see gluedValue):
// it holds a digit, and a number has three digits or more (a smaller one
// is too often some other count). A part of words only ("the-loop" in a branch
// "the-loop/812-x") is as often a constant prefix every record shares.
func distinctivePart(part string) bool {
	digits, letters := 0, 0
	for i := 0; i < len(part); i++ {
		switch c := part[i]; {
		case isDigit(c):
			digits++
		case isASCIILetter(c):
			letters++
		case (c == '-' || c == '_' || c == '.') && i > 0 && i < len(part)-1 && letters > 0:
		default:
			return false
		}
	}
	return digits > 0 && (letters > 0 && len(part) >= 3 || letters == 0 && digits >= 3)
}

// identityWords are the words an identity value names its record by, as
// the message may echo them standing alone: the whole value ("build", an
// actor; "feature/x", a branch) and a work item's owner and repository
// (owner/repo#N), not a path's directories nor a branch's prefix, which
// prose uses as words.
func identityWords(v string, each func(string)) {
	if v == "" || isPath(v) {
		return
	}
	each(v)
	if c := strings.IndexByte(v, ':'); c > 0 && c < strings.IndexByte(v+"/", '/') {
		v = v[c+1:] // provider:owner/repo#N
	}
	repo, num, item := strings.Cut(v, "#")
	if owner, name, ok := strings.Cut(repo, "/"); item && allDigits(num) && ok && owner != "" && name != "" && !strings.Contains(name, "/") {
		each(owner)
		each(name)
	}
}

// wordOf adds each place value (minLen bytes or more) stands as a word of
// its own: not glued to a name ("cursor-agent" is a tool, "claude.json" a
// file) nor inside a path; a clause's ':' or a sentence's '.' may follow it.
func wordOf(text, value string, minLen int, add func(int, int)) {
	if len(value) < minLen || len(value) > 64 || strings.ContainsAny(value, " \t\n") || allDigits(value) {
		return
	}
	occurrences(text, value, func(p, e int) {
		if p > 0 && (isAlnum(text[p-1]) || isGlue(text[p-1]) || text[p-1] == '$') {
			return
		}
		if e < len(text) {
			c := text[e]
			if isAlnum(c) || c == '$' || isGlue(c) && !((c == ':' || c == '.') && (e+1 == len(text) || !isAlnum(text[e+1]))) {
				return
			}
		}
		add(p, e)
	})
}

// occurrences calls each with every place v occurs in text, overlapping
// ones included.
func occurrences(text, v string, each func(p, e int)) {
	for off := 0; off < len(text); {
		i := strings.Index(text[off:], v)
		if i < 0 {
			return
		}
		p := off + i
		off = p + 1
		each(p, p+len(v))
	}
}

// recurrences adds every other place v stands at token or glue boundaries.
func recurrences(text, v string, add func(int, int)) {
	occurrences(text, v, func(p, e int) {
		if (p == 0 || !isAlnum(text[p-1])) && (e == len(text) || !isAlnum(text[e])) {
			add(p, e)
		}
	})
}

// textData adds what the text alone shows is data: quoted values that
// cannot be code names and user@host logins.
func textData(text string, add func(int, int)) {
	if strings.Contains(text, "' panicked at ") {
		return // a Rust panic's quoted message is the defect (rustPanic)
	}
	for i := 0; i < len(text); i++ {
		switch c := text[i]; c {
		case '\'', '"', '`':
			if i > 0 && !isSpace(text[i-1]) && strings.IndexByte("([<=,", text[i-1]) < 0 {
				continue // an apostrophe inside a word, or a JSON member's value
			}
			j := strings.IndexByte(text[i+1:], c)
			if j < 0 {
				return
			}
			inner := text[i+1 : i+1+j]
			if k := i + 2 + j; (k == len(text) || !isAlnum(text[k])) && !strings.ContainsRune(inner, '\n') && quotedData(inner) {
				add(i+1, i+1+j)
			}
			i += j + 1
		case '@':
			if s, e, ok := userAtHost(text, i); ok {
				add(s, e)
				i = e - 1
			}
		}
	}
}

// quotedData: a quoted value that cannot be a code name (principle 5): an
// option or home-relative name ('-rf', '~scratch') or a ref of two or more segments whose later segments join words
// or hold digits ('feat/retry-loop'); a module path ('@scope/pkg',
// 'lodash/fp', 'github.com/x/y'), a MIME type or a path is not one.
func quotedData(v string) bool {
	if len(v) < 2 || len(v) > 200 {
		return false
	}
	switch {
	case v[0] == '~' && v != "~/":
		return true
	case v[0] == '-' && v[1] != '-' && !isDigit(v[1]) || strings.HasPrefix(v, "--") && len(v) > 2:
		return true
	case strings.ContainsAny(v, " \t"):
		return false // quoted prose: the normalizer masks it where it opens a word
	}
	slash := strings.IndexByte(v, '/')
	if slash <= 0 || !isASCIILetter(v[0]) || strings.ContainsAny(v, ".@:{}\\%?=") || strings.HasSuffix(v, "/") {
		return false
	}
	for i := slash + 1; i < len(v); i++ {
		if c := v[i]; isDigit(c) || c == '-' || c == '_' {
			return true
		}
	}
	return false
}

// userAtHost finds the login around the '@' at i: a lower-case user name
// before it, a host label after it (letters, digits, '-', '.', and the
// "(none)" git writes for an unknown domain). A version (pkg@1.2.3), a
// Java object (Class@1b6d3586) and a URL's credentials are not logins.
func userAtHost(text string, i int) (int, int, bool) {
	s := i
	for s > 0 && (isAlnum(text[s-1]) || strings.IndexByte("._-", text[s-1]) >= 0) {
		s--
	}
	if s == i || s > 0 && !(tokenStop[text[s-1]] || text[s-1] == ':') || !(text[s] >= 'a' && text[s] <= 'z' || text[s] == '_') {
		return 0, 0, false
	}
	for k := s; k < i; k++ {
		if text[k] >= 'A' && text[k] <= 'Z' {
			return 0, 0, false
		}
	}
	e := i + 1
	for e < len(text) && (isAlnum(text[e]) || text[e] == '-' || text[e] == '.' || text[e] == '(' || text[e] == ')') {
		e++
	}
	for e > i+1 && (text[e-1] == '.' || text[e-1] == ')' && !strings.Contains(text[i:e], "(")) {
		e--
	}
	host := text[i+1 : e]
	if host == "" || !isASCIILetter(host[0]) && host[0] != '(' || strings.Contains(text[max(0, s-3):s], "//") {
		return 0, 0, false
	}
	return s, e, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}

// isWord: letters only.
func isWord(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isASCIILetter(s[i]) {
			return false
		}
	}
	return s != ""
}

// Template returns the human-readable masked text for a record (v4): the
// normalized error with the record's and the text's data masked (maskData),
// or, when there is no error text, the allow-listed enum fields.
func Template(in Input) string {
	if strings.TrimSpace(in.Error) != "" {
		return NormalizeV3(maskData(in))
	}
	return fieldsTemplate(in)
}

// NormalizeV4 is the v4 normalizer of a text without a record: NormalizeV3
// after the text's own data rules (quoted values that cannot be code
// names, user@host, recurrences).
func NormalizeV4(errorText string) string { return NormalizeV3(maskData(Input{Error: errorText})) }

// identityEvent is the event as part of a v4 identity: a specific text
// decides the defect whatever event logged it (one missing binary reported
// by three components is one defect), while a generic one ("timeout",
// "exit status 1", "context canceled") names nothing without its event.
func identityEvent(event, template string) string {
	if specificText(template) {
		return ""
	}
	return event
}

// specificText: a template of at least 24 bytes with at least three
// distinct words of three letters or more that are not generic failure
// vocabulary, one of them distinctive (a capital, a digit or '_' in it, or
// six letters or more).
func specificText(template string) bool {
	if len(template) < 24 {
		return false
	}
	var words [3]string
	n, distinctive := 0, false
	for i := 0; i < len(template) && (n < 3 || !distinctive); {
		c := template[i]
		if !isAlnum(c) && c != '_' {
			i++
			continue
		}
		j := i
		letters, special := 0, false
		for j < len(template) && (isAlnum(template[j]) || template[j] == '_') {
			if isASCIILetter(template[j]) {
				letters++
			}
			special = special || isDigit(template[j]) || template[j] == '_' || j > i && template[j] >= 'A' && template[j] <= 'Z'
			j++
		}
		w := template[i:j]
		i = j
		if letters < 3 || genericWords.hasFold(w) || w == words[0] || w == words[1] {
			continue
		}
		distinctive = distinctive || special || letters >= 6
		if n < 3 {
			words[n] = w
			n++
		}
	}
	return n >= 3 && distinctive
}

// genericWords say that something failed, not what.
var genericWords = newWordSet("error", "errors", "failed", "failure", "fail", "fails", "exit", "exited", "status",
	"code", "timeout", "timed", "out", "context", "canceled", "cancelled", "deadline", "exceeded", "signal",
	"killed", "terminated", "eof", "unexpected", "the", "and", "for", "with", "after", "while", "from", "was",
	"not", "cannot", "could", "can", "unable", "try", "again", "retry", "retrying", "attempt", "attempts",
	"operation", "request", "response", "internal", "unknown", "invalid", "bad", "fatal", "panic", "exception",
	"warning", "connection", "refused", "reset", "broken", "pipe", "closed", "permission", "denied", "aborted",
	"interrupted", "process", "command", "run", "running", "returned", "non", "zero", "too", "many", "some")
