// Package incident links a bare give-up (will_retry false, no error text)
// to the failure whose incident it ends, so it takes that failure's defect
// identity (Index, kept in the state between scans), and names the record
// fields that are identity rather than defect (IdentityFields), which the
// fingerprint stage masks and the links correlate on. The fingerprint
// stage calls it; it is not a stage.
package incident

import (
	"crypto/sha1"
	"encoding/hex"
	"slices"
	"strings"
	"time"

	"github.com/the-loop/the-loop-diagnose/logread"
	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/store"
)

// Incident linking: a give-up record without error text (will_retry false,
// attempts spent, nothing said about why) is the end of the incident whose
// failure caused it, so it takes that failure's defect identity instead of
// one of its own. The index of recent failures lives here; the choice is the
// pure chooseIncident.

// Window is how much earlier than its give-up a failure may be and
// still be the incident's: the-loop's retries of one delivery span minutes.
const Window = time.Hour

// Bounds of an Index: the failures it remembers (the oldest leave
// first, as do those older than Window before the newest), the
// failures remembered per correlation value, and the longest value used
// (longer ones are not identifiers the-loop writes).
const (
	MaxFailures         = 4096
	incidentPerValue    = 32
	incidentMaxValueLen = 256
)

// Keys are the fields that tie a give-up to its failure, most
// specific first: one webhook delivery, one agent session, one work item
// over its whole life. A tie on how many keys are shared goes to the
// candidate sharing the more specific one.
var Keys = []string{"delivery_id", "tmux_target", "work_item"}

// incidentAgree are fields a give-up and its failure never disagree on,
// though sharing them ties nothing: one agent (harness), one branch of the
// work item (two incidents on one work item are often on two branches: a
// fix branch and main). A disagreement means another incident; a field
// missing from either says nothing. The source is not one of them: the
// poller reports give-ups for dispatches whose failures the webhook logged.
var incidentAgree = []string{"harness", "branch"}

// incidentPrefer are fields a give-up prefers its failure to share, though
// a difference is no veto: the component that logged it (source). Each
// component's latest failure on a key is its own live end; one component's
// newer failure does not supersede another's incident on the same work
// item, and the give-up's own component's incident comes first.
var incidentPrefer = []string{"source"}

// incidentFields are the fields the index holds per failure after the
// correlation keys: incidentAgree's, then incidentPrefer's.
var incidentFields = append(append([]string(nil), incidentAgree...), incidentPrefer...)

// KeysWith is Keys followed by any other key the healing
// check correlates on (TriageConfig.CorrelationKeys), least specific: the
// keys are declared once, for both.
func KeysWith(correlation []string) []string {
	keys := append([]string(nil), Keys...)
	for _, k := range correlation {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// IsBareGiveUp reports whether c is a give-up that says nothing of its own
// cause: will_retry false and no error text.
func IsBareGiveUp(c pipeline.Candidate) bool {
	retry, ok := c.Bool("will_retry")
	return ok && !retry && strings.TrimSpace(c.Str("error")) == ""
}

// incidentIdentity is the defect identity a linked give-up takes; failures
// of one fingerprint share one.
type incidentIdentity struct {
	fingerprint, template string
	aliases               []string
	refs                  int
}

// incidentFailure is one remembered failure.
type incidentFailure struct {
	seq    uint64
	at     time.Time
	values []string // by key index, then incidentAgree's; "" when absent
	id     *incidentIdentity
	// ended: a give-up already linked to this failure's incident. An
	// incident ends once, so a second give-up prefers another incident.
	ended bool
}

// Index remembers recent failures by correlation value. It is not
// safe for concurrent use: the fingerprint stage is its one user, in log
// order. A watcher keeps one across scans, so a give-up links to a failure
// read by the previous scan; a cron run starts from the one the previous
// run left in the state (Export, Import).
type Index struct {
	keys        []string
	max         int
	ring        []incidentFailure // seq % max
	first, next uint64            // live seqs: [first, next)
	byValue     map[incidentValue][]uint64
	identities  map[string]*incidentIdentity
	newest      time.Time
	names       IdentityKeys // fieldNamed's answers per key
}

type incidentValue struct {
	key   int
	value string
}

// NewIndex indexes failures by keys (most specific first), holding
// at most max of them (MaxFailures when max <= 0).
func NewIndex(keys []string, max int) *Index {
	if max <= 0 {
		max = MaxFailures
	}
	return &Index{keys: keys, max: max, ring: make([]incidentFailure, max),
		byValue: map[incidentValue][]uint64{}, identities: map[string]*incidentIdentity{}, names: IdentityKeys{}}
}

// Len is how many failures the index holds.
func (x *Index) Len() int { return int(x.next - x.first) }

// valuesOf returns f's correlation values and agreement fields, and
// whether it has any correlation value.
func (x *Index) valuesOf(f pipeline.Fields) ([]string, bool) {
	vals := make([]string, len(x.keys)+len(incidentFields))
	any := false
	for i, k := range x.keys {
		if v, ok := logread.CorrelationValue(f.Get(k)); ok && len(v) <= incidentMaxValueLen {
			vals[i], any = valueDigest(v), true
		}
	}
	for i, k := range incidentFields {
		if v, ok := logread.CorrelationValue(x.fieldNamed(f, k)); ok && len(v) <= incidentMaxValueLen {
			vals[len(x.keys)+i] = valueDigest(v)
		}
	}
	return vals, any
}

// fieldNamed is the value of the field key, or, absent, of a field another
// logger names its own way ("git_branch" for branch: IdentityField).
func (x *Index) fieldNamed(f pipeline.Fields, key string) any {
	if v, ok := f.Lookup(key); ok {
		return v
	}
	for _, fl := range f {
		if name, ok := x.names.Field(fl.Key); ok && name == key {
			return fl.Value
		}
	}
	return nil
}

// valueDigest is how the index holds a correlation value: compared only
// for equality, so a digest does, and the state a cron run keeps the index
// in never holds a work item, branch or delivery id.
func valueDigest(v string) string {
	h := sha1.Sum([]byte(v))
	return hex.EncodeToString(h[:8])
}

// SaveTo keeps the index in the state for the next cron run: the failures
// within Window of the newest, oldest first, with the keys they are
// by.
func (x *Index) SaveTo(st *store.State) {
	var out []store.IncidentFailure
	for seq := x.first; seq < x.next; seq++ {
		f := x.ring[seq%uint64(x.max)]
		if f.at.Before(x.newest.Add(-Window)) {
			continue
		}
		out = append(out, store.IncidentFailure{At: f.at, Values: slices.Clone(f.values), Ended: f.ended,
			Fingerprint: f.id.fingerprint, Template: f.id.template, Aliases: f.id.aliases})
	}
	st.Incidents, st.IncidentKeys = out, append(slices.Clone(x.keys), incidentFields...)
}

// LoadFrom fills an empty index with what a previous run saved, when it
// was saved by the same keys (a changed correlation config starts afresh).
// A watcher's index, already filled, keeps its own.
func (x *Index) LoadFrom(st *store.State) {
	saved := slices.DeleteFunc(slices.Clone(st.IncidentKeys), func(k string) bool { return slices.Contains(incidentFields, k) })
	if x.Len() > 0 || !slices.Equal(saved, x.keys) {
		return
	}
	// Fields are matched by name: a state saved by a release that held
	// other agreement fields, or in another order, still loads.
	want := append(slices.Clone(x.keys), incidentFields...)
	pos := make([]int, len(want))
	for i, k := range want {
		pos[i] = slices.Index(st.IncidentKeys, k)
	}
	for _, f := range st.Incidents {
		if len(f.Values) != len(st.IncidentKeys) || f.At.IsZero() || f.Fingerprint == "" {
			continue
		}
		vals := make([]string, len(want))
		for i, p := range pos {
			if p >= 0 {
				vals[i] = f.Values[p]
			}
		}
		x.add(f.At, vals, f.Fingerprint, f.Template, f.Aliases)
		x.ring[(x.next-1)%uint64(x.max)].ended = f.Ended
	}
}

// Note remembers a failure with error text and the identity it was given.
// A failure without ts or correlation values can never be linked to.
func (x *Index) Note(o pipeline.Occurrence) {
	at := o.Time()
	vals, ok := x.valuesOf(o.Fields)
	if !ok || at.IsZero() {
		return
	}
	x.add(at, vals, o.Fingerprint, o.Template, o.Aliases)
}

func (x *Index) add(at time.Time, vals []string, fp, template string, aliases []string) {
	if at.After(x.newest) {
		x.newest = at
	}
	for x.first < x.next && (x.Len() >= x.max || x.ring[x.first%uint64(x.max)].at.Before(x.newest.Add(-Window))) {
		x.evictOldest()
	}
	id := x.identities[fp]
	if id == nil {
		id = &incidentIdentity{fingerprint: fp, template: template, aliases: aliases}
		x.identities[fp] = id
	}
	id.refs++
	seq := x.next
	x.next++
	x.ring[seq%uint64(x.max)] = incidentFailure{seq: seq, at: at, values: vals, id: id}
	for i, v := range vals[:len(x.keys)] {
		if v == "" {
			continue
		}
		k := incidentValue{i, v}
		list := append(x.byValue[k], seq)
		if len(list) > incidentPerValue {
			list = list[len(list)-incidentPerValue:]
		}
		x.byValue[k] = list
	}
}

func (x *Index) evictOldest() {
	seq := x.first
	f := &x.ring[seq%uint64(x.max)]
	for i, v := range f.values[:len(x.keys)] {
		if v == "" {
			continue
		}
		k := incidentValue{i, v}
		if list := x.byValue[k]; len(list) > 0 && list[0] == seq {
			if len(list) == 1 {
				delete(x.byValue, k)
			} else {
				x.byValue[k] = list[1:]
			}
		}
	}
	if f.id.refs--; f.id.refs == 0 {
		delete(x.identities, f.id.fingerprint)
	}
	*f = incidentFailure{}
	x.first++
}

// Link gives a bare give-up the identity of its incident's failure, if the
// index holds one; ok false leaves the give-up its own fingerprint.
func (x *Index) Link(c pipeline.Candidate) (fingerprint, template string, aliases []string, ok bool) {
	at := c.Time()
	vals, any := x.valuesOf(c.Fields)
	if !any || at.IsZero() {
		return "", "", nil, false
	}
	var cands []incidentFailure
	seen := map[uint64]bool{}
	for i, v := range vals[:len(x.keys)] {
		if v == "" {
			continue
		}
		for _, seq := range x.byValue[incidentValue{i, v}] {
			if seq >= x.first && !seen[seq] {
				seen[seq] = true
				cands = append(cands, x.ring[seq%uint64(x.max)])
			}
		}
	}
	best, found := chooseIncident(vals, len(x.keys), at, cands)
	if !found {
		return "", "", nil, false
	}
	id := cands[best].id
	// The incident has ended: its failures on the value that tied them
	// (the same defect, sharing the chosen failure's most specific key, not
	// on another branch) are not another give-up's to end.
	top := sharedTop(vals, len(x.keys), cands[best])
	for _, f := range cands {
		if f.id == id && top < len(x.keys) && f.values[top] == vals[top] && !disagrees(vals[:len(x.keys)+len(incidentAgree)], f) {
			x.ring[f.seq%uint64(x.max)].ended = true
		}
	}
	return id.fingerprint, id.template, id.aliases, true
}

// sharedTop is the most specific correlation key f shares with vals
// (nKeys when none).
func sharedTop(vals []string, nKeys int, f incidentFailure) int {
	for k := 0; k < nKeys; k++ {
		if vals[k] != "" && vals[k] == f.values[k] {
			return k
		}
	}
	return nKeys
}

// chooseIncident picks the failure a give-up ends, among candidates sharing
// at least one correlation value with it (values: nKeys correlation keys,
// most specific first, then incidentAgree's, then incidentPrefer's). A
// failure qualifies when it is not after the give-up, at most
// Window before it, and disagrees on no correlation or agreement
// field both carry (two deliveries of one work item are two incidents).
// The give-up's most specific key that some qualifying failure shares
// decides. On it, each component's latest failure (then the last noted) is
// its incident's live end — an older one of that component was superseded
// by it; a live end a give-up already ended is out. Of those left, the
// give-up's own component's comes first, then the latest. An ended or
// superseded incident is never joined: with none left, the give-up keeps
// its own identity.
func chooseIncident(vals []string, nKeys int, at time.Time, cands []incidentFailure) (int, bool) {
	src := nKeys + len(incidentAgree) // incidentPrefer's source
	later := func(f, g incidentFailure) bool { return f.at.After(g.at) || f.at.Equal(g.at) && f.seq > g.seq }
	for k := 0; k < nKeys; k++ {
		if vals[k] == "" {
			continue
		}
		var live []int // per component, its latest failure
		for i, f := range cands {
			if f.values[k] != vals[k] || f.at.After(at) || at.Sub(f.at) > Window || disagrees(vals[:src], f) {
				continue
			}
			j := slices.IndexFunc(live, func(l int) bool { return cands[l].values[src] == f.values[src] })
			switch {
			case j < 0:
				live = append(live, i)
			case later(f, cands[live[j]]):
				live[j] = i
			}
		}
		if len(live) == 0 {
			continue
		}
		best := -1
		for _, i := range live {
			f := cands[i]
			if f.ended {
				continue
			}
			own := vals[src] != "" && f.values[src] == vals[src]
			if best < 0 {
				best = i
				continue
			}
			bestOwn := vals[src] != "" && cands[best].values[src] == vals[src]
			if own && !bestOwn || own == bestOwn && later(f, cands[best]) {
				best = i
			}
		}
		return best, best >= 0
	}
	return -1, false
}

// disagrees: f and the give-up carry a different value for one of the
// fields of vals.
func disagrees(vals []string, f incidentFailure) bool {
	for k, v := range vals {
		if v != "" && f.values[k] != "" && v != f.values[k] {
			return true
		}
	}
	return false
}
