package redact

import "strings"

// Shape heuristics: is a string random enough to be a credential? These are
// used only where the context already hints at a secret (after "key", in a
// URL user name, ...) or for long mixed-case-and-digit runs, never to mask
// hex alone: git SHAs, trace ids and digests are hex too.

// classTransitions counts changes of character class (lower, upper, digit,
// other) between neighbours. Random strings switch often; words and
// CamelCase names rarely.
func classTransitions(v string) int {
	n := 0
	prev := -1
	for i := 0; i < len(v); i++ {
		c := charClass(v[i])
		if prev >= 0 && c != prev {
			n++
		}
		prev = c
	}
	return n
}

func charClass(c byte) int {
	switch {
	case 'a' <= c && c <= 'z':
		return 0
	case 'A' <= c && c <= 'Z':
		return 1
	case '0' <= c && c <= '9':
		return 2
	}
	return 3
}

type classCounts struct{ lower, upper, digit, other int }

func countClasses(v string) classCounts {
	var cc classCounts
	for i := 0; i < len(v); i++ {
		switch charClass(v[i]) {
		case 0:
			cc.lower++
		case 1:
			cc.upper++
		case 2:
			cc.digit++
		default:
			cc.other++
		}
	}
	return cc
}

// tokenChar is the alphabet of base64, base64url, hex and most API tokens.
func tokenChar(c byte) bool {
	return isAlnum(c) || c == '_' || c == '-' || c == '+' || c == '/' || c == '=' || c == '.' || c == '~' || c == '%'
}

// looksSecret reports whether v looks like a random credential: long enough,
// drawn from a token alphabet, with letters and digits mixed irregularly.
func looksSecret(v string) bool {
	if len(v) < 12 || len(v) > 4096 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if !tokenChar(v[i]) {
			return false
		}
	}
	if strings.Contains(v, "://") || strings.HasPrefix(v, "/") || strings.HasPrefix(v, "v0.") {
		return false
	}
	cc := countClasses(v)
	if cc.digit == 0 && (cc.upper == 0 || cc.lower == 0) {
		return false // a word, or an all-caps constant
	}
	if cc.digit == len(v) || cc.lower+cc.upper == 0 {
		return false // a number, a date
	}
	if len(v) >= 16 && cc.digit+cc.lower+cc.upper >= len(v)-len(v)/4 {
		return float64(classTransitions(v)) >= 0.25*float64(len(v))
	}
	return float64(classTransitions(v)) >= 0.3*float64(len(v))
}

// looksRandomRun decides for a bare run of token characters with no context
// at all. It is stricter than looksSecret: long, upper and lower case and
// digits, switching class like random text. Hex-only runs never qualify.
func looksRandomRun(v string) bool {
	if len(v) < 32 {
		return false
	}
	cc := countClasses(v)
	if cc.upper < 3 || cc.lower < 3 || cc.digit < 3 {
		return false
	}
	return float64(classTransitions(v)) >= 0.4*float64(len(v))
}

// splitWords splits an identifier into lower-case words at punctuation and
// camelCase boundaries: "X-Shopify-Access-Token" -> x shopify access token,
// "smtpPassword" -> smtp password, "xAPIKey" -> x api key.
func splitWords(name string, buf []string) []string {
	words := buf[:0]
	start := -1
	flush := func(end int) {
		if start >= 0 && end > start {
			words = append(words, asciiLower(name[start:end]))
		}
		start = -1
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !isAlnum(c) {
			flush(i)
			continue
		}
		if start < 0 {
			start = i
			continue
		}
		p := name[i-1]
		upper := 'A' <= c && c <= 'Z'
		switch {
		case upper && 'a' <= p && p <= 'z': // smtpPassword
			flush(i)
			start = i
		case upper && 'A' <= p && p <= 'Z' && i+1 < len(name) && 'a' <= name[i+1] && name[i+1] <= 'z' && i-1 > start: // APIKey
			flush(i)
			start = i
		}
	}
	flush(len(name))
	return words
}
