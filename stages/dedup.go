package stages

import (
	"context"
	"encoding/json"
	"sort"
	"sync/atomic"
	"time"

	"github.com/the-loop/the-loop-diagnose/logread"
	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/stages/budget"
	"github.com/the-loop/the-loop-diagnose/stages/group"
	"github.com/the-loop/the-loop-diagnose/store"
)

// GroupSamples is how many records a group keeps (the newest): memory grows
// with the number of distinct fingerprints, never with the log. A bound of
// the stage, not a setting (no config key sets it).
const GroupSamples = 20

// Policy is what dedup decides with: the diagnosis budgets (budget.Limits
// has their meaning) and the mechanical triage checks. (Abandoning is
// persist's: RetriesExhausted.)
type Policy struct {
	MaxDiagnosesPerScan int
	MaxDiagnosesPerDay  int
	MaxAgentCostPerDay  float64 // USD; 0 means no cap
	// Backlog brings back defects deferred by earlier scans; a watcher woken
	// by new lines leaves them for the interval scan.
	Backlog bool
	Triage  TriageConfig
}

// limits are the diagnosis budgets among the caps (budget.Limits).
func (p Policy) limits() budget.Limits {
	return budget.Limits{MaxDiagnosesPerScan: p.MaxDiagnosesPerScan, MaxDiagnosesPerDay: p.MaxDiagnosesPerDay,
		MaxAgentCostPerDay: p.MaxAgentCostPerDay}
}

// DedupConfig configures the dedup stage.
type DedupConfig struct {
	Store  *store.Store
	Now    func() time.Time
	Policy Policy
	// Candidates, when set, counts the failure occurrences dedup receives
	// (the scan's candidates), here rather than in a stage of its own.
	Candidates *atomic.Int64
	// Format is the log's (nil: the-loop's): its ids correlate heals too.
	Format *logread.Format
}

// NewDedup groups occurrences by fingerprint, then decides each group's
// verdict once the input is done (it is the pipeline's one barrier: a scan's
// groups are only complete at the end of its input). Success records passed
// along by the filter feed the healing check here, in log order.
func NewDedup(cfg DedupConfig) pipeline.Stage[pipeline.Occurrence, pipeline.Group] {
	return func(ctx context.Context, in <-chan pipeline.Occurrence, out chan<- pipeline.Group) error {
		groups := map[string]*pipeline.Group{}
		var order []string
		heals := logread.NewHealing(cfg.Policy.Triage.Policy, cfg.Format)
		for o := range in {
			if o.Reason == ReasonSuccess {
				heals.Success(o.Record)
				continue
			}
			heals.Failure(o.Record, o.Fingerprint)
			if cfg.Candidates != nil {
				cfg.Candidates.Add(1)
			}
			g, ok := groups[o.Fingerprint]
			if !ok {
				g = &pipeline.Group{Fingerprint: o.Fingerprint, Aliases: o.Aliases, Template: o.Template,
					Event: o.Str("event"), FirstLine: o.Line}
				groups[o.Fingerprint] = g
				order = append(order, o.Fingerprint)
			}
			group.Add(g, o, GroupSamples)
			g.Aliases = group.AddAliases(g.Aliases, o.Aliases)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		var decided []pipeline.Group
		// Mutate: the template memory learns from every scan, and what the
		// state keeps under a merged fingerprint moves to its family's; the
		// scan's final write makes it durable (a crash relearns it).
		cfg.Store.Mutate(func(st *store.State) {
			for _, fp := range order {
				group.OrderSamples(groups[fp], GroupSamples)
			}
			order, members := group.Regroup(st, groups, order)
			list := make([]pipeline.Group, 0, len(order))
			for _, fp := range order {
				g := groups[fp]
				for _, m := range members[fp] {
					g.Healed += heals.Healed(m)
				}
				list = append(list, *g)
			}
			decided = Decide(list, st, cfg.Now(), cfg.Policy)
		})
		for _, g := range decided {
			if err := pipeline.Send(ctx, out, g); err != nil {
				return err
			}
		}
		return nil
	}
}

// Decide is the pure dedup and triage policy. Groups already reported
// (under their fingerprint or an older version's alias) are known; dismissed,
// abandoned and machine-settled ones stop here; the rest are new, up to the
// diagnosis budget, and the excess is deferred — never dropped. Backlog
// groups deferred by an earlier scan come back so a budget or cap can release
// them. Candidates are interleaved round-robin across event types (within a
// type, the most occurrences and the most recent first: what a maintainer
// would want filed first) so a flood of one kind cannot starve another.
func Decide(groups []pipeline.Group, st *store.State, now time.Time, p Policy) []pipeline.Group {
	seen := map[string]bool{}
	for i := range groups {
		seen[groups[i].Fingerprint] = true
		if d, ok := st.Deferred[groups[i].Fingerprint]; ok {
			mergeDeferred(&groups[i], d)
		}
	}
	for _, fp := range store.Fingerprints(st.Deferred) {
		if p.Backlog && !seen[fp] {
			groups = append(groups, backlogGroup(fp, st.Deferred[fp]))
		}
	}
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
			g.Verdict, g.Reason = pipeline.VerdictSettled, "dismissed by a maintainer: "+d.Reason
			continue
		}
		if fp, ok := st.IsAbandoned(all...); ok {
			g.Verdict, g.Reason = pipeline.VerdictAbandoned, st.Abandoned[fp].Reason
			continue
		}
		prev, active := st.Settled[g.Fingerprint]
		active = active && now.Before(prev.Until)
		// The mechanical checks are cheap: they run every scan, so new
		// evidence (a healed failure turning flaky) reopens a settlement.
		if s := Triage(g, st, now, p.Triage); s != nil {
			g.Verdict, g.Reason, g.Settle = pipeline.VerdictSettled, s.Reason, s
			continue
		}
		if active && g.Reason == "" && AgentSettledEarlier(prev) {
			// Settled on an agent's verdict: not re-diagnosed until it expires.
			g.Verdict, g.Reason = pipeline.VerdictSettled, "settled earlier: "+prev.Reason
			continue
		}
		fresh = append(fresh, g)
	}
	left, why := p.limits().Usage(st, now).DiagnosesLeft()
	fresh = interleave(fresh)
	for _, g := range fresh {
		switch {
		case g.Finding != nil: // diagnosed by an earlier scan: no agent run needed
			g.Verdict = pipeline.VerdictNew
		case left > 0:
			left--
			g.Verdict = pipeline.VerdictNew
		default:
			g.Verdict, g.Reason = pipeline.VerdictDeferred, why
		}
	}
	// Emit in priority order: the issue cap after diagnosis takes them first come.
	out := make([]pipeline.Group, 0, len(groups))
	for i := range groups {
		if groups[i].Verdict != pipeline.VerdictNew && groups[i].Verdict != pipeline.VerdictDeferred {
			out = append(out, groups[i])
		}
	}
	for _, g := range fresh {
		out = append(out, *g)
	}
	return out
}

// interleave orders groups round-robin across event types, each type's
// groups by priority, types in order of their first appearance.
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
		sort.SliceStable(list, func(i, j int) bool { return first(list[i], list[j]) })
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

// first orders by occurrences (a group deferred earlier counts those kept
// in state), then by last sighting, newest first, then backlog first, then
// by first line.
func first(a, b *pipeline.Group) bool {
	if a.Count != b.Count {
		return a.Count > b.Count
	}
	if !a.LastSeen.Equal(b.LastSeen) && !a.LastSeen.IsZero() && !b.LastSeen.IsZero() {
		return a.LastSeen.After(b.LastSeen)
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
	if d.LastSeen.After(g.LastSeen) {
		g.LastSeen = d.LastSeen
	}
	g.Finding = decodeFinding(d.Finding)
	g.DossierFile, g.DossierSaved = d.DossierFile, d.DossierSaved
}

func backlogGroup(fp string, d store.Deferred) pipeline.Group {
	return pipeline.Group{
		Fingerprint: fp, Event: d.Event, Template: d.Template, Count: d.Count,
		FirstSeen: d.Since, LastSeen: d.LastSeen, Backlog: true,
		CachedDossier: d.Dossier, DossierFile: d.DossierFile, DossierSaved: d.DossierSaved, Finding: decodeFinding(d.Finding),
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
