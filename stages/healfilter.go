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
	keys     []string
	pending  *fifoMap[struct{}] // family + key + value of retried failures
}

// NewHealFilter builds the reader's filter for a triage configuration.
func NewHealFilter(cfg TriageConfig) *HealFilter {
	return &HealFilter{patterns: cfg.SuccessPatterns(), keys: cfg.CorrelationKeys, pending: newFIFOMap[struct{}](cfg.MaxPending)}
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

// wants reports whether a line must be decoded for the healing check.
func (h *HealFilter) wants(line []byte) bool {
	if h == nil || h.pending.len() == 0 || !containsAny(line, h.patterns) {
		return false
	}
	if bytes.Contains(line, []byte(`\`)) {
		return true // an escape may hide a key or a value: decode
	}
	event, ok := rawValue(line, "event")
	if !ok {
		return false
	}
	fam, _ := family(event)
	hit := false
	for _, k := range h.keys {
		if v, ok := rawValue(line, k); ok {
			id := fam + "\x00" + k + "\x00" + v
			if _, pending := h.pending.get(id); pending {
				// The success heals every failure waiting on it, as the
				// healing check does: later successes need no decoding.
				h.pending.delete(id)
				hit = true
			}
		}
	}
	return hit
}

// rawValue picks the value of a top-level-looking "key": string or number
// out of an escape-free line.
func rawValue(line []byte, key string) (string, bool) {
	quoted := []byte(`"` + key + `"`)
	for {
		i := bytes.Index(line, quoted)
		if i < 0 {
			return "", false
		}
		line = skipJSONSpace(line[i+len(quoted):])
		if len(line) == 0 || line[0] != ':' {
			continue
		}
		v := skipJSONSpace(line[1:])
		if len(v) > 0 && v[0] == '"' {
			if e := bytes.IndexByte(v[1:], '"'); e >= 0 {
				return string(v[1 : 1+e]), true
			}
			return "", false
		}
		e := 0
		for e < len(v) && (v[e] == '-' || v[e] == '.' || v[e] == '+' || v[e] == 'e' || v[e] == 'E' || (v[e] >= '0' && v[e] <= '9')) {
			e++
		}
		if e == 0 {
			return "", false
		}
		return string(v[:e]), true
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
