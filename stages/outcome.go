package stages

import "github.com/the-loop/the-loop-diagnose/pipeline"

// OutcomeWithoutPost maps a report that needs no posting to its outcome. It returns
// ok=false for a report that must be posted (a new defect with a composed
// issue). Post and print share it, so both sinks record every verdict alike.
func OutcomeWithoutPost(r pipeline.Report) (o pipeline.Outcome, ok bool) {
	o = pipeline.Outcome{Report: r}
	if r.Wait != nil && r.Verdict == pipeline.VerdictNew {
		// An outage or the setup held it back: later, uncharged.
		o.Status, o.Reason = pipeline.StatusDeferred, r.Wait.String()
		return o, true
	}
	switch r.Verdict {
	case pipeline.VerdictKnown:
		o.Status = pipeline.StatusKnown
	case pipeline.VerdictDeferred:
		o.Status = pipeline.StatusDeferred
	case pipeline.VerdictAbandoned:
		o.Status = pipeline.StatusSkipped
	case pipeline.VerdictSettled:
		o.Status = pipeline.StatusSettled
	case pipeline.VerdictNew:
		if r.Failure != "" {
			o.Status, o.Error = pipeline.StatusFailed, r.Failure
			return o, true
		}
		if r.Body == "" {
			o.Status, o.Error = pipeline.StatusFailed, "no report was composed"
			return o, true
		}
		return o, false
	default:
		o.Status, o.Error = pipeline.StatusFailed, "unknown verdict "+string(r.Verdict)
	}
	return o, true
}
