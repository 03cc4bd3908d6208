package stages

import (
	"context"
	"encoding/json"
	"sort"
	"time"

	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/store"
)

// DefaultSamples is how many records a group keeps (the newest): memory grows
// with the number of distinct fingerprints, never with the log.
const DefaultSamples = 20

// DedupConfig holds the policy knobs and the state snapshot dedup reads.
type DedupConfig struct {
	Store           *store.Store
	Now             func() time.Time
	MaxIssuesPerDay int
	MaxRetries      int
	Samples         int
	// SkipBacklog leaves defects deferred by earlier scans alone (a watcher
	// woken by new lines); they are retried on the interval instead.
	SkipBacklog bool
}

// NewDedup groups occurrences by fingerprint, then decides each group's
// verdict once the input is done (it is the pipeline's one barrier: a scan's
// groups are only complete at the end of its input).
func NewDedup(cfg DedupConfig) pipeline.Stage[pipeline.Occurrence, pipeline.Group] {
	if cfg.Samples <= 0 {
		cfg.Samples = DefaultSamples
	}
	return func(ctx context.Context, in <-chan pipeline.Occurrence, out chan<- pipeline.Group) error {
		groups := map[string]*pipeline.Group{}
		var order []string
		for o := range in {
			g, ok := groups[o.Fingerprint]
			if !ok {
				g = &pipeline.Group{Fingerprint: o.Fingerprint, Aliases: o.Aliases, Template: o.Template,
					Event: o.Str("event"), FirstLine: o.Line}
				groups[o.Fingerprint] = g
				order = append(order, o.Fingerprint)
			}
			AddOccurrence(g, o, cfg.Samples)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		var decided []pipeline.Group
		cfg.Store.View(func(st *store.State) {
			list := make([]pipeline.Group, 0, len(order))
			for _, fp := range order {
				list = append(list, *groups[fp])
			}
			decided = Decide(list, st, cfg.Now(), cfg.MaxIssuesPerDay, cfg.MaxRetries, !cfg.SkipBacklog)
		})
		for _, g := range decided {
			if err := pipeline.Send(ctx, out, g); err != nil {
				return err
			}
		}
		return nil
	}
}

// AddOccurrence folds one occurrence into its group, keeping the newest
// samples only.
func AddOccurrence(g *pipeline.Group, o pipeline.Occurrence, samples int) {
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
	if len(g.Samples) >= samples {
		copy(g.Samples, g.Samples[1:])
		g.Samples = g.Samples[:samples-1]
	}
	g.Samples = append(g.Samples, o)
}

// Window is the rolling period of the daily issue cap.
const Window = 24 * time.Hour

// Decide is the pure dedup/rate-limit policy. Groups already reported (under
// their fingerprint or an older version's alias) are known; abandoned ones are
// skipped; the rest are new, up to what the rolling 24 h cap leaves, and the
// excess is deferred — never dropped. Backlog groups deferred by an earlier
// scan and not seen in this one are brought back so the cap releases them.
// Candidates are interleaved round-robin across event types (oldest first
// within a type) so a flood of one kind cannot starve another.
func Decide(groups []pipeline.Group, st *store.State, now time.Time, maxPerDay, maxRetries int, backlog bool) []pipeline.Group {
	seen := map[string]bool{}
	for i := range groups {
		seen[groups[i].Fingerprint] = true
		if d, ok := st.Deferred[groups[i].Fingerprint]; ok {
			mergeDeferred(&groups[i], d)
		}
	}
	for _, fp := range store.Fingerprints(st.Deferred) {
		if backlog && !seen[fp] {
			groups = append(groups, backlogGroup(fp, st.Deferred[fp]))
		}
	}
	budget := maxPerDay - st.PostedSince(now.Add(-Window))
	var fresh []*pipeline.Group
	for i := range groups {
		g := &groups[i]
		g.Attempt = st.Attempts[g.Fingerprint]
		all := append([]string{g.Fingerprint}, g.Aliases...)
		if _, ok := st.IsReported(all...); ok {
			g.Verdict = pipeline.VerdictKnown
			continue
		}
		if d, ok := st.Dismissed[g.Fingerprint]; ok {
			g.Verdict, g.Reason = pipeline.VerdictSettled, "dismissed: "+d.Reason
			continue
		}
		if fp, ok := st.IsAbandoned(all...); ok {
			g.Verdict, g.Reason = pipeline.VerdictAbandoned, st.Abandoned[fp].Reason
			continue
		}
		if maxRetries > 0 && g.Attempt >= maxRetries {
			g.Verdict, g.Reason = pipeline.VerdictAbandoned, "retries exhausted"
			continue
		}
		fresh = append(fresh, g)
	}
	for i, g := range interleave(fresh) {
		if i < budget {
			g.Verdict = pipeline.VerdictNew
		} else {
			g.Verdict, g.Reason = pipeline.VerdictDeferred, "daily issue cap reached"
		}
	}
	return groups
}

// interleave orders groups round-robin across event types, each type's
// groups oldest first, types in order of their first appearance.
func interleave(groups []*pipeline.Group) []*pipeline.Group {
	byEvent := map[string][]*pipeline.Group{}
	var events []string
	for _, g := range groups {
		if _, ok := byEvent[g.Event]; !ok {
			events = append(events, g.Event)
		}
		byEvent[g.Event] = append(byEvent[g.Event], g)
	}
	for _, e := range events {
		list := byEvent[e]
		sort.SliceStable(list, func(i, j int) bool { return oldest(list[i], list[j]) })
	}
	out := make([]*pipeline.Group, 0, len(groups))
	for round := 0; len(out) < len(groups); round++ {
		for _, e := range events {
			if round < len(byEvent[e]) {
				out = append(out, byEvent[e][round])
			}
		}
	}
	return out
}

// oldest orders by first sighting (a group deferred earlier carries its
// first sighting from state), then backlog first, then by first line.
func oldest(a, b *pipeline.Group) bool {
	if !a.FirstSeen.Equal(b.FirstSeen) && !a.FirstSeen.IsZero() && !b.FirstSeen.IsZero() {
		return a.FirstSeen.Before(b.FirstSeen)
	}
	if a.Backlog != b.Backlog {
		return a.Backlog
	}
	return a.FirstLine < b.FirstLine
}

func mergeDeferred(g *pipeline.Group, d store.Deferred) {
	g.Count += d.Count
	if !d.Since.IsZero() && (g.FirstSeen.IsZero() || d.Since.Before(g.FirstSeen)) {
		g.FirstSeen = d.Since
	}
	g.Finding = decodeFinding(d.Finding)
}

func backlogGroup(fp string, d store.Deferred) pipeline.Group {
	return pipeline.Group{
		Fingerprint: fp, Event: d.Event, Template: d.Template, Count: d.Count,
		FirstSeen: d.Since, LastSeen: d.LastSeen, Backlog: true,
		CachedDossier: d.Dossier, Finding: decodeFinding(d.Finding),
	}
}

func decodeFinding(raw json.RawMessage) *pipeline.Answer {
	if len(raw) == 0 {
		return nil
	}
	var a pipeline.Answer
	if json.Unmarshal(raw, &a) != nil || a.Title == "" {
		return nil
	}
	return &a
}
