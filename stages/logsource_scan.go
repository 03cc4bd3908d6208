package stages

// The fast path of the reader. A line needs a close look (the exact,
// per-line checks of readLineExact) only if one of its positions is
// interesting; every other line is proven well-shaped and not a candidate
// by a single vectorized pass over the buffer, and is only counted.
//
// A position is interesting when its byte c and the next bytes n, nn are:
//   - "rr" or "lse": a candidate holds `"error"` or `false` (of
//     `"will_retry": false`) spelled out, or else a \u escape. Rare
//     sequences in the-loop's logs were chosen: "tr" (of will_retry) flagged
//     one line in twenty (retry_in_ms, "retrying", paths of a user dmitri),
//     "lse" one in 250;
//   - "\u": an escape that could spell either;
//   - '\n' then not '{', or not '}' then '\n': a line that does not start
//     or end like a JSON object (blank, truncated, not an object, CRLF);
//   - c >= 0x80: non-ASCII, whose UTF-8 must be validated.
//
// So a line with no interesting position is pure ASCII, starts with '{',
// ends with '}' and cannot be a candidate: what readLineExact would conclude.

func interesting(c, n, nn byte) bool {
	return c >= 0x80 || (c == 'r' && n == 'r') || (c == 'l' && n == 's' && nn == 'e') || (c == '\\' && n == 'u') ||
		(c == '\n' && n != '{') || (n == '\n' && c != '}')
}

// interestingAt is interesting for position i of b (i+1 < len(b)); past the
// end, nn is taken as 0.
func interestingAt(b []byte, i int) bool {
	var nn byte
	if i+2 < len(b) {
		nn = b[i+2]
	}
	return interesting(b[i], b[i+1], nn)
}

// indexInteresting returns the first interesting position i in b (its
// pair is b[i], b[i+1]), or -1.
func indexInteresting(b []byte) int {
	i := 0
	if useAVX2 && len(b) > 34 {
		j, hit := indexInterestingAVX2(b)
		if hit {
			return j
		}
		i = j
	}
	for ; i+1 < len(b); i++ {
		if interestingAt(b, i) {
			return i
		}
	}
	return -1
}

// indexInterestingGeneric is the portable definition, kept for tests that
// check the vector version against it.
func indexInterestingGeneric(b []byte) int {
	for i := 0; i+1 < len(b); i++ {
		if interestingAt(b, i) {
			return i
		}
	}
	return -1
}

// indexPair returns the first i with b[i] == c0 and b[i+1] == c1, or -1: a
// search anchored on a pair of bytes rarer than any single byte of the
// pattern it belongs to (the "cc" of ".succeeded"; "." is on every line).
func indexPair(b []byte, c0, c1 byte) int {
	i := 0
	if useAVX2 && len(b) > 33 {
		j, hit := indexPairAVX2(b, c0, c1)
		if hit {
			return j
		}
		i = j
	}
	for ; i+1 < len(b); i++ {
		if b[i] == c0 && b[i+1] == c1 {
			return i
		}
	}
	return -1
}

// indexPairGeneric is the portable definition, for tests.
func indexPairGeneric(b []byte, c0, c1 byte) int {
	for i := 0; i+1 < len(b); i++ {
		if b[i] == c0 && b[i+1] == c1 {
			return i
		}
	}
	return -1
}
