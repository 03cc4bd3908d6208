package stages

import (
	"context"
	"time"

	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/store"
)

// Outages: GitHub or the agent being down is never a defect's fault. A scan
// that finds one down stops using it (the post stage, the agent stage and
// the GitHub preflight mark what they could not do with a pipeline.Wait),
// its defects wait uncharged in the backlog, and the state remembers the
// outage so the next scans back off (NewOutageGate) until it has passed.

// NewOutageGate holds back, before any agent runs, the new defects of a
// scan that comes while an earlier scan's outage is still being backed off
// from: GitHub down holds every new defect (no agent runs for an issue that
// cannot be filed), the agent down holds those the agent would diagnose.
func NewOutageGate(st *store.Store, now func() time.Time) pipeline.Stage[pipeline.Dossier, pipeline.Dossier] {
	return pipeline.Map(func(_ context.Context, d pipeline.Dossier) (pipeline.Dossier, bool, error) {
		if d.Verdict != pipeline.VerdictNew || d.Wait != nil {
			return d, true, nil
		}
		var gh, agent store.Outage
		var ghDown, agentDown bool
		at := now()
		st.View(func(s *store.State) {
			gh, ghDown = s.Outages[pipeline.WaitGitHub]
			agent, agentDown = s.Outages[pipeline.WaitAgent]
		})
		switch {
		case ghDown && at.Before(gh.Next):
			d.Wait = &pipeline.Wait{For: pipeline.WaitGitHub, Reason: backoffReason(gh), Backoff: true}
		case agentDown && at.Before(agent.Next) && AgentWillRun(d):
			d.Wait = &pipeline.Wait{For: pipeline.WaitAgent, Reason: backoffReason(agent), Backoff: true}
		}
		return d, true, nil
	})
}

func backoffReason(o store.Outage) string {
	return o.Reason + " (down since " + o.Since.UTC().Format(time.RFC3339) + ", next try " + o.Next.UTC().Format(time.RFC3339) + ")"
}

// outageBackoff is how long scans leave a dependency alone after n scans
// in a row found it down: a minute, doubling, at most an hour.
func outageBackoff(n int) time.Duration {
	d := time.Minute << min(max(n-1, 0), 6)
	return min(d, time.Hour)
}

// noteOutages records, at a scan's end, the dependencies it found down
// (their backoff grows) and forgets those it used successfully.
func noteOutages(st *store.State, sum *Summary, now time.Time) {
	sum.mu.Lock()
	defer sum.mu.Unlock()
	for what, why := range sum.Waited {
		o, ok := st.Outages[what]
		if !ok {
			o.Since = now
		}
		o.Reason, o.Scans = why, o.Scans+1
		o.Next = now.Add(outageBackoff(o.Scans))
		st.Outages[what] = o
	}
	for what := range sum.worked {
		if _, waited := sum.Waited[what]; !waited {
			delete(st.Outages, what)
		}
	}
}
