package stages

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"slices"

	"github.com/the-loop/the-loop-diagnose/pipeline"
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
	// anchors group the patterns by the pair of bytes searched for to find
	// them (see tune); one vector scan per group.
	anchors []anchorGroup
	tuned   bool
	keys    []string
	quoted  []finder // the keys as they appear in JSON: "work_item"
	event   finder   // "event"
	// pending maps the correlation id of each retried failure's family, key
	// and value (correlationIDs) to its family.
	pending *fifoMap[uint64, string]
	// families counts pending entries per event family: a success line of
	// a family with none (most of them: github.api.succeeded...) is ruled
	// out before its correlation values are looked for.
	families map[string]int
	// busy answers "has this family failures pending?" from a few slots,
	// without hashing the name (see familySlots).
	busy familySlots
	// filter rules out most ids that are not pending without touching the
	// pending map (see idFilter).
	filter idFilter
	ids    correlationIDs
	// familyNames interns the families of pending failures, so noting one
	// read from a line's bytes allocates nothing after the first.
	familyNames map[string]string
}

// NewHealFilter builds the reader's filter for a triage configuration.
func NewHealFilter(cfg TriageConfig) *HealFilter {
	h := &HealFilter{patterns: cfg.SuccessPatterns(), keys: cfg.CorrelationKeys,
		pending: newFIFOMap[uint64, string](cfg.MaxPending), families: map[string]int{},
		ids: newCorrelationIDs(), familyNames: map[string]string{}}
	h.pending.evicted = h.forget
	for _, k := range cfg.CorrelationKeys {
		h.quoted = append(h.quoted, finder{needle: []byte(`"` + k + `"`)})
	}
	h.event = finder{needle: []byte(`"event"`)}
	h.tune(nil)
	return h
}

// HealTuning is the anchors a heal filter chose for a log (tune).
type HealTuning struct {
	anchors []anchorGroup
	keys    []pairAnchor
	event   pairAnchor
}

// Tuning is what h chose, or nil before it has looked at the log.
func (h *HealFilter) Tuning() *HealTuning {
	if !h.tuned {
		return nil
	}
	t := &HealTuning{anchors: h.anchors, event: h.event.anchor}
	for _, q := range h.quoted {
		t.keys = append(t.keys, q.anchor)
	}
	return t
}

// KeepTuning gives h the anchors an earlier filter of the same triage
// configuration chose: a watcher's next scan reads more of the same log,
// and choosing them again cost 0.2 ms, a tenth of a scan of 1,000 new lines.
func (h *HealFilter) KeepTuning(t *HealTuning) {
	if t == nil || len(t.keys) != len(h.quoted) {
		return
	}
	h.anchors = t.anchors // not changed once tuned
	for i := range h.quoted {
		h.quoted[i].anchor = t.keys[i]
	}
	h.event.anchor = t.event
	h.tuned = true
}

// correlationValue is how a correlation field is compared, here and in the
// healing check.
func correlationValue(v any) (string, bool) {
	switch v := v.(type) {
	case nil:
		return "", false
	case string: // nearly always; fmt.Sprint would cost a reflection walk
		return v, v != ""
	}
	s := fmt.Sprint(v)
	return s, s != ""
}

// note remembers the correlation values of a retried failure.
func (h *HealFilter) note(fields pipeline.Fields) {
	if h == nil {
		return
	}
	if retry, ok := fields.Get("will_retry").(bool); !ok || !retry {
		return
	}
	event, _ := fields.Get("event").(string)
	fam, _ := family(event)
	for _, k := range h.keys {
		if v, ok := correlationValue(fields.Get(k)); ok {
			h.remember([]byte(fam), correlationID(&h.ids, fam, k, v))
		}
	}
}

// remember adds a pending entry: the id of a family, key and value.
func (h *HealFilter) remember(fam []byte, id uint64) {
	if _, ok := h.pending.get(id); !ok {
		name, ok := h.familyNames[string(fam)]
		if !ok {
			name = string(fam)
			h.familyNames[name] = name
		}
		if h.families[name]++; h.families[name] == 1 {
			h.busy.gen++ // a family became busy
		}
		h.filter.add(id)
		h.pending.put(id, name)
	}
}

// forget drops a pending entry (healed or evicted) from its family's count.
func (h *HealFilter) forget(id uint64, fam string) {
	if h.filter.stale++; h.filter.stale > h.pending.len()+staleIDs {
		h.filter.reset()
		for live := range h.pending.m {
			if live != id { // being deleted, or evicted
				h.filter.add(live)
			}
		}
	}
	if h.families[fam] <= 1 {
		delete(h.families, fam)
		h.busy.gen++ // a family became idle
	} else {
		h.families[fam]--
	}
}

// noteRaw is note for an undecoded line: will_retry, the event and the
// correlation values picked out of its bytes. Noting a failure that is not
// one only costs a decode later; missing one only misses a heal.
func (h *HealFilter) noteRaw(line []byte) {
	if h == nil || !hasPair(line, willRetryKey, []byte(`true`)) {
		return
	}
	event, ok := rawValue(line, h.event)
	if !ok {
		return
	}
	fam, _ := family(event)
	for i, k := range h.keys {
		if v, ok := rawValue(line, h.quoted[i]); ok && len(v) > 0 {
			h.remember(fam, correlationID(&h.ids, fam, k, v))
		}
	}
}

// idle reports, from the few bytes around a success pattern found at q in
// b, that it is part of a plainly spelled "event" of a family no retried
// failure is pending for: most success lines, ruled out before the reader
// even finds where they begin and end. (Only a second, escaped "event" key
// could make such a line heal something; missing that heal sends a failure
// to a human, the safe side.)
func (h *HealFilter) idle(b []byte, q int) bool {
	open := bytes.LastIndexByte(b[:q], '"')
	if open < 0 || !bytes.HasSuffix(b[:open], []byte(`"event":`)) || bytes.IndexByte(b[open:q], '\n') >= 0 {
		return false
	}
	end := bytes.IndexByte(b[q:], '"')
	if end < 0 {
		return false
	}
	event := b[open+1 : q+end]
	dot := bytes.LastIndexByte(event, '.')
	return !h.familyBusy(event[:dot])
}

// wants reports whether a line must be decoded for the healing check. at is
// where the reader found one of the success patterns in it, or -1 if it has
// not looked.
func (h *HealFilter) wants(line []byte, at int) bool {
	if h == nil || h.pending.len() == 0 {
		return false
	}
	if at < 0 {
		at = indexAny(line, h.patterns)
		if at < 0 {
			return false
		}
	}
	if bytes.IndexByte(line, '\\') >= 0 {
		return true // an escape may hide a key or a value: decode
	}
	event, ok := eventAround(line, at)
	if !ok {
		if event, ok = rawValue(line, h.event); !ok {
			return false
		}
	}
	fam, _ := family(event)
	if !h.familyBusy(fam) {
		return false // nothing of this family is waiting to be healed
	}
	hit := false
	for i, k := range h.keys {
		v, ok := rawValue(line, h.quoted[i])
		if !ok {
			continue
		}
		id := correlationID(&h.ids, fam, k, v)
		if !h.filter.mayHold(id) {
			continue
		}
		if pendingFam, pending := h.pending.get(id); pending {
			// The success heals every failure waiting on it, as the
			// healing check does: later successes need no decoding.
			h.pending.delete(id)
			h.forget(id, pendingFam)
			hit = true
		}
	}
	return hit
}

// eventAround is the value of the "event" key when the success pattern at
// position at is part of it, spelled as the-loop writes it ("event":"x.y"):
// the common case, found without searching the line for the key.
func eventAround(line []byte, at int) ([]byte, bool) {
	open := bytes.LastIndexByte(line[:at], '"')
	if open < 0 || !bytes.HasSuffix(line[:open], []byte(`"event":`)) {
		return nil, false
	}
	end := bytes.IndexByte(line[at:], '"')
	if end < 0 {
		return nil, false
	}
	return line[open+1 : at+end], true
}

// rawValue picks the value of a top-level-looking "key" (its quoted
// spelling found by key): a string's bytes or a number's, out of an
// escape-free line.
func rawValue(line []byte, key finder) ([]byte, bool) {
	for {
		i := key.index(line)
		if i < 0 {
			return nil, false
		}
		line = skipJSONSpace(line[i+len(key.needle):])
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

// indexAny is where the first of patterns found in line occurs, or -1.
func indexAny(line []byte, patterns [][]byte) int {
	for _, p := range patterns {
		if i := bytes.Index(line, p); i >= 0 {
			return i
		}
	}
	return -1
}

// pairAnchor is a pair of adjacent bytes of a pattern and its offset in
// the pattern: searching for a pair rare in the log (a vector scan) finds
// the pattern's few occurrences faster than searching for its first byte, a
// '.' that is on every line.
type pairAnchor struct {
	offset int
	c0, c1 byte
}

// anchorGroup is the patterns sharing one anchor (".succeeded" and
// ".success" both have "cc" at offset 3): one scan finds them all.
type anchorGroup struct {
	pairAnchor
	patterns [][]byte
}

// commonPair is the count at which tune stops counting a pair.
const commonPair = 1024

// tune chooses the anchor of each pattern and key: the pair least frequent
// in sample (the start of the log being read), with letter frequency as the
// tie-break when the sample says nothing. Letter frequency alone is a poor
// guide in JSON logs: "mp" (of ".completed") is on every line that holds a
// "timestamp".
func (h *HealFilter) tune(sample []byte) {
	counts := map[[2]byte]int{}
	count := func(c0, c1 byte) int {
		k := [2]byte{c0, c1}
		if n, ok := counts[k]; ok {
			return n
		}
		// Counting stops at commonPair: past it a pair is common, and
		// counting every '"e' of the sample would cost more than it tells.
		n := 0
		for at := 0; n < commonPair; n++ {
			j := indexPair(sample[at:], c0, c1)
			if j < 0 {
				break
			}
			at += j + 1
		}
		counts[k] = n
		return n
	}
	for i := range h.quoted {
		h.quoted[i].anchor = rarestPair(h.quoted[i].needle, count)
	}
	h.event.anchor = rarestPair(h.event.needle, count)
	h.groupPatterns(count)
	h.tuned = sample != nil
}

// groupPatterns chooses the patterns' anchors. Every anchor costs a pass
// over the log, so patterns that hold the same pair at the same offset
// (".succeeded" and ".success": "cc" at 3) share it, unless it is much
// commoner than a member's own rarest pair; the others get their rarest.
func (h *HealFilter) groupPatterns(count func(c0, c1 byte) int) {
	h.anchors = h.anchors[:0]
	best := make([]int, len(h.patterns))
	for i, p := range h.patterns {
		a := rarestPair(p, count)
		best[i] = count(a.c0, a.c1)
	}
	placed := make([]bool, len(h.patterns))
	sharers := func(a pairAnchor) []int {
		var m []int
		for j, q := range h.patterns {
			if !placed[j] && a.offset+1 < len(q) && q[a.offset] == a.c0 && q[a.offset+1] == a.c1 &&
				count(a.c0, a.c1) <= 2*best[j]+64 {
				m = append(m, j)
			}
		}
		return m
	}
	for {
		var pick pairAnchor
		var members []int
		for i, p := range h.patterns {
			for off := 0; !placed[i] && off+1 < len(p); off++ {
				a := pairAnchor{offset: off, c0: p[off], c1: p[off+1]}
				m := sharers(a)
				if len(m) > len(members) || (len(m) == len(members) && len(m) > 0 && count(a.c0, a.c1) < count(pick.c0, pick.c1)) {
					pick, members = a, m
				}
			}
		}
		if len(members) < 2 {
			break
		}
		g := anchorGroup{pairAnchor: pick}
		for _, j := range members {
			g.patterns, placed[j] = append(g.patterns, h.patterns[j]), true
		}
		h.anchors = append(h.anchors, g)
	}
	for i, p := range h.patterns {
		if placed[i] {
			continue
		}
		a := rarestPair(p, count)
		k := slices.IndexFunc(h.anchors, func(g anchorGroup) bool { return g.pairAnchor == a })
		if k < 0 {
			h.anchors = append(h.anchors, anchorGroup{pairAnchor: a})
			k = len(h.anchors) - 1
		}
		h.anchors[k].patterns = append(h.anchors[k].patterns, p)
	}
}

// letterRarity is a rough English letter frequency (per mille); bytes not
// listed (punctuation, digits, capitals) are taken as common in JSON logs.
var letterRarity = map[byte]float64{'e': 127, 't': 91, 'a': 82, 'o': 75, 'i': 70, 'n': 67, 's': 63, 'h': 61,
	'r': 60, 'd': 43, 'l': 40, 'c': 28, 'u': 28, 'm': 24, 'w': 24, 'f': 22, 'g': 20, 'y': 20, 'p': 19,
	'b': 15, 'v': 10, 'k': 8, 'j': 2, 'x': 2, 'q': 1, 'z': 1}

// rarestPair is the pair of p seen least often (count), then the rarest by
// letter frequency.
func rarestPair(p []byte, count func(c0, c1 byte) int) pairAnchor {
	freq := func(c byte) float64 {
		if f, ok := letterRarity[c]; ok {
			return f
		}
		return 150
	}
	best, bestSeen, bestScore := pairAnchor{}, 0, -1.0
	for i := 0; i+1 < len(p); i++ {
		seen := count(p[i], p[i+1])
		score := freq(p[i]) * freq(p[i+1])
		if p[i] == p[i+1] {
			score /= 2 // doubled letters are rarer than their letters suggest
		}
		if bestScore < 0 || seen < bestSeen || (seen == bestSeen && score < bestScore) {
			best, bestSeen, bestScore = pairAnchor{offset: i, c0: p[i], c1: p[i+1]}, seen, score
		}
	}
	return best
}

// finder finds a needle by its anchor: bytes.Index starts from the first
// byte, and in a JSON line the '"' of a quoted key is everywhere.
type finder struct {
	needle []byte
	anchor pairAnchor
}

func (f finder) index(b []byte) int {
	a := f.anchor
	if len(f.needle) < 2 {
		return bytes.Index(b, f.needle)
	}
	for at := a.offset; at < len(b); {
		j := indexPair(b[at:], a.c0, a.c1)
		if j < 0 {
			break
		}
		if p := at + j - a.offset; bytes.HasPrefix(b[p:], f.needle) {
			return p
		}
		at += j + 1
	}
	return -1
}

// nextOccurrence is the first occurrence at or after from in b of a pattern
// of anchor group g, or len(b). Its patterns share the anchor's offset, so
// the first anchor that completes one is the first occurrence.
func (h *HealFilter) nextOccurrence(b []byte, from, g int) int {
	a := h.anchors[g]
	if a.offset == 0 && len(a.patterns[0]) < 2 {
		if q := indexAny(b[from:], a.patterns); q >= 0 {
			return from + q
		}
		return len(b)
	}
	for at := from + a.offset; at < len(b); {
		j := indexPair(b[at:], a.c0, a.c1)
		if j < 0 {
			break
		}
		p := at + j - a.offset
		for _, pat := range a.patterns {
			if bytes.HasPrefix(b[p:], pat) {
				return p
			}
		}
		at += j + 1
	}
	return len(b)
}

// idFilter is a Bloom filter over the pending ids (correlationIDs, already
// hashes), two bits an id in 128 Kbit (16 KiB: it must stay in the
// first-level cache while the reader streams the log through it; 32 KiB
// missed it often, and the 3% of false positives at 12.8k ids cost less).
// Most success lines of a family with failures pending heal nothing (on
// the bench log, none of 107k do); looking up each of their values in the
// pending map, tens of thousands of entries far out of cache, was half of
// the heal check. An id healed or evicted leaves its bits set: a
// false positive only costs the map lookup, and the filter is rebuilt from
// the map once stale ids outnumber the live ones by staleIDs.
type idFilter struct {
	bits  []uint64
	stale int
}

const (
	idFilterBits = 1 << 17
	staleIDs     = 4096
)

func (f *idFilter) reset() {
	if f.bits == nil {
		f.bits = make([]uint64, idFilterBits/64)
	}
	clear(f.bits)
	f.stale = 0
}

// idFilterPositions are an id's two bits: from its low and high halves.
func idFilterPositions(h uint64) (uint64, uint64) {
	return h % idFilterBits, (h >> 32) % idFilterBits
}

func (f *idFilter) add(id uint64) {
	if f.bits == nil {
		f.reset()
	}
	a, b := idFilterPositions(id)
	f.bits[a/64] |= 1 << (a % 64)
	f.bits[b/64] |= 1 << (b % 64)
}

func (f *idFilter) mayHold(id uint64) bool {
	if f.bits == nil {
		return false
	}
	a, b := idFilterPositions(id)
	return f.bits[a/64]&(1<<(a%64)) != 0 && f.bits[b/64]&(1<<(b%64)) != 0
}

// correlationIDs names a family, correlation key and value by a 64-bit hash
// (maphash, seeded per process) instead of the string family + NUL + key +
// NUL + value: the healing checks keep tens of thousands of them, and as
// strings each was an allocation, a long key hashed at every lookup and a
// map entry far out of cache. Two different ones share a hash with
// probability 2^-64 per pair, about 10^-11 for the 20,000 a scan may hold;
// then a failure counts as healed by the other's success.
type correlationIDs struct {
	seed    maphash.Seed
	scratch []byte
}

func newCorrelationIDs() correlationIDs { return correlationIDs{seed: maphash.MakeSeed()} }

// correlationID is the id of a family, key and value (a method cannot take
// the type parameters that let both the reader's bytes and decoded strings in).
func correlationID[F, V ~string | ~[]byte](c *correlationIDs, fam F, key string, value V) uint64 {
	c.scratch = append(append(append(append(append(c.scratch[:0], fam...), 0), key...), 0), value...)
	return maphash.Bytes(c.seed, c.scratch)
}

// familySlots caches whether a family has failures pending. The reader asks
// at every success line (190k of them on the bench log), and hashing the
// name into the families map was most of that check; the answer changes
// only when a family gains its first pending failure or loses its last,
// which bumps gen and so empties every slot.
type familySlots struct {
	gen   uint64
	slots [64]struct {
		gen  uint64 // gen+1 when filled: a zero slot is empty
		name string
		busy bool
	}
}

// familyBusy reports whether fam has failures pending.
func (h *HealFilter) familyBusy(fam []byte) bool {
	k := uint(len(fam))
	if len(fam) > 0 {
		k += uint(fam[0]) + 7*uint(fam[len(fam)-1])
	}
	slot := &h.busy.slots[k%uint(len(h.busy.slots))]
	if slot.gen == h.busy.gen+1 && slot.name == string(fam) {
		return slot.busy
	}
	name, known := h.familyNames[string(fam)] // interned once noted
	if !known {
		name = string(fam)
	}
	slot.gen, slot.name, slot.busy = h.busy.gen+1, name, h.families[name] > 0
	return slot.busy
}
