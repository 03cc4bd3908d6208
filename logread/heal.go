package logread

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"

	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// HealFilter lets the reader decode only the success lines that can heal a
// retried failure it has already read. The reader asks it of every line it
// does not decode otherwise (wants): the line's event is read from its
// bytes, and only a success of a family with a retried failure pending,
// carrying a correlation value seen on one, is decoded. Most success lines
// in a busy log heal nothing, and decoding them all cost more than the rest
// of the scan. It is the early skip of Healing's correlation (the same
// policy keys, suffixes, families and ids); Healing decides.
//
// It errs towards decoding: a value it cannot read cheaply (an escape)
// makes it decode; a failure evicted from its bounded set is simply not
// healed, and an unhealed failure goes to a human. When the format keeps
// its event, retry flag or ids where a line's bytes do not plainly show
// them (nested paths, a wrapper's escaped inner line, OTLP attribute
// lists), every line holding a success suffix is decoded once a retried
// failure may have been read.
type HealFilter struct {
	suffixes []string // the policy's success suffixes
	patterns []finder // the suffixes as a line holds them: ".succeeded"
	keys     []string // the correlation keys
	// plain: the format's event, retry and correlation keys are top-level
	// keys, read from a line's bytes by these finders.
	plain bool
	event []keyFinder // the canonical event's sources, the first present wins
	retry []keyFinder // the retry flag's (when not plain: its bare names)
	idKey []keyFinder // the correlation keys'
	// maybeRetried says a line that may be a retried failure was read
	// (when not plain).
	maybeRetried bool
	// pending maps the correlation id of each retried failure's family, key
	// and value (correlationIDs) to its family's hash (familyID).
	pending *fifoMap[uint64, uint64]
	// families counts pending entries per event family: a success line of
	// a family with none (most of them: github.api.succeeded...) is ruled
	// out before its correlation values are looked for.
	families map[uint64]int
	// filter rules out most ids that are not pending without touching the
	// pending map (see idFilter).
	filter idFilter
	ids    correlationIDs
}

// NewHealFilter builds the reader's filter for a policy over format f (nil:
// the-loop's).
func NewHealFilter(p Policy, f *Format) *HealFilter {
	if f == nil {
		f = TheLoop()
	}
	h := &HealFilter{suffixes: p.SuccessSuffixes, keys: f.CorrelationKeys(p),
		pending: newFIFOMap[uint64, uint64](p.MaxPending), families: map[uint64]int{},
		ids: newCorrelationIDs()}
	h.pending.evicted = h.forget
	h.patterns = groupFinders(p.SuccessPatterns())
	events := f.Event
	if !f.native { // the canonical event falls back to the message
		events = append(slices.Clone(events), f.Message...)
	}
	h.plain = f.Inner == "" && !f.AnyValue && len(f.Lift) == 0 &&
		!slices.ContainsFunc(slices.Concat(events, f.Retry, h.keys), func(k string) bool { return strings.Contains(k, ".") })
	if !h.plain {
		// A line naming the retry field, quoted or escaped, may be a
		// retried failure; a format without one has none to heal.
		retry := f.Retry
		if f.Inner != "" {
			retry = f.InnerFormat.Retry
		}
		for _, r := range retry {
			names := keyNames(r)
			h.retry = append(h.retry, keyFinder{finder: newFinder([]byte(names[len(names)-1]))})
		}
		return h
	}
	quoted := func(keys []string) []keyFinder {
		var out []keyFinder
		for _, k := range keys {
			out = append(out, keyFinder{finder: newFinder([]byte(`"` + k + `"`))})
		}
		return out
	}
	h.event, h.retry, h.idKey = quoted(events), quoted(f.Retry), quoted(h.keys)
	return h
}

// tune anchors the filter's finders on the bytes rarest in the log.
func (h *HealFilter) tune(freq *[256]int, total int) {
	if h == nil {
		return
	}
	for i := range h.patterns {
		h.patterns[i].tune(freq, total)
	}
	for _, keys := range [][]keyFinder{h.event, h.retry, h.idKey} {
		for i := range keys {
			keys[i].tune(freq, total)
		}
	}
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

// remember adds a pending entry: the id of a family, key and value.
func (h *HealFilter) remember(fam []byte, id uint64) {
	if _, ok := h.pending.get(id); !ok {
		f := h.familyID(fam)
		h.families[f]++
		h.filter.add(id)
		h.pending.put(id, f)
	}
}

// forget drops a pending entry (healed or evicted) from its family's count.
func (h *HealFilter) forget(id, fam uint64) {
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
	} else {
		h.families[fam]--
	}
}

// noteRaw remembers the correlation values of a retried failure, read
// from the bytes of a line the reader passes on. Noting a failure that is not
// one only costs a decode later; missing one only misses a heal.
func (h *HealFilter) noteRaw(line []byte) {
	if h == nil {
		return
	}
	if !h.plain {
		h.maybeRetried = h.maybeRetried || slices.ContainsFunc(h.retry, func(k keyFinder) bool { return k.index(line) >= 0 })
		return
	}
	if retry, _ := firstValue(line, h.retry); string(retry) != "true" {
		return
	}
	event, ok := firstValue(line, h.event)
	if !ok {
		return
	}
	fam := family(event)
	for i, k := range h.keys {
		if v, ok := h.idKey[i].value(line); ok && len(v) > 0 {
			h.remember(fam, correlationID(&h.ids, fam, k, v))
		}
	}
}

// wants reports whether line must be decoded for the healing check: it is
// a success that heals a pending failure (which it then stops waiting for).
func (h *HealFilter) wants(line []byte) bool {
	if h == nil || !h.pendingAny() {
		return false
	}
	event, ok := firstValue(line, h.event)
	if !ok || bytes.IndexByte(event, '\\') >= 0 {
		// Not read from the bytes (or not plain): any line holding a
		// success suffix.
		return slices.ContainsFunc(h.patterns, func(p finder) bool { return p.index(line) >= 0 })
	}
	fam, ok := successFamily(event, h.suffixes)
	if !ok || !h.familyBusy(fam) {
		return false // not a success, or nothing of its family is waiting to be healed
	}
	if bytes.IndexByte(line, '\\') >= 0 {
		return true // an escape may hide a key or a value: decode
	}
	hit := false
	for i, k := range h.keys {
		v, ok := h.idKey[i].value(line)
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

// keyFinder reads a top-level key's value from a line's bytes: first where
// recent lines had the key (a logger writes its keys in one order, so the
// key moves only with the lengths of the values before it: a level's name,
// a pid), each place costing one comparison, else by a search — first in
// the line's last tailSpan bytes when the key was last found there, in its
// back half (pino writes msg last, after fields that vary line by line).
// Any occurrence will do: the heal filter only ever decodes more than it
// must.
type keyFinder struct {
	finder        // the quoted key: "work_item"
	at     [4]int // where recent lines had it
	next   int    // the slot a newly found place takes
	tail   bool   // last found in the back half of its line, in its last tailSpan bytes
}

// value is the key's value in line: a string's bytes as written, or a
// number's or literal's.
func (k *keyFinder) value(line []byte) ([]byte, bool) {
	// A key late in its line moves with every value before it: its places
	// are not looked at.
	for i := 0; i < len(k.at) && !k.tail; i++ {
		if v, ok := valueAt(line, k.at[i], k.needle); ok {
			return v, true
		}
	}
	if k.tail { // the line's last member, else its last tailSpan bytes, first
		if v, ok := k.lastMember(line); ok {
			return v, true
		}
		if v, ok := k.search(line, max(0, len(line)-tailSpan)); ok {
			return v, true
		}
	}
	return k.search(line, 0)
}

// lastMember is the key's value when it is the line's last member, a plain
// string (pino's `,"msg":"…"}`), read back over the value alone; else the
// search decides (a search of the tail meets its anchor in other values).
func (k *keyFinder) lastMember(line []byte) ([]byte, bool) {
	end := len(line) - 2 // the value's closing quote
	if end < 0 || line[end] != '"' || line[end+1] != '}' {
		return nil, false
	}
	open := bytes.LastIndexByte(line[:end], '"')
	key := open - 1 - len(k.needle) // a member's start: after ',' or '{', not inside a key
	if key < 1 || line[key-1] != ',' && line[key-1] != '{' || line[open-1] != ':' || !bytes.Equal(line[key:open-1], k.needle) {
		return nil, false
	}
	return line[open+1 : end], true
}

// search finds the key's value in line from from on, and remembers where.
func (k *keyFinder) search(line []byte, from int) ([]byte, bool) {
	for at := from; at < len(line); {
		i := k.index(line[at:])
		if i < 0 {
			break
		}
		if v, ok := valueAt(line, at+i, k.needle); ok {
			at += i
			k.at[k.next], k.next, k.tail = at, (k.next+1)%len(k.at), at > len(line)/2 && at >= len(line)-tailSpan
			return v, true
		}
		at += i + 1
	}
	return nil, false
}

// tailSpan is how much of a line's end a key found late in its lines is
// looked for in first: pino's msg and its value.
const tailSpan = 96

// firstValue is the value of the first of keys line holds.
func firstValue(line []byte, keys []keyFinder) ([]byte, bool) {
	for i := range keys {
		if v, ok := keys[i].value(line); ok && len(v) > 0 {
			return v, true
		}
	}
	return nil, false
}

// valueAt is the value of the quoted key at line[at:], if it is there.
func valueAt(line []byte, at int, key []byte) ([]byte, bool) {
	if at+len(key) > len(line) || !bytes.Equal(line[at:at+len(key)], key) {
		return nil, false
	}
	v, ok := valueAfter(line[at+len(key):], false)
	if !ok || len(v) == 0 {
		return nil, false
	}
	if v[0] == '"' {
		e := bytes.IndexByte(v[1:], '"')
		return v[1 : 1+max(e, 0)], e >= 0
	}
	e := 0
	for e < len(v) && !isJSONSpace(v[e]) && v[e] != ',' && v[e] != '}' && v[e] != ']' {
		e++
	}
	return v[:e], e > 0
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

// familyBusy reports whether fam has failures pending. It is asked only
// of success lines, so a map lookup is cheap enough.
func (h *HealFilter) familyBusy(fam []byte) bool { return h.families[h.familyID(fam)] > 0 }

// familyID names a family by its hash, as correlationIDs names an id: no
// string to allocate per failure noted from a line's bytes.
func (h *HealFilter) familyID(fam []byte) uint64 { return maphash.Bytes(h.ids.seed, fam) }

// of is the correlation ids of a decoded record: its event's family with
// each of keys and its value. In a scratch slice valid until the next call.
func (c *correlationIDs) of(fields pipeline.Fields, keys []string) []uint64 {
	fam := family(str(fields.Get(KeyEvent)))
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
func family[S ~string | ~[]byte](event S) S {
	for i := len(event) - 1; i >= 0; i-- {
		if event[i] == '.' {
			return event[:i]
		}
	}
	return event[:0]
}

// successFamily is a success event's family (not empty; its last part one of
// suffixes): dispatch.succeeded → dispatch. Comparing the end first is cheap.
func successFamily[S ~string | ~[]byte](event S, suffixes []string) (S, bool) {
	for _, s := range suffixes {
		if n := len(event) - len(s); n > 1 && event[n-1] == '.' && string(event[n:]) == s && !strings.Contains(s, ".") {
			return event[:n-1], true
		}
	}
	return event[:0], false
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
	if _, ok := successFamily(r.Str(KeyEvent), p.SuccessSuffixes); !ok {
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
