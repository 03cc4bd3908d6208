package fingerprint

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Legacy returns the-loop's original (v1) fingerprint of an event and its
// error text: sha1(event + "\n" + normalize(text))[:16] in lowercase hex.
//
// It reproduces the-loop's Python (selfdiagnosis.fingerprint), whose
// patterns are str patterns and so Unicode-aware (no re.ASCII):
//
//	re.sub(r"[A-Za-z]:\\\S+", "<p>", text)
//	re.sub(r"(?:~|/)[\w@./+~-]+", "<p>", text)
//	re.sub(r"\b[0-9a-fA-F]{8,}\b", "#", text)
//	re.sub(r"\d+", "#", text)
//
// There \s is str.isspace (Unicode spaces, and U+001C..U+001F), \w is any
// letter or number (categories L* and N*) or '_', and \d a decimal digit
// (Nd); the letter and hex ranges stay ASCII. The substitutions are
// hand-written scanners rather than regexps because Go's regexp costs
// several microseconds per message; ASCII bytes take a fast path, and a
// fuzz test checks the scanners against regexps with the same classes.
//
// Go's Unicode tables are Unicode 15 (Python 3.12's); under Python 3.11
// (Unicode 14) only characters first assigned in Unicode 15 differ.
func Legacy(event, errorText string) string {
	buf := make([]byte, 0, 2*(len(event)+len(errorText))+32)
	buf = append(buf, event...)
	buf = append(buf, '\n')
	buf = appendLegacyNormalized(buf, errorText)
	return sha16Bytes(buf)
}

// LegacyOf is Legacy of a record as the-loop reads it: the-loop hashes
// str(record.get("error", "")) and str(record.get("event", "")), so a
// non-string error (null, 137, true, an object) has a fingerprint of its
// own text ("None", "137", "True", "{'code': 137}"), not that of a
// missing one. in.Error and in.Event are used when the field is a string
// or in.Fields does not hold it.
func LegacyOf(in Input) string {
	event, text := in.Event, in.Error
	if in.Fields != nil {
		if v, ok := lookupField(in.Fields, "error"); ok {
			if _, isString := v.(string); !isString {
				text = pyStr(v)
			}
		}
		if v, ok := lookupField(in.Fields, "event"); ok {
			if _, isString := v.(string); !isString {
				event = pyStr(v)
			}
		}
	}
	return Legacy(event, text)
}

// Lookup returns the value of key and whether the key is present (null
// included), which Get cannot tell apart from absent.
func (m MapFields) Lookup(key string) (any, bool) {
	v, ok := m[key]
	return v, ok
}

// lookupField tells a present null from an absent key when the fields can
// (the pipeline's records and MapFields do): the-loop hashes "None" for
// the first and "" for the second.
func lookupField(f Fields, key string) (any, bool) {
	if l, ok := f.(interface{ Lookup(string) (any, bool) }); ok {
		return l.Lookup(key)
	}
	v := f.Get(key)
	return v, v != nil
}

// sha16 is the first 16 hex digits of the SHA-1 of s.
func sha16(s string) string { return sha16Bytes([]byte(s)) }

func sha16Bytes(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:8])
}

// legacyNormalize applies the-loop's four substitutions in order.
func legacyNormalize(text string) string { return string(appendLegacyNormalized(nil, text)) }

// appendLegacyNormalized appends the normalized text to dst. Each pass
// only runs when its trigger byte is present.
func appendLegacyNormalized(dst []byte, text string) []byte {
	cur := []byte(text)
	if strings.Contains(text, ":\\") {
		cur = legacyWinPaths(make([]byte, 0, len(cur)), text)
	}
	if bytes.ContainsAny(cur, "/~") {
		cur = legacyPaths(make([]byte, 0, len(cur)), cur)
	}
	tmp := legacyHex(make([]byte, 0, len(cur)), cur)
	return legacyDigits(dst, tmp)
}

// runeAt decodes the rune at s[i], ASCII without a call. Invalid UTF-8
// (which the-loop cannot read at all) is one byte of RuneError: neither a
// space, a word character nor a digit.
func runeAt(s []byte, i int) (rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRune(s[i:])
}

func runeAtString(s string, i int) (rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// pySpace is Python's \s on str: str.isspace, which besides the Unicode
// spaces holds U+001C..U+001F (bidi class B/S) and \v; Go's unicode.IsSpace
// lacks the former, its regexp \s both.
func pySpace(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || r >= '\t' && r <= '\r' || r >= 0x1c && r <= 0x1f
	}
	switch r {
	case 0x85, 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

// pyWord is Python's \w on str: str.isalnum() or '_', which is exactly the
// letter and number categories (checked against every code point).
func pyWord(r rune) bool {
	if r < utf8.RuneSelf {
		return isASCIILetter(byte(r)) || isDigit(byte(r)) || r == '_'
	}
	return unicode.IsLetter(r) || unicode.IsNumber(r)
}

// pyDigit is Python's \d on str: a decimal digit (Nd) of any script.
func pyDigit(r rune) bool {
	if r < utf8.RuneSelf {
		return isDigit(byte(r))
	}
	return unicode.Is(unicode.Nd, r)
}

// legacyWinPaths: [A-Za-z]:\\\S+ -> "<p>".
func legacyWinPaths(dst []byte, s string) []byte {
	for i := 0; i < len(s); {
		if i+3 < len(s) && isASCIILetter(s[i]) && s[i+1] == ':' && s[i+2] == '\\' {
			j := i + 3
			for j < len(s) {
				r, n := runeAtString(s, j)
				if pySpace(r) {
					break
				}
				j += n
			}
			if j > i+3 {
				dst = append(dst, "<p>"...)
				i = j
				continue
			}
		}
		dst = append(dst, s[i])
		i++
	}
	return dst
}

// legacyPathRune is the class [\w@./+~-].
func legacyPathRune(r rune) bool {
	return pyWord(r) || r == '@' || r == '.' || r == '/' || r == '+' || r == '~' || r == '-'
}

// legacyPaths: (?:~|/)[\w@./+~-]+ -> "<p>".
func legacyPaths(dst []byte, s []byte) []byte {
	for i := 0; i < len(s); {
		if s[i] == '~' || s[i] == '/' {
			j := i + 1
			for j < len(s) {
				r, n := runeAt(s, j)
				if !legacyPathRune(r) {
					break
				}
				j += n
			}
			if j > i+1 {
				dst = append(dst, "<p>"...)
				i = j
				continue
			}
		}
		dst = append(dst, s[i])
		i++
	}
	return dst
}

// legacyHex: \b[0-9a-fA-F]{8,}\b -> "#". A match can only start where a
// word starts, and must run to the word's end, because hex digits are word
// characters themselves; a word is Unicode (\w), so "é12345678" holds no
// match.
func legacyHex(dst []byte, s []byte) []byte {
	for i := 0; i < len(s); {
		r, n := runeAt(s, i)
		if !pyWord(r) {
			dst = append(dst, s[i:i+n]...)
			i += n
			continue
		}
		// s[i] starts a word (the previous rune, if any, is not a word rune).
		j := i
		for j < len(s) && isHexByte(s[j]) {
			j++
		}
		end := j
		for end < len(s) {
			r, n := runeAt(s, end)
			if !pyWord(r) {
				break
			}
			end += n
		}
		if j-i >= 8 && end == j {
			dst = append(dst, '#')
		} else {
			dst = append(dst, s[i:end]...)
		}
		i = end
	}
	return dst
}

// legacyDigits: \d+ -> "#".
func legacyDigits(dst []byte, s []byte) []byte {
	for i := 0; i < len(s); {
		r, n := runeAt(s, i)
		if !pyDigit(r) {
			dst = append(dst, s[i:i+n]...)
			i += n
			continue
		}
		for i < len(s) {
			if r, n = runeAt(s, i); !pyDigit(r) {
				break
			}
			i += n
		}
		dst = append(dst, '#')
	}
	return dst
}

// IsLegacy reports whether fp has the shape of the-loop's own (v1)
// fingerprint: 16 lowercase hex digits, no version prefix.
func IsLegacy(fp string) bool {
	if len(fp) != 16 {
		return false
	}
	for i := 0; i < len(fp); i++ {
		if c := fp[i]; !isDigit(c) && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// pyStr is Python's str() of a value json.loads produced, which is what
// the-loop hashes for a record's non-string error: None, True, 137, 1.5,
// 1e-05, {'code': 137}, [1, 'two'].
//
// Two things the decoded value no longer holds are guessed: an integral
// number below 1e16 is taken for an int (the-loop's own writer,
// json.dumps, writes an int as digits, so 137 is far likelier than 137.0;
// integers beyond 2^53 have lost digits already), and an object's keys are taken in sorted
// order (Python keeps the line's order; Go's map does not). A single-key
// object, or one written with sorted keys, is exact.
func pyStr(v any) string {
	var b strings.Builder
	writePy(&b, v, false)
	return b.String()
}

func writePy(b *strings.Builder, v any, quoted bool) {
	switch v := v.(type) {
	case nil:
		b.WriteString("None")
	case bool:
		if v {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case string:
		if quoted {
			writePyRepr(b, v)
		} else {
			b.WriteString(v)
		}
	case float64:
		b.WriteString(pyNumber(v))
	case json.Number:
		if i, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			b.WriteString(strconv.FormatInt(i, 10))
		} else if f, err := v.Float64(); err == nil {
			b.WriteString(pyFloat(f))
		} else {
			b.WriteString(string(v))
		}
	case int:
		b.WriteString(strconv.Itoa(v))
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			writePy(b, e, true)
		}
		b.WriteByte(']')
	case map[string]any:
		b.WriteByte('{')
		for i, k := range slices.Sorted(mapKeys(v)) {
			if i > 0 {
				b.WriteString(", ")
			}
			writePyRepr(b, k)
			b.WriteString(": ")
			writePy(b, v[k], true)
		}
		b.WriteByte('}')
	default:
		fmt.Fprint(b, v)
	}
}

func mapKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// pyNumber is str() of a JSON number as json.loads returns it: an int for
// an integral value below 1e16 (see pyStr), else a float. From 1e16 on a
// float prints as 1e+16 and an int has mostly lost digits in float64 anyway.
func pyNumber(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e16 {
		if f == 0 {
			return "0" // -0 is an int 0 too
		}
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return pyFloat(f)
}

// pyFloat is Python's repr of a float: the shortest round-tripping digits,
// positional when the decimal exponent is in [-4, 16), else d.ddde±XX.
func pyFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // -d.ddde±XX
	mant, exp, _ := strings.Cut(e, "e")
	x, _ := strconv.Atoi(exp)
	sign := ""
	if strings.HasPrefix(mant, "-") {
		sign, mant = "-", mant[1:]
	}
	digits := strings.Replace(mant, ".", "", 1)
	if x < -4 || x >= 16 {
		out := digits[:1]
		if len(digits) > 1 {
			out += "." + digits[1:]
		}
		es := "+"
		if x < 0 {
			es, x = "-", -x
		}
		return fmt.Sprintf("%s%se%s%02d", sign, out, es, x)
	}
	point := x + 1 // digits before the decimal point
	switch {
	case point <= 0:
		return sign + "0." + strings.Repeat("0", -point) + digits
	case point >= len(digits):
		return sign + digits + strings.Repeat("0", point-len(digits)) + ".0"
	}
	return sign + digits[:point] + "." + digits[point:]
}

// writePyRepr is Python's repr of a str: single quotes unless the text
// holds one and no double quote; \\, the quote, \t \n \r escaped; other
// control and unprintable characters as \xhh, \uhhhh or \Uhhhhhhhh.
func writePyRepr(b *strings.Builder, s string) {
	quote := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		quote = '"'
	}
	b.WriteByte(quote)
	for _, r := range s {
		switch {
		case r == rune(quote) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < ' ' || r == 0x7f:
			fmt.Fprintf(b, `\x%02x`, r)
		case r < utf8.RuneSelf || pyPrintable(r):
			b.WriteRune(r)
		case r <= 0xff:
			fmt.Fprintf(b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			fmt.Fprintf(b, `\U%08x`, r)
		}
	}
	b.WriteByte(quote)
}

// pyPrintable is str.isprintable for one non-ASCII character: not a
// control, format, private-use, surrogate or unassigned character, nor a
// separator other than the ASCII space.
func pyPrintable(r rune) bool {
	if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs, unicode.Zs, unicode.Zl, unicode.Zp) {
		return false
	}
	return unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S)
}
