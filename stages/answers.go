package stages

import (
	"context"
	"encoding/json"
	"time"

	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/store"
)

// A diagnosis is paid for once (the charge of each run and its refund are
// the budget's: budget.ChargeRun, budget.Account):
//
//   - NewReuseAnswers, before the agent stage, gives a defect whose answer
//     is already kept for the same harness, model and prompt version that
//     answer instead of a run.
//   - NewKeepAnswers, right after it, writes each answer to the state at
//     once, so a scan that dies before its end (or whose post fails) never
//     pays for the same diagnosis again.
//
// The answer is forgotten once the defect is filed.

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
