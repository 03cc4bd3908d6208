package stages

import (
	"context"
	"strings"

	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// Candidate reasons.
const (
	ReasonError  = "level:error"
	ReasonGiveUp = "give-up" // will_retry: false — the-loop stopped retrying
)

// SelectCandidate is the candidate policy, the-loop's is_candidate
// (selfdiagnosis.py) with one refinement:
//
//	if event.startswith("diagnosis."): return False
//	if record.get("level") == "error": return True
//	return record.get("will_retry") is False
//
// Never the tool's own diagnosis.* events, which it appends to the very log
// it reads. Level "error" always. A terminal give-up (will_retry false) when
// it reports a failure: the-loop also writes will_retry false on a decision
// it made, not a failure — poll.comment_settled, a comment "resolved because
// the dispatcher is FINISHED with its delivery" (eventlog.py; poller.py: "A
// settlement is a decision", never re-armed). Its give-ups say they failed
// (poll.spawn_failed, poll.comment_failed, dispatch.dropped at error,
// session.spawn_failed at warning) and its settlements do not: logged at
// info, with no error text. So a give-up counts unless it is below warning
// and carries no error: a record that did not say anything went wrong is
// not a failure, whatever event name carries it. A record with no level at
// all is kept (nothing says it is benign).
func SelectCandidate(r pipeline.Record) (reason string, ok bool) {
	if strings.HasPrefix(r.Str("event"), "diagnosis.") {
		return "", false
	}
	level := r.Str("level")
	if level == "error" {
		return ReasonError, true
	}
	if retry, present := r.Bool("will_retry"); present && !retry && !benign(level, r) {
		return ReasonGiveUp, true
	}
	return "", false
}

// benign: logged below warning (the-loop's levels: debug, info, warning,
// error) and without error text — the-loop recording an outcome it chose.
func benign(level string, r pipeline.Record) bool {
	if level != "debug" && level != "info" {
		return false
	}
	v, has := r.Fields.Lookup("error")
	if !has || v == nil {
		return true
	}
	s, isText := v.(string)
	return isText && strings.TrimSpace(s) == ""
}

// NewFilter is the filter stage. Besides candidates it passes along the
// success events the healing check correlates (Reason == ReasonSuccess);
// a nil triage passes candidates only.
func NewFilter(triage *TriageConfig) pipeline.Stage[pipeline.Record, pipeline.Candidate] {
	return pipeline.Map(func(_ context.Context, r pipeline.Record) (pipeline.Candidate, bool, error) {
		if reason, ok := SelectCandidate(r); ok {
			return pipeline.Candidate{Record: r, Reason: reason}, true, nil
		}
		if triage != nil && triage.IsSuccess(r) {
			return pipeline.Candidate{Record: r, Reason: ReasonSuccess}, true, nil
		}
		return pipeline.Candidate{}, false, nil
	})
}
