package fingerprint

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"strings"
)

// Legacy returns the-loop's original (v1) fingerprint of an event and its
// error text: sha1(event + "\n" + normalize(text))[:16] in lowercase hex.
//
// It reproduces, bit for bit, this Python (re.ASCII):
//
//	_WIN_PATH = re.compile(r"[A-Za-z]:\\\S+")
//	_PATH     = re.compile(r"(?:~|/)[\w@./+~-]+")
//	_HEX      = re.compile(r"\b[0-9a-fA-F]{8,}\b")
//	_DIGITS   = re.compile(r"\d+")
//
// The four substitutions are hand-written scanners rather than regexps
// because Go's regexp costs several microseconds per message; a fuzz test
// checks them against the regexps.
func Legacy(event, errorText string) string {
	buf := make([]byte, 0, 2*(len(event)+len(errorText))+32)
	buf = append(buf, event...)
	buf = append(buf, '\n')
	buf = appendLegacyNormalized(buf, errorText)
	return sha16Bytes(buf)
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

// pySpace is Python's ASCII \s: [ \t\n\r\f\v]. Go's \s lacks \v, so the
// class is spelled out here rather than borrowed.
func pySpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func isASCIILetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isDigit(c byte) bool       { return c >= '0' && c <= '9' }
func isWordByte(c byte) bool    { return isASCIILetter(c) || isDigit(c) || c == '_' }
func isHexByte(c byte) bool     { return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'f') }

// legacyWinPaths: [A-Za-z]:\\\S+ -> "<p>".
func legacyWinPaths(dst []byte, s string) []byte {
	for i := 0; i < len(s); {
		if i+3 < len(s) && isASCIILetter(s[i]) && s[i+1] == ':' && s[i+2] == '\\' && !pySpace(s[i+3]) {
			j := i + 3
			for j < len(s) && !pySpace(s[j]) {
				j++
			}
			dst = append(dst, "<p>"...)
			i = j
			continue
		}
		dst = append(dst, s[i])
		i++
	}
	return dst
}

// legacyPathByte is the class [\w@./+~-].
func legacyPathByte(c byte) bool {
	return isWordByte(c) || c == '@' || c == '.' || c == '/' || c == '+' || c == '~' || c == '-'
}

// legacyPaths: (?:~|/)[\w@./+~-]+ -> "<p>".
func legacyPaths(dst []byte, s []byte) []byte {
	for i := 0; i < len(s); {
		if (s[i] == '~' || s[i] == '/') && i+1 < len(s) && legacyPathByte(s[i+1]) {
			j := i + 1
			for j < len(s) && legacyPathByte(s[j]) {
				j++
			}
			dst = append(dst, "<p>"...)
			i = j
			continue
		}
		dst = append(dst, s[i])
		i++
	}
	return dst
}

// legacyHex: \b[0-9a-fA-F]{8,}\b -> "#". A match can only start where a
// word starts, and must run to the word's end, because hex digits are word
// characters themselves.
func legacyHex(dst []byte, s []byte) []byte {
	for i := 0; i < len(s); {
		if !isWordByte(s[i]) {
			dst = append(dst, s[i])
			i++
			continue
		}
		// s[i] starts a word (the previous byte, if any, is not a word byte).
		j := i
		for j < len(s) && isHexByte(s[j]) {
			j++
		}
		if j-i >= 8 && (j == len(s) || !isWordByte(s[j])) {
			dst = append(dst, '#')
			i = j
			continue
		}
		for j < len(s) && isWordByte(s[j]) {
			j++
		}
		dst = append(dst, s[i:j]...)
		i = j
	}
	return dst
}

// legacyDigits: \d+ -> "#".
func legacyDigits(dst []byte, s []byte) []byte {
	for i := 0; i < len(s); {
		if isDigit(s[i]) {
			for i < len(s) && isDigit(s[i]) {
				i++
			}
			dst = append(dst, '#')
			continue
		}
		dst = append(dst, s[i])
		i++
	}
	return dst
}
