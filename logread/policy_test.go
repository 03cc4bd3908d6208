package logread

import (
	"encoding/json"
	"testing"

	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// the-loop's will_retry:false records as its poller and dispatcher write
// them: the give-ups are failures, the settlement (issue-270) is not.
func TestAGiveUpIsAFailureOnlyWhenItSaysSomethingWentWrong(t *testing.T) {
	for _, c := range []struct {
		line string
		want string
	}{
		// poller.py _settle_comment: emit("poll.comment_settled", ..., will_retry=False) at the default info.
		{`{"event":"poll.comment_settled","level":"info","source":"poll","work_item":"github:o/r#1","comment_id":5,"actor":"a","outcome":"session-paused","will_retry":false}`, ""},
		{`{"event":"poll.comment_settled","level":"debug","will_retry":false,"error":""}`, ""},
		{`{"event":"poll.comment_settled","level":"info","will_retry":false,"error":null}`, ""},
		// The give-ups: at error or warning, or with error text.
		{`{"event":"poll.comment_failed","level":"error","attempts":3,"will_retry":false}`, ReasonError},
		{`{"event":"poll.spawn_failed","level":"error","attempts":3,"will_retry":false}`, ReasonError},
		{`{"event":"session.spawn_failed","level":"warning","error":"x","will_retry":false}`, ReasonGiveUp},
		{`{"event":"agent.gave_up","level":"warning","will_retry":false}`, ReasonGiveUp},
		{`{"event":"worker.gave_up","level":"info","error":"boom","will_retry":false}`, ReasonGiveUp},
		{`{"event":"worker.gave_up","level":"info","error":{"code":1},"will_retry":false}`, ReasonGiveUp},
		// No level: nothing says it is benign.
		{`{"event":"y","will_retry":false}`, ReasonGiveUp},
		{`{"event":"y","level":"notice","will_retry":false}`, ReasonGiveUp},
	} {
		var f map[string]any
		if err := json.Unmarshal([]byte(c.line), &f); err != nil {
			t.Fatal(err)
		}
		if reason, _ := defaultPolicy.Select(pipeline.Record{Fields: pipeline.FieldsOf(f)}); reason != c.want {
			t.Errorf("%s: reason %q, want %q", c.line, reason, c.want)
		}
	}
}
