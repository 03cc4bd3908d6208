package stages

import (
	"time"

	"github.com/the-loop/the-loop-diagnose/store"
)

// Outages: GitHub or the agent being down is never a defect's fault. A scan
// that finds one down stops using it (the post stage, the agent stage and
// the GitHub preflight mark what they could not do with a pipeline.Wait),
// its defects wait uncharged in the backlog, and the state remembers the
// outage for status until a scan uses it successfully. Each scan of an
// outage costs one probe (the preflight, or one agent run); a watcher
// backs off between such scans, a cron job's scans are spaced already.

// noteOutages records, at a scan's end, the dependencies it found down and
// forgets those it used successfully.
func noteOutages(st *store.State, sum *Summary, now time.Time) {
	sum.mu.Lock()
	defer sum.mu.Unlock()
	for what, why := range sum.Waited {
		o, ok := st.Outages[what]
		if !ok {
			o.Since = now
		}
		o.Reason, o.Scans, o.Last = why, o.Scans+1, now
		st.Outages[what] = o
	}
	for what := range sum.worked {
		if _, waited := sum.Waited[what]; !waited {
			delete(st.Outages, what)
		}
	}
}
