package fingerprint

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

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
