package logread

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
// nothing, and decoding them all cost more than the rest of the scan. It
// is the early skip of Healing's correlation (the same policy keys,
// suffixes, families and ids); Healing decides.
//
// It errs towards decoding: a value it cannot pick out cheaply (an escape)
// makes it decode; a failure evicted from its bounded set is simply not
// healed, and an unhealed failure goes to a human. A log in another format
// than the-loop's (whose keys it does not read from bytes) has every
// success line decoded once a retried failure may have been read.
type HealFilter struct {
	patterns []finder // the success suffixes as bytes: ".succeeded"
	keys     []string
	quoted   []finder // the keys as they appear in JSON: "work_item"
	event    finder   // "event"
	retry    finder   // "will_retry"
	// other: the log is not the-loop's; maybeRetried says a line that may
	// be a retried failure was read.
	other, maybeRetried bool
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

// NewHealFilter builds the reader's filter for a policy over format f (nil:
// the-loop's).
func NewHealFilter(p Policy, f *Format) *HealFilter {
	if f == nil {
		f = TheLoop()
	}
	h := &HealFilter{keys: f.CorrelationKeys(p), other: !f.native,
		pending: newFIFOMap[uint64, string](p.MaxPending), families: map[string]int{},
		ids: newCorrelationIDs(), familyNames: map[string]string{}}
	h.pending.evicted = h.forget
	h.patterns = groupFinders(p.SuccessPatterns())
	for _, k := range h.keys {
		h.quoted = append(h.quoted, newFinder([]byte(`"`+k+`"`)))
	}
	h.event = newFinder([]byte(`"` + KeyEvent + `"`))
	h.retry = newFinder([]byte(`"` + KeyRetry + `"`))
	if h.other {
		// A line naming the retry field, quoted or escaped, may be a
		// retried failure; a format without one has none to heal.
		retry := f.Retry
		if f.Inner != "" {
			retry = f.InnerFormat.Retry
		}
		h.retry = finder{}
		for _, r := range retry {
			names := keyNames(r)
			h.retry = newFinder([]byte(names[len(names)-1]))
		}
	}
	return h
}

// tune anchors the filter's finders on the bytes rarest in the log.
func (h *HealFilter) tune(freq *[256]int, total int) {
	if h == nil {
		return
	}
	for _, f := range [][]finder{h.patterns, h.quoted} {
		for i := range f {
			f[i].tune(freq, total)
		}
	}
	h.event.tune(freq, total)
	h.retry.tune(freq, total)
}

// pendingAny reports whether a retried failure may await its success.
func (h *HealFilter) pendingAny() bool { return h.pending.len() > 0 || h.maybeRetried }

// CorrelationValue is how a correlation field is compared, here and in the
// healing check.
func CorrelationValue(v any) (string, bool) {
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
	if retry, ok := fields.Get(KeyRetry).(bool); !ok || !retry {
		return
	}
	if h.other {
		h.maybeRetried = true
		return
	}
	fam, _ := family(str(fields.Get(KeyEvent)))
	for _, id := range h.ids.of(fields, h.keys) {
		h.remember([]byte(fam), id)
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
	if h == nil {
		return
	}
	if h.other {
		h.maybeRetried = h.maybeRetried || (h.retry.needle != nil && h.retry.index(line) >= 0)
		return
	}
	if !hasPair(line, h.retry, []byte(`true`)) {
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
	event, ok := eventAround(b, q)
	fam, _ := family(event)
	return ok && !h.other && !h.familyBusy(fam)
}

// wants reports whether a line must be decoded for the healing check. at is
// where the reader found one of the success patterns in it, or -1 if it has
// not looked.
func (h *HealFilter) wants(line []byte, at int) bool {
	if h == nil || !h.pendingAny() {
		return false
	}
	if at < 0 {
		for _, p := range h.patterns {
			if i := p.index(line); i >= 0 {
				at = i
				break
			}
		}
		if at < 0 {
			return false
		}
	}
	if h.other {
		return true
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
// the common case, found without searching the line (or region) for the key.
func eventAround(line []byte, at int) ([]byte, bool) {
	open := bytes.LastIndexByte(line[:at], '"')
	if open < 0 || !bytes.HasSuffix(line[:open], []byte(`"event":`)) || bytes.IndexByte(line[open:at], '\n') >= 0 {
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
		line = line[i+len(key.needle):]
		v, ok := valueAfter(line, false)
		if !ok {
			continue
		}
		if len(v) > 0 && v[0] == '"' {
			if e := bytes.IndexByte(v[1:], '"'); e >= 0 {
				return v[1 : 1+e], true
			}
			return nil, false
		}
		e := numberLen(v)
		if e == 0 {
			return nil, false
		}
		return v[:e], true
	}
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
	out     []uint64
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

// of is the correlation ids of a decoded record: its event's family with
// each of keys and its value. In a scratch slice valid until the next call.
func (c *correlationIDs) of(fields pipeline.Fields, keys []string) []uint64 {
	fam, _ := family(str(fields.Get(KeyEvent)))
	c.out = c.out[:0]
	for _, k := range keys {
		if v, ok := CorrelationValue(fields.Get(k)); ok {
			c.out = append(c.out, correlationID(c, fam, k, v))
		}
	}
	return c.out
}

func str(v any) string { s, _ := v.(string); return s }

// family is an event's operation: dispatch.failed → dispatch.
// The reader asks it of a line's bytes, the healing check of a decoded string.
func family[S ~string | ~[]byte](event S) (fam, last S) {
	for i := len(event) - 1; i >= 0; i-- {
		if event[i] == '.' {
			return event[:i], event[i+1:]
		}
	}
	return event[:0], event
}

// ReasonSuccess marks a record that is not a failure but a success event
// the healing check needs (dispatch.succeeded after dispatch.failed).
const ReasonSuccess = "success"

// SuccessPatterns are the bytes a success line must hold (its event's last
// part), so the reader decodes it for the healing check.
func (p Policy) SuccessPatterns() [][]byte {
	var out [][]byte
	for _, s := range p.SuccessSuffixes {
		out = append(out, []byte("."+s))
	}
	return out
}

// IsSuccess reports whether r is a success event the healing check can
// correlate: an event of a family ending in a success suffix, with a
// correlation key (the policy's or format f's ids).
func (p Policy) IsSuccess(r pipeline.Record, f *Format) bool {
	fam, last := family(r.Str(KeyEvent))
	if fam == "" || !slices.Contains(p.SuccessSuffixes, last) {
		return false
	}
	has := func(k string) bool { return r.Fields.Get(k) != nil }
	return slices.ContainsFunc(p.CorrelationKeys, has) || (f != nil && slices.ContainsFunc(f.IDs, has))
}

// Healing follows retried failures to their later success, in log order,
// inside the dedup goroutine: the healing check. It holds only failures
// still awaiting a success, at most the policy's MaxPending; one evicted is
// simply not healed (fail-safe). HealFilter is its early skip in the reader.
type Healing struct {
	keys    []string
	pending *fifoMap[uint64, []pendingFailure] // correlation id → retried failures awaiting success
	healed  map[string]int
	ids     correlationIDs
}

type pendingFailure struct {
	line int64
	fp   string
}

// NewHealing is the healing check of policy p over format f (nil: the-loop's).
func NewHealing(p Policy, f *Format) *Healing {
	if f == nil {
		f = TheLoop()
	}
	return &Healing{keys: f.CorrelationKeys(p), pending: newFIFOMap[uint64, []pendingFailure](p.MaxPending),
		healed: map[string]int{}, ids: newCorrelationIDs()}
}

// Failure notes a failure occurrence (fingerprint fp) that will be retried.
func (h *Healing) Failure(r pipeline.Record, fp string) {
	if retry, ok := r.Bool(KeyRetry); !ok || !retry {
		return
	}
	for _, k := range h.ids.of(r.Fields, h.keys) {
		list, _ := h.pending.get(k)
		h.pending.put(k, append(list, pendingFailure{r.Line, fp}))
	}
}

// Success heals every failure waiting on one of r's correlation ids.
func (h *Healing) Success(r pipeline.Record) {
	seen := map[int64]bool{} // a failure heals once, whichever key matched
	for _, k := range h.ids.of(r.Fields, h.keys) {
		list, _ := h.pending.get(k)
		for _, p := range list {
			if !seen[p.line] {
				seen[p.line] = true
				h.healed[p.fp]++
			}
		}
		h.pending.delete(k)
	}
}

// Healed is how many occurrences of fingerprint fp healed.
func (h *Healing) Healed(fp string) int { return h.healed[fp] }
