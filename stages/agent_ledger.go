package stages

import (
	"context"
	"encoding/json"
	"time"

	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/store"
)

// A diagnosis is paid for once, and a budget is never overspent:
//
//   - ChargeAgentRun, the agent stage's BeforeRun, writes each run to the
//     state (the daily diagnosis budget's record) right before it starts,
//     so no crash, kill or abort lets the budget spend more than its cap.
//   - NewReuseAnswers, before the agent stage, gives a defect whose answer
//     is already kept for the same harness, model and prompt version that
//     answer instead of a run.
//   - NewKeepAnswers, right after it, writes each answer to the state at
//     once, so a scan that dies before its end (or whose post fails) never
//     pays for the same diagnosis again.
//
// Persist settles each charge: a run that did not happen (the agent was
// down) is refunded; the answer is forgotten once the defect is filed.

// AgentPromptVersion names the prompt's contract: a kept answer is reused
// only for the same one.
const AgentPromptVersion = "1"

// AgentAnswerKey is what a kept answer must match to be reused.
func AgentAnswerKey(harness, model string) string {
	return harness + "|" + model + "|prompt-" + AgentPromptVersion
}

// NewReuseAnswers hands a defect whose answer is already kept for the same
// harness, model and prompt version that answer instead of a run.
func NewReuseAnswers(st *store.Store, key string) pipeline.Stage[pipeline.Dossier, pipeline.Dossier] {
	return pipeline.Map(func(_ context.Context, d pipeline.Dossier) (pipeline.Dossier, bool, error) {
		return reuseAnswer(st, key, d), true, nil
	})
}

// reuseAnswer gives d the answer the state keeps for it under key, when the
// agent would otherwise run.
func reuseAnswer(st *store.Store, key string, d pipeline.Dossier) pipeline.Dossier {
	if !AgentWillRun(d) {
		return d
	}
	var kept store.KeptAnswer
	var ok bool
	st.View(func(s *store.State) { kept, ok = s.Answers[d.Fingerprint] })
	if ok && kept.Key == key {
		var a pipeline.Answer
		if json.Unmarshal(kept.Answer, &a) == nil {
			d.Group.Finding = &a
		}
	}
	return d
}

// ChargeAgentRun returns the agent stage's BeforeRun: the run is written to
// the daily budget's record, durably, before the agent starts.
func ChargeAgentRun(st *store.Store, now func() time.Time) func(pipeline.Dossier) error {
	return func(d pipeline.Dossier) error {
		at := now()
		return st.Update(func(s *store.State) error {
			s.Diagnosed = append(s.Diagnosed, at)
			s.Charged[d.Fingerprint] = at
			return nil
		})
	}
}

// NewKeepAnswers keeps each new answer in the state at once.
func NewKeepAnswers(st *store.Store, now func() time.Time, key string) pipeline.Stage[pipeline.Finding, pipeline.Finding] {
	return pipeline.Map(func(_ context.Context, f pipeline.Finding) (pipeline.Finding, bool, error) {
		if !f.AgentRan || f.Answer == nil || f.Failure != "" {
			return f, true, nil
		}
		b, err := json.Marshal(f.Answer)
		if err != nil {
			return f, true, err
		}
		err = st.Update(func(s *store.State) error {
			s.Answers[f.Fingerprint] = store.KeptAnswer{Key: key, Answer: b, At: now()}
			return nil
		})
		return f, true, err
	})
}

// settleCharge records an outcome's agent run in the daily budget: a run
// charged before it started stays charged; one that did not happen (the
// agent was down) is refunded; a run nobody charged (a caller without
// ChargeAgentRun) is counted now.
func settleCharge(st *store.State, o pipeline.Outcome, now time.Time) {
	at, charged := st.Charged[o.Fingerprint]
	delete(st.Charged, o.Fingerprint)
	switch {
	case charged && !o.AgentRan && o.Wait != nil:
		for i, t := range st.Diagnosed {
			if t.Equal(at) {
				st.Diagnosed = append(st.Diagnosed[:i], st.Diagnosed[i+1:]...)
				break
			}
		}
	case !charged && o.AgentRan:
		st.Diagnosed = append(st.Diagnosed, now)
	}
}
