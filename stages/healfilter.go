package stages

import (
	"bytes"
	"fmt"
)

// HealFilter lets the reader decode only the success lines that can heal a
// retried failure it has already read: a success line is recognised by its
// bytes (an event ending in .succeeded, ...) and its correlation values are
// picked out without decoding; only a value the reader saw on a retried
// failure makes it decode the line. Most success lines in a busy log heal
// nothing, and decoding them all cost more than the rest of the scan.
//
// It errs towards not healing: a value it cannot pick out cheaply (an escape)
// makes it decode; a failure evicted from its bounded set is simply not
// healed, and an unhealed failure goes to a human.
type HealFilter struct {
	patterns [][]byte
	anchors  []pairAnchor // per pattern: where to look for it fast
	keys     []string
	quoted   [][]byte           // the keys as they appear in JSON: "work_item"
	pending  *fifoMap[struct{}] // family + key + value of retried failures
	id       []byte             // scratch for lookups
}

// NewHealFilter builds the reader's filter for a triage configuration.
func NewHealFilter(cfg TriageConfig) *HealFilter {
	h := &HealFilter{patterns: cfg.SuccessPatterns(), keys: cfg.CorrelationKeys, pending: newFIFOMap[struct{}](cfg.MaxPending)}
	for _, k := range cfg.CorrelationKeys {
		h.quoted = append(h.quoted, []byte(`"`+k+`"`))
	}
	for _, p := range h.patterns {
		h.anchors = append(h.anchors, rarestPair(p))
	}
	return h
}

// correlationValue is how a correlation field is compared, here and in the
// healing check.
func correlationValue(v any) (string, bool) {
	if v == nil {
		return "", false
	}
	s := fmt.Sprint(v)
	return s, s != ""
}

// note remembers the correlation values of a retried failure.
func (h *HealFilter) note(fields map[string]any) {
	if h == nil {
		return
	}
	if retry, ok := fields["will_retry"].(bool); !ok || !retry {
		return
	}
	event, _ := fields["event"].(string)
	fam, _ := family(event)
	for _, k := range h.keys {
		v, ok := correlationValue(fields[k])
		if !ok {
			continue
		}
		h.pending.put(fam+"\x00"+k+"\x00"+v, struct{}{})
	}
}

// noteRaw is note for an undecoded line: will_retry, the event and the
// correlation values picked out of its bytes. Noting a failure that is not
// one only costs a decode later; missing one only misses a heal.
func (h *HealFilter) noteRaw(line []byte) {
	if h == nil || !hasPair(line, []byte(`"will_retry"`), []byte(`true`)) {
		return
	}
	event, ok := rawValue(line, quotedEvent)
	if !ok {
		return
	}
	fam, _ := family(string(event))
	for i, k := range h.keys {
		if v, ok := rawValue(line, h.quoted[i]); ok && len(v) > 0 {
			h.pending.put(fam+"\x00"+k+"\x00"+string(v), struct{}{})
		}
	}
}

// wants reports whether a line must be decoded for the healing check.
func (h *HealFilter) wants(line []byte) bool {
	if h == nil || h.pending.len() == 0 || !containsAny(line, h.patterns) {
		return false
	}
	if bytes.IndexByte(line, '\\') >= 0 {
		return true // an escape may hide a key or a value: decode
	}
	event, ok := rawValue(line, quotedEvent)
	if !ok {
		return false
	}
	fam, _ := family(string(event))
	hit := false
	for i, k := range h.keys {
		v, ok := rawValue(line, h.quoted[i])
		if !ok {
			continue
		}
		// Built in a scratch buffer: most success lines heal nothing, and
		// a map lookup by string(bytes) does not allocate.
		h.id = append(append(append(append(append(h.id[:0], fam...), 0), k...), 0), v...)
		if _, pending := h.pending.m[string(h.id)]; pending {
			// The success heals every failure waiting on it, as the
			// healing check does: later successes need no decoding.
			h.pending.delete(string(h.id))
			hit = true
		}
	}
	return hit
}

var quotedEvent = []byte(`"event"`)

// rawValue picks the value of a top-level-looking "key" (given quoted):
// a string's bytes or a number's, out of an escape-free line.
func rawValue(line, quotedKey []byte) ([]byte, bool) {
	for {
		i := bytes.Index(line, quotedKey)
		if i < 0 {
			return nil, false
		}
		line = skipJSONSpace(line[i+len(quotedKey):])
		if len(line) == 0 || line[0] != ':' {
			continue
		}
		v := skipJSONSpace(line[1:])
		if len(v) > 0 && v[0] == '"' {
			if e := bytes.IndexByte(v[1:], '"'); e >= 0 {
				return v[1 : 1+e], true
			}
			return nil, false
		}
		e := 0
		for e < len(v) && (v[e] == '-' || v[e] == '.' || v[e] == '+' || v[e] == 'e' || v[e] == 'E' || (v[e] >= '0' && v[e] <= '9')) {
			e++
		}
		if e == 0 {
			return nil, false
		}
		return v[:e], true
	}
}

func containsAny(line []byte, patterns [][]byte) bool {
	for _, p := range patterns {
		if bytes.Contains(line, p) {
			return true
		}
	}
	return false
}

// pairAnchor is the pair of adjacent bytes of a pattern least likely to occur
// in a log line, and its offset in the pattern: searching for the pair (a
// vector scan) finds the pattern's few occurrences faster than searching for
// its first byte, a '.' that is on every line.
type pairAnchor struct {
	offset int
	c0, c1 byte
}

// letterRarity is a rough English letter frequency (per mille); bytes not
// listed (punctuation, digits, capitals) are taken as common in JSON logs.
var letterRarity = map[byte]float64{'e': 127, 't': 91, 'a': 82, 'o': 75, 'i': 70, 'n': 67, 's': 63, 'h': 61,
	'r': 60, 'd': 43, 'l': 40, 'c': 28, 'u': 28, 'm': 24, 'w': 24, 'f': 22, 'g': 20, 'y': 20, 'p': 19,
	'b': 15, 'v': 10, 'k': 8, 'j': 2, 'x': 2, 'q': 1, 'z': 1}

func rarestPair(p []byte) pairAnchor {
	freq := func(c byte) float64 {
		if f, ok := letterRarity[c]; ok {
			return f
		}
		return 150
	}
	best, bestScore := pairAnchor{}, -1.0
	for i := 0; i+1 < len(p); i++ {
		score := freq(p[i]) * freq(p[i+1])
		if p[i] == p[i+1] {
			score /= 2 // doubled letters are rarer than their letters suggest
		}
		if bestScore < 0 || score < bestScore {
			best, bestScore = pairAnchor{offset: i, c0: p[i], c1: p[i+1]}, score
		}
	}
	return best
}

// nextOccurrence is the first occurrence of pattern k at or after from in b,
// or len(b).
func (h *HealFilter) nextOccurrence(b []byte, from, k int) int {
	a, pat := h.anchors[k], h.patterns[k]
	if len(pat) < 2 {
		if q := bytes.Index(b[from:], pat); q >= 0 {
			return from + q
		}
		return len(b)
	}
	for at := from; at < len(b); {
		j := indexPair(b[at:], a.c0, a.c1)
		if j < 0 {
			break
		}
		if p := at + j - a.offset; p >= from && bytes.HasPrefix(b[p:], pat) {
			return p
		}
		at += j + 1
	}
	return len(b)
}
