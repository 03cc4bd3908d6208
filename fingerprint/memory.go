package fingerprint

import (
	"slices"
	"sort"
	"strconv"
	"strings"
)

// The template memory merges templates that the normalizer could not tell
// are one defect: one event's templates with the same number of words that
// differ only in positions where at least MemoryThreshold distinct words
// have been seen ("Failed password for root|admin|oracle|git from <*>").
// Like Drain (He et al., ICWS 2017), it learns from the log itself what is
// data; unlike Drain, a position becomes data only on evidence (enough
// distinct values around an otherwise equal message), and what the
// normalizer kept as identity never does, and data is looked for only where
// a message puts an argument: after a preposition ("for root", "held by
// janitor", "to staging") or, as the message's first word, the qualified
// name of the component or job it reports on (com.apple.cloudd: ...), or
// after a command-line option (-b feature/x, --delete main). A value the
// message echoes ("--delete X: unable to delete 'X'") is one value at all
// its places. A word elsewhere says what happened or to what ("git
// push|fetch failed", "registered new driver hub|usbhid") and stays,
// however often it varies. Where the normalizer masked the value in one
// variant, that is evidence too: the mask counts as one of the distinct
// values, and MemoryThreshold-1 of them make the position data.
//
//   - a word with a digit: what survived normalization as a number is an
//     identity code (HTTP 404, exit 137, ORA-00942, int64);
//   - a word with a slash, backslash or '=': routes, paths and key=value
//     pairs keep only their identity after normalization; a ref name
//     (feature/cache-fix: names between slashes, no leading slash, no file
//     extension) may vary;
//   - a word holding a mask: its other part is what the normalizer kept;
//   - a failure class (…Error, …Exception, …Fault, panic): what the
//     message is about;
//   - the message around the varying words must name a defect on its own:
//     at least memoryMinConstant constant words, and at least half of its
//     words ("connection refused" vs "connection reset", "registered new
//     driver usbhid" vs "hub");
//   - templates longer than memoryMaxWords (traces) are named by their
//     frames, which the normalizer already reduced.
//
// The first-seen fingerprint of a merged family stays canonical, so an issue
// filed before the merge keeps its defect; the others, and the family's
// pattern fingerprint (the same on every deployment that learns the
// pattern, whatever variants it saw first), become aliases.
const (
	MemoryThreshold   = 4
	memoryMinConstant = 4
	memoryMaxWords    = 64
	// memoryMaxSlots bounds what the state keeps: past it, the positions
	// that never turned out to vary are forgotten, least recently seen
	// first. Learned families are kept.
	memoryMaxSlots = 20000
)

// MemoryState is the template memory as the state file keeps it.
type MemoryState struct {
	// Slots are keyed by a signature: an event and template with one
	// position (and those already known to vary) left out. Each holds what
	// was seen at that position.
	Slots map[string]*MemorySlot `json:"slots,omitempty"`
	// Families are keyed by their pattern fingerprint.
	Families map[string]*MemoryFamily `json:"families,omitempty"`
	// Tick counts learning calls, for forgetting the least recent slots.
	Tick int64 `json:"tick,omitempty"`

	// canonical are fingerprints CanonicalOf found canonical, valid while
	// no slot turns variable (grown): a template's family depends only on
	// the variable slots, which are never forgotten, and on the families,
	// whose canonical never changes. Not persisted: a memo for a process
	// that keeps the state between scans (a watcher).
	canonical map[string]bool
	grown     bool
}

// Clone is a deep copy (nil for nil): a read-only caller learns on it.
func (st *MemoryState) Clone() *MemoryState {
	if st == nil {
		return nil
	}
	c := &MemoryState{Slots: make(map[string]*MemorySlot, len(st.Slots)),
		Families: make(map[string]*MemoryFamily, len(st.Families)), Tick: st.Tick}
	for k, s := range st.Slots {
		cs := *s
		cs.Values, cs.Members = slices.Clone(s.Values), slices.Clone(s.Members)
		c.Slots[k] = &cs
	}
	for k, f := range st.Families {
		c.Families[k] = &MemoryFamily{Canonical: f.Canonical, Members: slices.Clone(f.Members)}
	}
	return c
}

// MemoryFamily is one learned family: its canonical (first-seen)
// fingerprint and the fingerprints of the variants seen in it, which may
// each have been filed before the family was learned.
type MemoryFamily struct {
	Canonical string   `json:"c"`
	Members   []string `json:"m,omitempty"`
}

// maxFamilyMembers bounds the variants a family remembers.
const maxFamilyMembers = 32

func addMember(members []string, fp string) []string {
	if len(members) < maxFamilyMembers && !slices.Contains(members, fp) {
		members = append(members, fp)
	}
	return members
}

// MemorySlot is what one position of templates otherwise equal has held.
type MemorySlot struct {
	Values []string `json:"v,omitempty"` // short hashes of the distinct words, until it varies
	// Members are the fingerprints of the templates seen here, until it
	// varies: they join the family it makes.
	Members  []string `json:"m,omitempty"`
	First    string   `json:"f"` // canonical fingerprint of the first template seen here
	Variable bool     `json:"x,omitempty"`
	Seen     int64    `json:"t,omitempty"` // Tick when last seen
}

// Memory learns and applies template families over a MemoryState, which it
// changes in place. It is not safe for concurrent use.
type Memory struct {
	st *MemoryState
}

// NewMemory works on st (allocating its maps when nil).
func NewMemory(st *MemoryState) *Memory {
	if st.Slots == nil {
		st.Slots = map[string]*MemorySlot{}
	}
	if st.Families == nil {
		st.Families = map[string]*MemoryFamily{}
	}
	return &Memory{st: st}
}

// memoryTemplate is a template split into words, with their places in it.
type memoryTemplate struct {
	event    string
	text     string
	words    []string
	spans    [][2]int
	eligible []bool
	// echo[i] is the first position holding the same word as i: an
	// argument a message echoes ("--delete X: unable to delete 'X'") is
	// one value, and its positions vary together. A quoted word on its own
	// is a name the message is about (KeyError: 'email', column "name"),
	// data only as such an echo.
	echo     []int
	constant int // words that hold no mask
}

func splitTemplate(event, text string) (memoryTemplate, bool) {
	t := memoryTemplate{event: event, text: text}
	for i := 0; i < len(text); {
		for i < len(text) && isSpace(text[i]) {
			i++
		}
		j := i
		for j < len(text) && !isSpace(text[j]) {
			j++
		}
		if j > i {
			if len(t.words) == memoryMaxWords {
				return t, false
			}
			t.words = append(t.words, text[i:j])
			t.spans = append(t.spans, [2]int{i, j})
		}
		i = j
	}
	if len(t.words) < 2 {
		return t, false
	}
	t.eligible = make([]bool, len(t.words))
	t.echo = make([]int, len(t.words))
	first := map[string]int{}
	for i, w := range t.words {
		if !strings.Contains(w, Mask) {
			t.constant++
		}
		argument := i == 0 && isQualifiedName(w) || i > 0 && (prepositions[strings.ToLower(strings.Trim(t.words[i-1], "([{\"'"))] ||
			isOption(t.words[i-1]))
		t.eligible[i] = argument && mayVary(w)
		c := wordCore(w)
		if j, ok := first[c]; ok && c != Mask { // masks are many values, not one echoed
			t.echo[i] = j
		} else {
			first[c], t.echo[i] = i, i
		}
	}
	// A value echoed is eligible as a whole when one of its places is an
	// argument and every one may vary.
	for i := range t.words {
		if j := t.echo[i]; j != i {
			t.eligible[j] = (t.eligible[j] || t.eligible[i]) && mayVary(t.words[i])
		}
	}
	return t, true
}

// group returns the positions holding the same value as position i.
func (t *memoryTemplate) group(i int) []int {
	var g []int
	for j, e := range t.echo {
		if e == t.echo[i] {
			g = append(g, j)
		}
	}
	return g
}

// wordCore is a word without the quotes and punctuation around it.
func wordCore(w string) string { return strings.TrimFunc(w, isWordEdge) }

// isWordEdge is the punctuation wordCore trims (a function: strings.Trim
// builds its set anew on every call).
func isWordEdge(r rune) bool { return strings.ContainsRune("([{\"'`)]},;:.!?", r) }

// isOption: a command-line option ("-b", "--delete"): the word after it is
// its argument.
func isOption(w string) bool {
	if len(w) < 2 || w[0] != '-' || w == "--" {
		return false
	}
	name := strings.TrimLeft(w, "-")
	return name != "" && len(w)-len(name) <= 2 && isLetters(strings.ReplaceAll(name, "-", ""))
}

// mayVary tells whether a word can turn out to be data (see MemoryThreshold).
func mayVary(w string) bool {
	if wordCore(w) == Mask {
		// The normalizer found data here in this variant: the position's
		// other values are likely data too.
		return true
	}
	if strings.Contains(w, Mask) || strings.ContainsAny(w, `0123456789\=`) || strings.Contains(w, "/") && !isRefName(wordCore(w)) {
		return false
	}
	core := strings.TrimRight(w, ":,;.!?)]}'\"")
	letters := 0
	for i := 0; i < len(core); i++ {
		if isASCIILetter(core[i]) {
			letters++
		}
	}
	if letters < 2 {
		return false
	}
	lower := strings.ToLower(core)
	for _, class := range []string{"error", "exception", "fault", "panic", "failure"} {
		if strings.HasSuffix(lower, class) {
			return false
		}
	}
	return true
}

// isRefName: a slash-separated name that is not a path or a file — a
// branch or ref (feature/cache-fix, release/next): no leading slash, dot or
// tilde, names between the slashes, and no file extension at its end.
func isRefName(w string) bool {
	if w == "" || strings.ContainsAny(w[:1], "/.~") || strings.Contains(w, "//") {
		return false
	}
	segs := strings.Split(w, "/")
	if len(segs) > 3 || strings.Contains(segs[len(segs)-1], ".") {
		return false
	}
	for _, seg := range segs {
		if seg == "" || !isLetters(strings.NewReplacer("-", "", "_", "").Replace(seg)) {
			return false
		}
	}
	return true
}

// slotValue is how a slot remembers a word: a short hash of its core, so
// "'main':" and "main:" of an echoed value are one value.
func slotValue(w string) string { return sha16(wordCore(w))[:8] }

// maskValue is the slot value of a word the normalizer masked: where one
// variant had data masked, two other values (not three) make the position
// data.
var maskValue = slotValue(Mask)

// signature keys the slot of the positions leave of t, with the positions
// in wild left out too. Keys are persisted, so it is a SHA-1 prefix, not a
// seeded hash.
func (t *memoryTemplate) signature(wild, leave []int) string {
	var b strings.Builder
	b.WriteString(t.event)
	b.WriteByte(0)
	b.WriteString(strconv.Itoa(len(t.words)))
	b.WriteByte(0)
	b.WriteString(strconv.Itoa(leave[0]))
	for j, w := range t.words {
		b.WriteByte(0)
		if !slices.Contains(leave, j) && !slices.Contains(wild, j) {
			b.WriteString(w)
		}
	}
	return sha16(b.String())
}

// pattern is t's text with the words at wild masked.
func (t *memoryTemplate) pattern(wild []int) string {
	if len(wild) == 0 {
		return t.text
	}
	var b strings.Builder
	at := 0
	for _, i := range wild {
		b.WriteString(t.text[at:t.spans[i][0]])
		b.WriteString(Mask)
		at = t.spans[i][1]
	}
	b.WriteString(t.text[at:])
	return b.String()
}

// patternFingerprint names a family the same way on every deployment. Its
// own prefix keeps it apart from any template's fingerprint.
func patternFingerprint(event, pattern string) string {
	return patternPrefix + sha16(Version+"\npattern\n"+event+"\n"+pattern)
}

const patternPrefix = Version + "p:"

// IsPattern tells a family's pattern fingerprint from a template's.
func IsPattern(fp string) bool { return strings.HasPrefix(fp, patternPrefix) }

// places returns the sets of positions of t that may vary with wild
// already varying: a value at all the places it is echoed, each masked
// word on its own, and all masked words together (in a variant whose
// echoed value was masked, the masks are its places). Each must leave
// enough constant words.
func (t *memoryTemplate) places(wild []int) [][]int {
	fits := func(n int) bool {
		constant := t.constant - len(wild) - n
		return constant >= memoryMinConstant && 2*constant >= len(t.words)
	}
	var out [][]int
	masks := t.masks()
	for i := range t.words {
		if slices.Contains(wild, i) || !mayVary(t.words[i]) {
			continue
		}
		g := t.group(i)
		if t.echo[i] == i && fits(len(g)) && !slices.ContainsFunc(g, func(j int) bool { return slices.Contains(wild, j) }) {
			out = append(out, g)
		}
		if len(masks) > 1 && masks[0] == i && fits(len(masks)) &&
			!slices.ContainsFunc(masks, func(j int) bool { return slices.Contains(wild, j) }) {
			out = append(out, masks)
		}
	}
	return out
}

// masks are the positions of the words that are a mask alone.
func (t *memoryTemplate) masks() []int {
	var m []int
	for j, w := range t.words {
		if wordCore(w) == Mask {
			m = append(m, j)
		}
	}
	return m
}

// resolve finds the positions of t known to vary, and the slot that made
// the last of them vary (nil when none does).
func (m *Memory) resolve(t *memoryTemplate) (wild []int, last *MemorySlot) {
	for changed := true; changed; {
		changed = false
		for _, set := range t.places(wild) {
			if slices.ContainsFunc(set, func(j int) bool { return slices.Contains(wild, j) }) {
				continue // an earlier set this round took it
			}
			if s := m.st.Slots[t.signature(wild, set)]; s != nil && s.Variable {
				wild = append(wild, set...)
				sort.Ints(wild)
				last, changed = s, true
			}
		}
	}
	return wild, last
}

// isDefault tells whether fp is the default fingerprint of the event and
// template: an operator's rule decided the others, and the memory leaves
// them alone. event is already the identity's (identityEvent), as Learn
// and Canonical pass it.
func isDefault(fp, event, template string) bool {
	return fp == versionedFingerprint(Version, event, template)
}

// Learn notes one template of an event, whose fingerprint is fp: each of
// its words that may vary is counted in its slot, and a slot that reaches
// MemoryThreshold distinct words makes its family.
func (m *Memory) Learn(event, template, fp string) {
	event = identityEvent(event, template) // a specific text's variants vary under any event
	t, ok := splitTemplate(event, template)
	if !ok || !isDefault(fp, event, template) {
		return
	}
	m.st.Tick++
	for {
		wild, last := m.resolve(&t)
		fam := m.family(&t, wild, last, fp)
		canonical := fp
		if fam != nil {
			canonical = fam.Canonical
			fam.Members = addMember(fam.Members, fp)
		}
		grew := false
		for _, set := range t.places(wild) {
			i := set[0]
			key := t.signature(wild, set)
			s := m.st.Slots[key]
			if s == nil && !t.eligible[i] && wordCore(t.words[i]) != Mask {
				// Off an argument position a word is data only where
				// another variant of the message had it masked.
				continue
			}
			if s == nil {
				s = &MemorySlot{First: canonical}
				m.st.Slots[key] = s
			}
			s.Seen = m.st.Tick
			if s.Variable {
				continue
			}
			if v := slotValue(t.words[i]); !slices.Contains(s.Values, v) {
				s.Values = append(s.Values, v)
			}
			s.Members = addMember(s.Members, fp)
			if len(s.Values) >= MemoryThreshold || len(s.Values) >= MemoryThreshold-1 && slices.Contains(s.Values, maskValue) {
				wide := append(slices.Clone(wild), set...)
				sort.Ints(wide)
				f := m.family(&t, wide, s, fp)
				for _, member := range s.Members {
					f.Members = addMember(f.Members, member)
				}
				s.Variable, s.Values, s.Members = true, nil, nil
				m.st.grown = true
				grew = true
			}
		}
		if !grew {
			break
		}
	}
	m.forget()
}

// family returns t's family when positions wild vary (registering it, with
// the canonical fingerprint of the slot that made it, when it is new), or
// nil when none does.
func (m *Memory) family(t *memoryTemplate, wild []int, last *MemorySlot, fp string) *MemoryFamily {
	if len(wild) == 0 {
		return nil
	}
	pf := patternFingerprint(t.event, t.pattern(wild))
	f, ok := m.st.Families[pf]
	if !ok {
		f = &MemoryFamily{Canonical: last.First}
		m.st.Families[pf] = f
	}
	return f
}

// Family is what the memory knows of a template's defect.
type Family struct {
	Canonical string   // the first-seen fingerprint of its family, or its own
	Pattern   string   // the template with its varying words masked ("" when none vary)
	PatternFP string   // the pattern's fingerprint, the same on every deployment
	Members   []string // fingerprints of the variants seen, Canonical among them
}

// Canonical returns what the memory knows of template's defect (whose
// fingerprint is fp).
func (m *Memory) Canonical(event, template, fp string) Family {
	event = identityEvent(event, template)
	t, ok := splitTemplate(event, template)
	if !ok || !isDefault(fp, event, template) {
		return Family{Canonical: fp}
	}
	wild, last := m.resolve(&t)
	f := m.family(&t, wild, last, fp)
	if f == nil {
		return Family{Canonical: fp}
	}
	pattern := t.pattern(wild)
	return Family{Canonical: f.Canonical, Pattern: pattern, PatternFP: patternFingerprint(event, pattern), Members: f.Members}
}

// CanonicalOf is Canonical(event, template, fp).Canonical, remembered
// while the memory learns no new variable position when it is fp itself
// (a defect that waits under its family's name already).
func (m *Memory) CanonicalOf(event, template, fp string) string {
	if m.st.grown || m.st.canonical == nil {
		m.st.canonical, m.st.grown = map[string]bool{}, false
	}
	if m.st.canonical[fp] {
		return fp
	}
	c := m.Canonical(event, template, fp).Canonical
	if c == fp {
		m.st.canonical[fp] = true
	}
	return c
}

// prepositions introduce an argument: the word after one may be data.
var prepositions = map[string]bool{
	"for": true, "from": true, "by": true, "to": true, "of": true, "at": true, "on": true, "in": true,
	"with": true, "as": true, "into": true, "via": true, "onto": true, "against": true, "within": true,
}

// isQualifiedName: a dotted name of three parts or more, letters around
// each dot (com.apple.cloudd, org.acme.Worker).
func isQualifiedName(w string) bool {
	parts := strings.Split(strings.TrimRight(w, ":,;"), ".")
	if len(parts) < 3 {
		return false
	}
	for _, p := range parts {
		if p == "" || !isASCIILetter(p[0]) || !isASCIILetter(p[len(p)-1]) {
			return false
		}
	}
	return true
}

// forget drops the least recently seen slots that never varied once there
// are more than memoryMaxSlots, down to three quarters of it.
func (m *Memory) forget() {
	if len(m.st.Slots) <= memoryMaxSlots {
		return
	}
	type aged struct {
		key  string
		seen int64
	}
	var idle []aged
	for k, s := range m.st.Slots {
		if !s.Variable {
			idle = append(idle, aged{k, s.Seen})
		}
	}
	sort.Slice(idle, func(i, j int) bool {
		if idle[i].seen != idle[j].seen {
			return idle[i].seen < idle[j].seen
		}
		return idle[i].key < idle[j].key
	})
	for _, a := range idle {
		if len(m.st.Slots) <= memoryMaxSlots*3/4 {
			break
		}
		delete(m.st.Slots, a.key)
	}
}
