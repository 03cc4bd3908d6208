package eventlog

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// jsonLine builds one JSON object by appending to a reused buffer, so a line
// costs no allocation. Keys are trusted constants; values are escaped.
type jsonLine struct{ b []byte }

const tsLayout = "2006-01-02T15:04:05.000Z07:00"

func (l *jsonLine) begin(ts time.Time, event, level string) {
	l.b = append(l.b[:0], `{"ts":"`...)
	l.b = ts.UTC().AppendFormat(l.b, tsLayout)
	l.b = append(l.b, '"')
	l.str("event", event)
	l.str("level", level)
}

func (l *jsonLine) key(k string) {
	l.b = append(l.b, ',', '"')
	l.b = append(l.b, k...)
	l.b = append(l.b, '"', ':')
}

func (l *jsonLine) str(k, v string) {
	l.key(k)
	l.b = appendJSONString(l.b, v)
}

func (l *jsonLine) bytes(k string, v []byte) {
	l.key(k)
	l.b = appendJSONString(l.b, v)
}

func (l *jsonLine) int(k string, v int) {
	l.key(k)
	l.b = strconv.AppendInt(l.b, int64(v), 10)
}

func (l *jsonLine) float(k string, v float64) {
	l.key(k)
	l.b = strconv.AppendFloat(l.b, v, 'f', 3, 64)
}

func (l *jsonLine) bool(k string, v bool) {
	l.key(k)
	l.b = strconv.AppendBool(l.b, v)
}

// raw appends a value that is already JSON.
func (l *jsonLine) raw(k, json string) {
	l.key(k)
	l.b = append(l.b, json...)
}

// start opens a string value that the caller appends to piecewise with
// l.b = appendEscaped(...); finish with l.closeStr().
func (l *jsonLine) start(k string) {
	l.key(k)
	l.b = append(l.b, '"')
}

func (l *jsonLine) closeStr() { l.b = append(l.b, '"') }

func (l *jsonLine) end() { l.b = append(l.b, '}', '\n') }

const hexDigits = "0123456789abcdef"

func appendJSONString[S string | []byte](b []byte, s S) []byte {
	b = append(b, '"')
	b = appendEscaped(b, s)
	return append(b, '"')
}

// appendEscaped escapes s for the inside of a JSON string. Valid UTF-8 is
// kept as is (the-loop writes it raw); invalid bytes become U+FFFD, as
// encoding/json does, so only the corrupt-line writer can emit them.
func appendEscaped[S string | []byte](b []byte, s S) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
			if r == utf8.RuneError && size == 1 {
				b = append(b, s[start:i]...)
				b = append(b, "\ufffd"...)
				i++
				start = i
				continue
			}
			i += size
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\t':
			b = append(b, '\\', 't')
		case '\r':
			b = append(b, '\\', 'r')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		i++
		start = i
	}
	return append(b, s[start:]...)
}
