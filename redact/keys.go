package redact

import "strings"

// Key material: PEM, OpenSSH and PGP private key blocks. Everything between
// BEGIN and END is secret, armour headers (Proc-Type, DEK-Info, Version,
// Comment) included; the BEGIN and END lines stay so a reader knows what
// was there. A block cut short, as a capped or streamed text is, is secret
// to the end of the text, and a text that starts inside a block (the tail
// of a stderr buffer) is secret from its start to END.

// findPrivateKeys masks the body of every private key block, with real or
// escaped (\n inside JSON) line breaks.
func findPrivateKeys(sc *scan) {
	s := sc.s
	if !strings.Contains(s, "PRIVATE KEY") {
		return
	}
	lo := 0 // text before lo belongs to a block already handled
	for off := 0; off < len(s); {
		i := strings.Index(s[off:], "-----")
		if i < 0 {
			return
		}
		m := off + i
		off = m + 5
		begin := strings.HasPrefix(s[m+5:], "BEGIN ")
		if !begin && !strings.HasPrefix(s[m+5:], "END ") {
			continue
		}
		ls := m + 5 + len("END ")
		if begin {
			ls = m + 5 + len("BEGIN ")
		}
		le := strings.Index(s[ls:min(len(s), ls+64)], "-----")
		if le < 0 {
			continue
		}
		label := s[ls : ls+le]
		lineEnd := ls + le + 5
		if !strings.Contains(label, "PRIVATE KEY") || !pemLabel(label) {
			continue
		}
		if !begin {
			// END without BEGIN: the text starts inside the block.
			if bs := blockStartBefore(s, lo, m); bs < m {
				bs, be := trimBlock(s, bs, m)
				if bs < be {
					sc.add(bs, be, "private-key")
				}
			}
			lo, off = lineEnd, lineEnd
			continue
		}
		bodyEnd := len(s) // no END line: cut off, secret to the end
		next := lineEnd
		closed := false
		if j := strings.Index(s[lineEnd:], "-----END "); j >= 0 {
			closed = true
			bodyEnd = lineEnd + j
			next = bodyEnd + len("-----END ")
			if k := strings.Index(s[next:min(len(s), next+64)], "-----"); k >= 0 {
				next += k + 5
			}
		}
		bs, be := trimBlock(s, lineEnd, bodyEnd)
		// A whole block whose body is a word ("...", "anything", "<key>")
		// holds no key: the smallest, an Ed25519 key in PKCS#8, is 64
		// base64 characters.
		stub := closed && be-bs < 32 && len(strings.Join(strings.Fields(s[bs:be]), "")) < 16
		if bs < be && !isPlaceholderAt(s, bs) && !stub {
			sc.add(bs, be, "private-key")
		}
		lo, off = next, max(next, bodyEnd)
	}
}

// armourHeaders name the header lines that may open a key block's body.
var armourHeaders = []string{"Proc-Type:", "DEK-Info:", "Version:", "Comment:", "Hash:", "Charset:", "MessageID:"}

// blockStartBefore walks back from end (an END line) over the block's
// lines — base64, armour headers, blank lines, real or escaped breaks or
// the spaces a flattened tail has instead — and returns where the block
// starts: lo when it reaches the text before, else the start of the
// cut-off first line's base64 run. It returns end when fewer than 8
// characters of key material precede end.
func blockStartBefore(s string, lo, end int) int {
	start, material := end, 0
	j := end
	for j > lo {
		// One segment back: skip separators, then the segment itself.
		k := j
		for k > lo {
			if c := s[k-1]; c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				k--
			} else if k-2 >= lo && s[k-2] == '\\' && (c == 'n' || c == 'r') {
				k -= 2
			} else {
				break
			}
		}
		if k == lo {
			start = lo
			break
		}
		ss := k
		for ss > lo && !(s[ss-1] == ' ' || s[ss-1] == '\t' || s[ss-1] == '\n' || s[ss-1] == '\r' || (ss-2 >= lo && s[ss-2] == '\\' && (s[ss-1] == 'n' || s[ss-1] == 'r'))) {
			ss--
		}
		seg := s[ss:k]
		if base64LineEnd(seg, 0) == len(seg) {
			material += len(seg)
			start, j = ss, ss
			continue
		}
		if hs := armourLineStart(s, lo, ss); hs >= 0 {
			start, j = hs, hs
			continue
		}
		// The cut-off first line: its trailing base64 run, when long
		// enough to matter.
		r := k
		for r > ss && base64LineEnd(s[r-1:r], 0) == 1 {
			r--
		}
		if k-r >= 8 {
			material += k - r
			start = r
		}
		break
	}
	if material < 8 {
		return end
	}
	return start
}

// armourLineStart returns the start of the armour header line holding
// position i, or -1.
func armourLineStart(s string, lo, i int) int {
	ls := i
	for ls > lo && s[ls-1] != '\n' && s[ls-1] != '\r' && !(ls-2 >= lo && s[ls-2] == '\\' && (s[ls-1] == 'n' || s[ls-1] == 'r')) {
		ls--
	}
	line := strings.TrimLeft(s[ls:i+1], " \t")
	for _, h := range armourHeaders {
		if strings.HasPrefix(line, h) {
			return ls
		}
	}
	return -1
}
