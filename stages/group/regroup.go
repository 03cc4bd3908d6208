package group

import (
	"slices"

	"github.com/the-loop/the-loop-diagnose/fingerprint"
	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/store"
)

// Regroup applies the template memory (fingerprint.Memory, persisted in the
// state) to a scan's groups, which arrive keyed by fingerprint in order of
// first appearance: it learns each group's template, then merges the groups
// that one family names into the family's canonical (first-seen)
// fingerprint, with the others and the family's pattern fingerprint as
// aliases. State kept under a merged fingerprint (a deferral, attempts, a
// settlement) moves to the canonical one, so a defect is never pending
// twice. It returns the new order; members maps each remaining fingerprint
// to the fingerprints merged into it (itself included).
func Regroup(st *store.State, groups map[string]*pipeline.Group, order []string) (newOrder []string, members map[string][]string) {
	if st.TemplateMemory == nil {
		st.TemplateMemory = &fingerprint.MemoryState{}
	}
	mem := fingerprint.NewMemory(st.TemplateMemory)
	for _, fp := range order {
		g := groups[fp]
		mem.Learn(g.Event, g.Template, fp)
	}
	members = map[string][]string{}
	merged := map[string]*pipeline.Group{}
	for _, fp := range order {
		g := groups[fp]
		fam := mem.Canonical(g.Event, g.Template, fp)
		canonical := fam.Canonical
		if fam.Pattern != "" {
			// The pattern, then every variant seen: any may have an issue.
			g.Aliases = AddAliases(g.Aliases, []string{fam.PatternFP})
			g.Aliases = AddAliases(g.Aliases, slices.DeleteFunc(slices.Clone(fam.Members), func(m string) bool { return m == canonical }))
			g.Template = fam.Pattern
		}
		if canonical != fp {
			g.Aliases = AddAliases(g.Aliases, []string{fp})
		}
		// What an older version or another variant left pending now waits
		// under the one name.
		for _, a := range append([]string{fp}, g.Aliases...) {
			if a != canonical {
				moveState(st, a, canonical)
			}
		}
		members[canonical] = append(members[canonical], fp)
		if into, ok := merged[canonical]; ok {
			mergeGroup(into, g)
			continue
		}
		// The first of its family in this scan stands for it.
		g.Fingerprint = canonical
		merged[canonical] = g
		newOrder = append(newOrder, canonical)
	}
	clear(groups)
	for fp, g := range merged {
		groups[fp] = g
	}
	// A defect deferred by an earlier scan and not seen in this one may have
	// joined a family since: it waits under the family's name.
	// (A watcher asks this of its whole backlog every scan: CanonicalOf
	// remembers the answers until the memory learns a new family.)
	for _, fp := range store.Fingerprints(st.Deferred) {
		d := st.Deferred[fp]
		if canonical := mem.CanonicalOf(d.Event, d.Template, fp); canonical != fp {
			moveState(st, fp, canonical)
		}
	}
	return newOrder, members
}

// mergeGroup folds the occurrences of g into into (both with their samples
// in order, oldest first), keeping the newest samples.
func mergeGroup(into, g *pipeline.Group) {
	into.Count += g.Count
	into.Retries += g.Retries
	if !g.FirstSeen.IsZero() && (into.FirstSeen.IsZero() || g.FirstSeen.Before(into.FirstSeen)) {
		into.FirstSeen = g.FirstSeen
	}
	if g.LastSeen.After(into.LastSeen) {
		into.LastSeen = g.LastSeen
	}
	into.FirstLine = min(into.FirstLine, g.FirstLine)
	into.LastLine = max(into.LastLine, g.LastLine)
	into.Aliases = AddAliases(into.Aliases, g.Aliases)
	MergeTally(&into.Tally, g.Tally)
	keep := max(len(into.Samples), len(g.Samples))
	samples := append(slices.Clone(into.Samples), g.Samples...)
	slices.SortStableFunc(samples, func(a, b pipeline.Occurrence) int { return int(a.Line - b.Line) })
	if len(samples) > keep {
		samples = samples[len(samples)-keep:]
	}
	into.Samples = samples
}

// moveState moves what the state keeps while a defect is pending from one
// fingerprint to the one that now names its defect. What records a past
// decision (reported, issues, abandoned, dismissed) stays where it is: it
// is found through the group's aliases.
func moveState(st *store.State, from, to string) {
	if d, ok := st.Deferred[from]; ok {
		if have, ok := st.Deferred[to]; ok {
			have.Count += d.Count
			if d.Since.Before(have.Since) {
				have.Since = d.Since
			}
			if d.LastSeen.After(have.LastSeen) {
				have.LastSeen = d.LastSeen
			}
			if !d.Waited.IsZero() && (have.Waited.IsZero() || d.Waited.Before(have.Waited)) {
				have.Waited = d.Waited
			}
			if len(have.Finding) == 0 {
				have.Finding = d.Finding
			}
			d = have
		}
		st.Deferred[to] = d
		delete(st.Deferred, from)
	}
	if n, ok := st.Attempts[from]; ok {
		st.Attempts[to] = max(st.Attempts[to], n)
		delete(st.Attempts, from)
	}
	if f, ok := st.Failures[from]; ok {
		if _, have := st.Failures[to]; !have {
			st.Failures[to] = f
		}
		delete(st.Failures, from)
	}
	if s, ok := st.Settled[from]; ok {
		if _, have := st.Settled[to]; !have {
			st.Settled[to] = s
		}
		delete(st.Settled, from)
	}
	if h, ok := st.Heals[from]; ok {
		st.Heals[to] = append(st.Heals[to], h...)
		delete(st.Heals, from)
	}
	if i, ok := st.Intents[from]; ok {
		if _, have := st.Intents[to]; !have {
			st.Intents[to] = i
		}
		delete(st.Intents, from)
	}
}

// ResolveFamilies gives each occurrence its family's fingerprint and
// pattern after the template memory in st has learned all of them, as the
// dedup stage's Regroup does for groups: replay's view of the same
// decision.
func ResolveFamilies(st *store.State, occurrences []pipeline.Occurrence) []pipeline.Occurrence {
	groups := map[string]*pipeline.Group{}
	var order []string
	for _, o := range occurrences {
		if _, ok := groups[o.Fingerprint]; !ok {
			groups[o.Fingerprint] = &pipeline.Group{Fingerprint: o.Fingerprint, Event: o.Str("event"), Template: o.Template}
			order = append(order, o.Fingerprint)
		}
	}
	_, members := Regroup(st, groups, order)
	family := map[string]*pipeline.Group{}
	for canonical, fps := range members {
		for _, fp := range fps {
			family[fp] = groups[canonical]
		}
	}
	out := make([]pipeline.Occurrence, len(occurrences))
	for i, o := range occurrences {
		if g := family[o.Fingerprint]; g != nil {
			o.Fingerprint, o.Template = g.Fingerprint, g.Template
		}
		out[i] = o
	}
	return out
}
