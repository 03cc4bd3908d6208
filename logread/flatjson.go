package logread

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// decodeFlat is DecodeObject's fast path for the common line: one JSON
// object of strings, numbers, booleans, null, and objects and arrays of them
// nested at most maxNesting deep (pino's and bunyan's "err":{...}). It
// reports false for anything else — deeper values, syntax errors, invalid
// UTF-8, surrogate escapes, numbers ParseFloat rejects — so that
// encoding/json decides those cases and every result and error message
// stays its own. Nested values come out as encoding/json gives them
// (map[string]any, []any). Escape-free keys and values are substrings of s,
// which is why decoding costs little more than the fields slice and the
// boxed values.
func decodeFlat(s string) (pipeline.Fields, bool) {
	i := skipSpace(s, 0)
	if i == len(s) || s[i] != '{' {
		return nil, false
	}
	// Commas inside strings make this overestimate a little (the-loop's
	// failure lines: by 0-4 fields mostly); counting them is much cheaper
	// than growing the slice. The cap keeps a line of commas from
	// allocating a huge one.
	fields := make(pipeline.Fields, 0, min(strings.Count(s, ",")+1, 24))
	// A repeated key is kept twice; Fields.Get gives its last value, as
	// encoding/json does.
	end, ok := members(s, i, 0, func(key string, value any) { fields = append(fields, pipeline.Field{Key: key, Value: value}) })
	return fields, ok && skipSpace(s, end) == len(s)
}

// maxNesting is how deep decodeFlat follows objects and arrays.
const maxNesting = 4

// members decodes the object starting at s[i] ('{'), calling add for each
// member in order, and returns the index just after it.
func members(s string, i, depth int, add func(key string, value any)) (int, bool) {
	i = skipSpace(s, i+1)
	if i < len(s) && s[i] == '}' {
		return i + 1, true
	}
	for {
		if i == len(s) || s[i] != '"' {
			return i, false
		}
		key, next, ok := flatString(s, i+1)
		if !ok {
			return i, false
		}
		i = skipSpace(s, next)
		if i == len(s) || s[i] != ':' {
			return i, false
		}
		var value any
		if value, i, ok = flatValue(s, skipSpace(s, i+1), depth); !ok {
			return i, false
		}
		add(key, value)
		i = skipSpace(s, i)
		switch {
		case i == len(s):
			return i, false
		case s[i] == '}':
			return i + 1, true
		case s[i] != ',':
			return i, false
		}
		i = skipSpace(s, i+1)
	}
}

// flatValue decodes the value starting at s[i], inside depth objects or
// arrays, and returns the index just after it.
func flatValue(s string, i, depth int) (any, int, bool) {
	if i == len(s) {
		return nil, i, false
	}
	switch c := s[i]; {
	case c == '"':
		v, next, ok := flatString(s, i+1)
		return v, next, ok
	case c == '-' || c >= '0' && c <= '9':
		end := numberEnd(s, i)
		if end < 0 {
			return nil, i, false
		}
		f, err := strconv.ParseFloat(s[i:end], 64)
		return f, end, err == nil
	case strings.HasPrefix(s[i:], "true"):
		return true, i + len("true"), true
	case strings.HasPrefix(s[i:], "false"):
		return false, i + len("false"), true
	case strings.HasPrefix(s[i:], "null"):
		return nil, i + len("null"), true
	case depth == maxNesting:
		return nil, i, false
	case c == '{':
		m := map[string]any{}
		end, ok := members(s, i, depth+1, func(key string, value any) { m[key] = value })
		return m, end, ok
	case c == '[':
		return elements(s, i, depth+1)
	}
	return nil, i, false
}

// elements decodes the array starting at s[i] ('[').
func elements(s string, i, depth int) (any, int, bool) {
	list := []any{}
	i = skipSpace(s, i+1)
	if i < len(s) && s[i] == ']' {
		return list, i + 1, true
	}
	for {
		v, next, ok := flatValue(s, i, depth)
		if !ok {
			return nil, next, false
		}
		list = append(list, v)
		i = skipSpace(s, next)
		switch {
		case i == len(s):
			return nil, i, false
		case s[i] == ']':
			return list, i + 1, true
		case s[i] != ',':
			return nil, i, false
		}
		i = skipSpace(s, i+1)
	}
}

// numberEnd returns the index just after the JSON number starting at s[i]
// (-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?), or -1 if there is none.
func numberEnd(s string, i int) int {
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = digitsEnd(s, i)
	default:
		return -1
	}
	if i < len(s) && s[i] == '.' {
		if i = digitsEnd(s, i+1); s[i-1] == '.' {
			return -1
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		start := i
		if i = digitsEnd(s, i); i == start {
			return -1
		}
	}
	return i
}

func digitsEnd(s string, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

func skipSpace(s string, i int) int {
	for i < len(s) && isJSONSpace(s[i]) {
		i++
	}
	return i
}

// plainByte marks the bytes a string body can hold as they are: not the
// closing quote, a backslash, a control byte, or a non-ASCII byte (which
// needs a UTF-8 check).
var plainByte = func() (plain [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		plain[c] = c != '"' && c != '\\'
	}
	return plain
}()

// plainRunEnd is the index of the first byte at or after i that is not
// plainByte, or len(s). Eight bytes at a time (SWAR): an error text is
// hundreds of plain bytes, and one test per byte was a sixth of decoding.
func plainRunEnd(s string, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(s); i += 8 {
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		// A byte is flagged when it may be '"' or '\\', below 0x20 or
		// above 0x7f; the "has a zero byte" test can flag a plain byte
		// after a flagged one, never miss one, and the loop below decides.
		quote, backslash := w^(ones*'"'), w^(ones*'\\')
		flagged := (quote-ones)&^quote | (backslash-ones)&^backslash | (w - ones*0x20) | w
		if flagged&highs != 0 {
			break
		}
	}
	for i < len(s) && plainByte[s[i]] {
		i++
	}
	return i
}

// flatString decodes the string whose body starts at s[i] and returns the
// index just after its closing quote.
func flatString(s string, i int) (string, int, bool) {
	start := i
	escaped, nonASCII := false, false
	for {
		i = plainRunEnd(s, i)
		if i >= len(s) { // also after a backslash that ended the line
			return "", i, false
		}
		switch c := s[i]; {
		case c == '"':
			body := s[start:i]
			if nonASCII && !utf8.ValidString(body) {
				return "", i, false
			}
			if escaped {
				body, escaped = unescape(body)
				return body, i + 1, escaped
			}
			return body, i + 1, true
		case c == '\\':
			escaped = true
			i += 2 // the escaped byte cannot end the string; unescape checks it
		case c < 0x20:
			return "", i, false
		default:
			nonASCII = true
			i++
		}
	}
}

// unescape resolves the backslash escapes of a string body. It reports false
// for an invalid escape and for surrogate \u escapes, whose pairing rules it
// leaves to encoding/json.
func unescape(body string) (string, bool) {
	var b strings.Builder
	b.Grow(len(body))
	for {
		n := strings.IndexByte(body, '\\')
		if n < 0 {
			b.WriteString(body)
			return b.String(), true
		}
		b.WriteString(body[:n])
		body = body[n:]
		if len(body) < 2 {
			return "", false
		}
		switch c, i := body[1], strings.IndexByte(escapeLetters, body[1]); {
		case i >= 0:
			b.WriteByte(escapedBytes[i])
		case c == 'u' && len(body) >= 6:
			r, err := strconv.ParseUint(body[2:6], 16, 32) // four hex digits, no sign or prefix
			if err != nil || r >= 0xD800 && r <= 0xDFFF {
				return "", false
			}
			b.WriteRune(rune(r))
			body = body[4:]
		default:
			return "", false
		}
		body = body[2:]
	}
}

// escapeLetters are JSON's one-letter escapes; escapedBytes, what each stands for.
const escapeLetters, escapedBytes = `"\/bfnrt`, "\"\\/\b\f\n\r\t"
