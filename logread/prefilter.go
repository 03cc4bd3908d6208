package logread

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
)

// Prefilter is a Policy over a Format as bytes: what a line must contain to
// be a candidate. It is exact-or-superset: it may pass a line the policy
// then rejects, never drop one it selects. Every rule is derived:
//
//   - a failure level spelled as text: the quoted value in each case foldCase
//     accepts ("error", "ERROR", "Error"), for every name the format maps to
//     a failure level and every failure level itself, preceded by a level
//     key and a colon;
//   - a numeric level (pino's 50, OpenTelemetry's 17): the level key, then
//     a number the format maps to a failure level;
//   - the give-up: the retry key, then the give-up value (false);
//   - "\u": an escape can spell any key or value differently, so a line
//     holding one always passes.
//
// A value rare in the log anchors a rule where one exists (a level's
// name); a key otherwise (the retry flag's, not the "false" that a
// "cached":false puts on every line). Between keys, values and colons only
// JSON whitespace may come. A wrapper's inner line (Docker's log) is matched
// with its quotes escaped.
type Prefilter struct {
	needles []needle
}

type needle struct {
	finder
	// confirm reports whether the occurrence at at in line completes the
	// rule; nil: the needle alone does.
	confirm func(line []byte, at int) bool
}

// NewPrefilter derives the prefilter of policy p over format f.
func NewPrefilter(p Policy, f *Format) *Prefilter {
	pf := &Prefilter{}
	pf.needles = append(pf.needles, needle{finder: newFinder([]byte(`\u`))})
	pf.derive(p, f, false)
	return pf
}

func (pf *Prefilter) derive(p Policy, f *Format, escaped bool) {
	if f.Inner != "" {
		pf.derive(p, f.InnerFormat, true)
		return
	}
	quote := func(s string) []byte {
		if escaped {
			return []byte(`\"` + s + `\"`)
		}
		return []byte(`"` + s + `"`)
	}
	pf.giveUp(p, f, quote, escaped)
	var keys [][]byte
	for _, path := range f.Level {
		for _, k := range keyNames(path) {
			keys = append(keys, quote(k))
		}
	}
	// Text values: every name mapping to a failure, every failure name.
	names := append([]string(nil), p.FailureLevels...)
	for raw, level := range f.Levels {
		if p.isFailureLevel(level) {
			names = append(names, raw)
		}
	}
	var values [][]byte
	for _, name := range names {
		for _, v := range spellings(name) {
			values = append(values, quote(v))
		}
	}
	numericFailure := false
	for _, s := range f.numeric {
		numericFailure = numericFailure || p.isFailureLevel(s.level)
	}
	if !numericFailure {
		for _, fd := range groupFinders(values) {
			pf.needles = append(pf.needles, needle{finder: fd, confirm: func(line []byte, at int) bool {
				return keyBefore(line[:at], keys, escaped)
			}})
		}
		return
	}
	// Numeric levels need the key found on every line anyway: its text
	// values are checked at the same hit, not searched for again. A level
	// of at most three digits (pino's 30 on every line) is looked up in a
	// table, not parsed as a float.
	var small [1000]bool
	for n := range small {
		l, known := f.numericLevel(float64(n))
		small[n] = known && p.isFailureLevel(l)
	}
	for _, k := range keys {
		pf.needles = append(pf.needles, needle{finder: newFinder(k), confirm: func(line []byte, at int) bool {
			v, ok := valueAfter(line[at+len(k):], escaped)
			if !ok {
				return false
			}
			if n, ok := smallInt(v); ok {
				return small[n]
			}
			if slices.ContainsFunc(values, func(q []byte) bool { return bytes.HasPrefix(v, q) }) {
				return true
			}
			end := numberLen(v)
			if end == 0 {
				return false // text, not a failure's (ParseFloat's error allocates)
			}
			n, err := strconv.ParseFloat(string(v[:end]), 64)
			l, known := f.numericLevel(n)
			return err == nil && known && p.isFailureLevel(l)
		}})
	}
}

// giveUp derives the give-up rule: the retry key, then the give-up value.
func (pf *Prefilter) giveUp(p Policy, f *Format, quote func(string) []byte, escaped bool) {
	giveUp := []byte(strconv.FormatBool(p.GiveUpValue))
	for _, path := range f.Retry {
		for _, name := range keyNames(path) {
			k := quote(name)
			pf.needles = append(pf.needles, needle{finder: newFinder(k), confirm: func(line []byte, at int) bool {
				v, ok := valueAfter(line[at+len(k):], escaped)
				return ok && bytes.HasPrefix(v, giveUp)
			}})
		}
	}
}

// keyNames are the keys a field path may appear under in a line: the path
// itself and its last part.
func keyNames(path string) []string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return []string{path, path[i+1:]}
	}
	return []string{path}
}

// May reports whether line may be a candidate: the region walk over one line.
func (pf *Prefilter) May(line []byte) bool { return pf.mayIn(&region{}, line) }

// mayIn is May walking in r, reused so a line checked allocates nothing.
func (pf *Prefilter) mayIn(r *region, line []byte) bool {
	r.reset(line, len(pf.needles))
	return pf.candidate(r, 0) < len(line)
}

// region follows finders through one region of whole lines: where each
// next occurs, each searched for once per region, not once per line.
type region struct {
	b    []byte
	next []int // where finder k next occurs at or after the last search, len(b) if nowhere; -1: not searched
}

func (r *region) reset(b []byte, finders int) {
	r.b, r.next = b, r.next[:0]
	for range finders {
		r.next = append(r.next, -1)
	}
}

// at is where finder k (f) next occurs at or after i, or len(b). Small
// enough to inline: most calls find the finder still ahead of i.
func (r *region) at(k, i int, f *finder) int {
	if p := r.next[k]; p >= i {
		return p
	}
	return r.search(k, i, f)
}

func (r *region) search(k, i int, f *finder) int {
	r.next[k] = len(r.b)
	if j := f.index(r.b[min(i, len(r.b)):]); j >= 0 {
		r.next[k] = i + j
	}
	return r.next[k]
}

// candidate is the start of the first line at or after i in r that may be
// a candidate, or len(b).
func (pf *Prefilter) candidate(r *region, i int) int {
	b := r.b
	for {
		best, k := len(b), -1
		for n := range pf.needles {
			if p := r.at(n, i, &pf.needles[n].finder); p < best {
				best, k = p, n
			}
		}
		if k < 0 {
			return len(b)
		}
		// A confirmation reads only the bytes beside the hit, never past a
		// line's end (lineSpace), so the region stands in for the line.
		if c := pf.needles[k].confirm; c == nil || c(b, best) {
			return bytes.LastIndexByte(b[:best], '\n') + 1
		}
		r.next[k] = -1
		r.at(k, best+1, &pf.needles[k].finder)
	}
}

// tune anchors each needle on its byte rarest in sample.
func (pf *Prefilter) tune(freq *[256]int, total int) {
	for i := range pf.needles {
		pf.needles[i].tune(freq, total)
	}
}

// keyBefore reports whether before ends with one of keys, a colon and
// JSON whitespace.
func keyBefore(before []byte, keys [][]byte, escaped bool) bool {
	before = trimSpaceRight(before, escaped)
	if len(before) == 0 || before[len(before)-1] != ':' {
		return false
	}
	before = trimSpaceRight(before[:len(before)-1], escaped)
	for _, k := range keys {
		if bytes.HasSuffix(before, k) {
			return true
		}
	}
	return false
}

// valueAfter is what follows a key: JSON whitespace, a colon, whitespace.
func valueAfter(after []byte, escaped bool) ([]byte, bool) {
	if !escaped && len(after) > 1 && after[0] == ':' && !lineSpace(after[1]) {
		return after[1:], true // as loggers write it: no space
	}
	after = trimSpaceLeft(after, escaped)
	if len(after) == 0 || after[0] != ':' {
		return nil, false
	}
	return trimSpaceLeft(after[1:], escaped), true
}

// JSON whitespace inside a line (lineSpace); inside an escaped inner line
// also its escapes \t \n \r.
func trimSpaceLeft(b []byte, escaped bool) []byte {
	for len(b) > 0 {
		switch {
		case lineSpace(b[0]):
			b = b[1:]
		case escaped && len(b) > 1 && b[0] == '\\' && (b[1] == 't' || b[1] == 'n' || b[1] == 'r'):
			b = b[2:]
		default:
			return b
		}
	}
	return b
}

func trimSpaceRight(b []byte, escaped bool) []byte {
	for n := len(b); n > 0; n = len(b) {
		switch {
		case lineSpace(b[n-1]):
			b = b[:n-1]
		case escaped && n > 1 && b[n-2] == '\\' && (b[n-1] == 't' || b[n-1] == 'n' || b[n-1] == 'r'):
			b = b[:n-2]
		default:
			return b
		}
	}
	return b
}

// smallInt is the number at the start of v when it is one of at most
// three digits, nothing else of a number after them.
func smallInt(v []byte) (int, bool) {
	n, i := 0, 0
	for ; i < len(v) && v[i] >= '0' && v[i] <= '9'; i++ {
		if i == 3 {
			return 0, false
		}
		n = n*10 + int(v[i]-'0')
	}
	if i == 0 || (i < len(v) && numberLen(v[i:i+1]) > 0) {
		return 0, false
	}
	return n, true
}

// numberLen is the length of the JSON number's bytes at the start of v.
func numberLen(v []byte) int {
	e := 0
	for e < len(v) && (v[e] == '-' || v[e] == '.' || v[e] == '+' || v[e] == 'e' || v[e] == 'E' || (v[e] >= '0' && v[e] <= '9')) {
		e++
	}
	return e
}

// isJSONSpace is JSON's whitespace: the four bytes allowed between tokens.
func isJSONSpace(c byte) bool { return c == '\n' || lineSpace(c) }

// lineSpace is JSON's whitespace inside one line: all of it but '\n'.
func lineSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' }

// finder finds a needle by its byte rarest in the log (tune): bytes.Index
// starts from the first byte, and in a JSON line the '"' of a quoted key or
// value is everywhere. Until tuned, or when no byte of it is rare, it is
// bytes.Index. Needles sharing a prefix are found in one pass: the finder
// searches the prefix and reports where one of them (alts) starts.
type finder struct {
	needle []byte
	alts   [][]byte // nil: the needle alone
	anchor int      // offset of the byte searched for; -1: bytes.Index
}

func newFinder(b []byte) finder { return finder{needle: b, anchor: -1} }

// groupFinders are finders for needles, one pass for those sharing a
// prefix of two bytes or more ("ERROR" and "Error" share `"E`).
func groupFinders(needles [][]byte) []finder {
	sorted := slices.Clone(needles)
	slices.SortFunc(sorted, bytes.Compare)
	sorted = slices.CompactFunc(sorted, bytes.Equal)
	var out []finder
	for i := 0; i < len(sorted); {
		j, prefix := i+1, sorted[i]
		for ; j < len(sorted); j++ {
			n := commonPrefix(prefix, sorted[j])
			if n < 2 {
				break
			}
			prefix = prefix[:n]
		}
		f := newFinder(sorted[i])
		if j > i+1 {
			f = finder{needle: prefix, alts: sorted[i:j], anchor: -1}
		}
		out = append(out, f)
		i = j
	}
	return out
}

func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func (f finder) index(b []byte) int {
	for at := 0; at < len(b); {
		i := f.indexNeedle(b[at:])
		if i < 0 {
			return -1
		}
		p := at + i
		if f.alts == nil || slices.ContainsFunc(f.alts, func(a []byte) bool { return bytes.HasPrefix(b[p:], a) }) {
			return p
		}
		at = p + 1
	}
	return -1
}

func (f finder) indexNeedle(b []byte) int {
	if f.anchor < 0 {
		return bytes.Index(b, f.needle)
	}
	c, n := f.needle[f.anchor], len(f.needle)
	for at := f.anchor; at < len(b); {
		j := bytes.IndexByte(b[at:], c)
		if j < 0 {
			return -1
		}
		p := at + j - f.anchor
		if p+n <= len(b) && bytes.Equal(b[p:p+n], f.needle) {
			return p
		}
		at += j + 1
	}
	return -1
}

// rareByte is how rare a byte must be (at most one in this many) for a
// search by it to beat bytes.Index.
const rareByte = 48

func (f *finder) tune(freq *[256]int, total int) {
	f.anchor = -1
	best := total/rareByte + 1
	for i, c := range f.needle {
		if freq[c] < best {
			best, f.anchor = freq[c], i
		}
	}
}

// byteFreq counts the bytes of sample.
func byteFreq(sample []byte) *[256]int {
	var freq [256]int
	for _, c := range sample {
		freq[c]++
	}
	return &freq
}
