// Package group is the arithmetic of a defect's group, apart from the
// dedup stage that drives it: folding an occurrence in (Add: counts, first
// and last seen, a ring of the newest samples, aliases), tallying every
// occurrence's field values within bounds (TallyRecord, MergeTally), and
// merging the groups one template family names into one (Regroup,
// ResolveFamilies), with the state kept under a merged fingerprint moved
// to the canonical one. Dedup, dossier, compose and replay call it.
package group

import (
	"slices"

	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// Add folds one occurrence into its group, keeping the newest
// samples only.
func Add(g *pipeline.Group, o pipeline.Occurrence, samples int) {
	g.Count++
	if retry, ok := o.Bool("will_retry"); ok && retry {
		g.Retries++
	}
	if t := o.Time(); !t.IsZero() {
		if g.FirstSeen.IsZero() || t.Before(g.FirstSeen) {
			g.FirstSeen = t
		}
		if t.After(g.LastSeen) {
			g.LastSeen = t
		}
	}
	g.LastLine = o.Line
	TallyRecord(&g.Tally, o.Record)
	// The samples are a ring of the newest: once full, occurrence number
	// Count-1 overwrites the oldest, in slot (Count-1) % samples, and
	// OrderSamples puts the ring back in order. A window that grew to twice
	// the size and was cut back held up to twice the records, the largest
	// share of a scan's live heap; and fresh heap is costly (page faults).
	if len(g.Samples) < samples {
		g.Samples = append(g.Samples, o)
		return
	}
	g.Samples[(g.Count-1)%samples] = o
}

// OrderSamples puts a complete group's ring of samples (Add) in
// order, oldest first.
func OrderSamples(g *pipeline.Group, samples int) {
	if len(g.Samples) < samples || g.Count <= samples {
		return
	}
	oldest := g.Count % samples
	slices.Reverse(g.Samples[:oldest])
	slices.Reverse(g.Samples[oldest:])
	slices.Reverse(g.Samples)
}

// maxAliases bounds the older-version fingerprints kept per group.
const maxAliases = 32

// AddAliases unions an occurrence's aliases into its group's: the-loop's
// normalizer split one defect many ways, and its state may hold any of them.
func AddAliases(have, more []string) []string {
	for _, a := range more {
		if len(have) < maxAliases && !slices.Contains(have, a) {
			have = append(have, a)
		}
	}
	return have
}
