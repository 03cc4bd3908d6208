package stages

import (
	"context"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	openaifake "github.com/the-loop/the-loop-diagnose/fakes/openai"
	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/redact"
	"github.com/the-loop/the-loop-diagnose/stages/agent"
)

// No stage test runs an agent's process: the harnesses' own tests
// (stages/agent) do, with the fake agent CLI and the supervisor.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// go-github (v66) reads an error response's body and swaps in a
		// copy (CheckResponse), so the body http.Client gave it is never
		// closed: the client's timer goroutine (http.Client.Timeout,
		// ghRequestTimeout) then lives until that timeout, 60 s, and ends.
		// The library's, not ours: TestCheckGitHubSetup's 4xx answers.
		goleak.IgnoreTopFunction("net/http.setRequestCancel.func4"))
}

func agentTestDossier(fingerprint string) pipeline.Dossier {
	return pipeline.Dossier{
		Group:    pipeline.Group{Fingerprint: fingerprint, Event: "worker.crash", Count: 1, Verdict: pipeline.VerdictNew},
		Markdown: "d",
	}
}

// agentAnswers is a runner answering each dossier with its fingerprint as
// the title, counting its runs.
func agentAnswers(runs *atomic.Int32) agent.RunnerFunc {
	return func(_ context.Context, d pipeline.Dossier) (pipeline.Finding, error) {
		runs.Add(1)
		return pipeline.Finding{Dossier: d, Answer: &pipeline.Answer{Title: d.Fingerprint, Summary: "ok"}}, nil
	}
}

func agentCollect(t *testing.T, st pipeline.Stage[pipeline.Dossier, pipeline.Finding], items ...pipeline.Dossier) []pipeline.Finding {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, err := pipeline.Collect(ctx, st, items...)
	if err != nil {
		t.Fatalf("stage returned %v; agent problems must be findings, not errors", err)
	}
	if len(got) != len(items) {
		t.Fatalf("got %d findings for %d dossiers", len(got), len(items))
	}
	return got
}

func TestAgentPassesThroughGroupsThatAreNotNew(t *testing.T) {
	var items []pipeline.Dossier
	for _, v := range []pipeline.Verdict{pipeline.VerdictKnown, pipeline.VerdictAbandoned, pipeline.VerdictDeferred, pipeline.VerdictSettled} {
		d := agentTestDossier("fp-" + string(v))
		d.Verdict = v
		items = append(items, d)
	}
	var runs atomic.Int32
	got := agentCollect(t, agentStage(AgentConfig{Parallel: 1}, agentAnswers(&runs)), items...)
	for i, f := range got {
		if !reflect.DeepEqual(f, pipeline.Finding{Dossier: items[i]}) {
			t.Errorf("%s group changed on the way through: %+v", items[i].Verdict, f)
		}
	}
	if n := runs.Load(); n != 0 {
		t.Errorf("the agent ran %d times for groups that are not new", n)
	}
}

func TestAgentCachedFindingSkipsTheAgent(t *testing.T) {
	cached := &pipeline.Answer{Title: "cached", Summary: "diagnosed by an earlier scan"}
	d := agentTestDossier("fp")
	d.Group.Finding = cached
	var runs atomic.Int32
	f := agentCollect(t, agentStage(AgentConfig{Parallel: 1}, agentAnswers(&runs)), d)[0]
	if f.Answer == nil || !reflect.DeepEqual(*f.Answer, *cached) || f.Failure != "" || f.AgentRan {
		t.Errorf("finding = %+v, want the cached answer", f)
	}
	if runs.Load() != 0 {
		t.Errorf("the agent ran for a cached finding")
	}
}

func TestAgentCachedFindingIsScrubbedToo(t *testing.T) {
	const token = "ghp_Zq8VvX2mN4bR7tY1uK3wE6sA9dF0gH5jL2pQ"
	red := redact.New(redact.Options{})
	d := agentTestDossier("fp")
	d.Group.Finding = &pipeline.Answer{Title: "t", Summary: "token " + token, Evidence: []string{token}}
	st, err := NewAgent(AgentConfig{Harness: agent.HarnessBuiltin, Scrub: red.Scrub})
	if err != nil {
		t.Fatal(err)
	}
	f := agentCollect(t, st, d)[0]
	if f.Answer == nil || strings.Contains(f.Answer.Summary+strings.Join(f.Answer.Evidence, " "), token) {
		t.Fatalf("cached finding passed through unscrubbed: %+v", f.Answer)
	}
}

func TestAgentParallelRunsConcurrentlyInOrder(t *testing.T) {
	items := []pipeline.Dossier{agentTestDossier("slow-first"), agentTestDossier("second"), agentTestDossier("third"), agentTestDossier("fourth")}
	another := make(chan struct{}, len(items))
	var overlapped atomic.Bool
	run := agent.RunnerFunc(func(_ context.Context, d pipeline.Dossier) (pipeline.Finding, error) {
		if d.Fingerprint == "slow-first" {
			// Run serially, no other run starts while this one waits.
			select {
			case <-another:
				overlapped.Store(true)
			case <-time.After(10 * time.Second):
			}
		} else {
			another <- struct{}{}
		}
		return pipeline.Finding{Dossier: d, Answer: &pipeline.Answer{Title: d.Fingerprint}}, nil
	})
	got := agentCollect(t, agentStage(AgentConfig{Parallel: 3}, run), items...)
	for i, f := range got {
		if f.Fingerprint != items[i].Fingerprint || f.Answer == nil || !f.AgentRan {
			t.Errorf("finding %d = %s (failure %q), want %s answered", i, f.Fingerprint, f.Failure, items[i].Fingerprint)
		}
	}
	if !overlapped.Load() {
		t.Error("no agent started while the slow one ran: Parallel had no effect")
	}
}

func TestAgentPanicBecomesFailedFinding(t *testing.T) {
	run := agent.RunnerFunc(func(_ context.Context, d pipeline.Dossier) (pipeline.Finding, error) {
		if d.Fingerprint == "boom" {
			panic("agent exploded")
		}
		return pipeline.Finding{Dossier: d, Answer: &pipeline.Answer{Title: d.Fingerprint, Summary: "ok"}}, nil
	})
	st := agentStage(AgentConfig{Harness: "test", Parallel: 2, Log: zerolog.Nop()}, run)
	got := agentCollect(t, st, agentTestDossier("a"), agentTestDossier("boom"), agentTestDossier("c"))
	if got[0].Answer == nil || got[2].Answer == nil {
		t.Fatalf("findings = %+v", got)
	}
	if got[1].Fingerprint != "boom" || got[1].Failure != "agent panicked: agent exploded" {
		t.Errorf("panicking task became %+v", got[1])
	}
}

// An agent that fails before any dossier of the scan was diagnosed (its
// binary missing, its login rejected, its provider down) is down: that
// dossier and the rest wait, uncharged, and no further agent runs. Once a
// dossier was diagnosed, a later failure is that dossier's own, and an
// unusable answer always is.
func TestAnAgentThatFailsForEveryDossierIsDownNotTheDefects(t *testing.T) {
	dossier := func(fp string) pipeline.Dossier {
		return pipeline.Dossier{Group: pipeline.Group{Fingerprint: fp, Verdict: pipeline.VerdictNew}}
	}
	runs := 0
	down := agentStage(AgentConfig{Parallel: 1, Log: zerolog.Nop()}, agent.RunnerFunc(func(_ context.Context, d pipeline.Dossier) (pipeline.Finding, error) {
		runs++
		return pipeline.Finding{Dossier: d, Failure: `agent: exec: "claude": executable file not found in $PATH`}, nil
	}))
	out := agentCollect(t, down, dossier("a"), dossier("b"), dossier("c"))
	if runs != 1 {
		t.Fatalf("%d agent runs, want the first only", runs)
	}
	for _, f := range out {
		if f.Wait == nil || f.Wait.For != pipeline.WaitAgent || f.AgentRan {
			t.Fatalf("%s: wait %+v, agent ran %v: want waiting for the agent, uncharged", f.Fingerprint, f.Wait, f.AgentRan)
		}
	}
	runs = 0
	mixed := agentStage(AgentConfig{Parallel: 1, Log: zerolog.Nop()}, agent.RunnerFunc(func(_ context.Context, d pipeline.Dossier) (pipeline.Finding, error) {
		runs++
		switch d.Fingerprint {
		case "ok":
			return pipeline.Finding{Dossier: d, Answer: &pipeline.Answer{Title: "t"}}, nil
		case "garbage":
			return pipeline.Finding{Dossier: d, Failure: "agent answer is not JSON", Unusable: true}, nil
		}
		return pipeline.Finding{Dossier: d, Failure: "agent exited with exit status 1"}, nil
	}))
	out = agentCollect(t, mixed, dossier("garbage"), dossier("ok"), dossier("crash"))
	if runs != 3 {
		t.Fatalf("%d runs, want 3", runs)
	}
	for _, f := range out {
		if f.Fingerprint != "ok" && (f.Wait != nil || !f.AgentRan || f.Failure == "") {
			t.Fatalf("%s: %+v: want a failure of its own, charged", f.Fingerprint, f)
		}
	}
}

// Through the stage: a rejected key leaves the defects waiting for the
// agent, uncharged, after one request.
func TestOpenAIBadKeyIsTheAgentDown(t *testing.T) {
	bad := openaifake.Unauthorized()
	srv := openaifake.New(openaifake.Options{Always: &bad})
	defer srv.Close()
	t.Setenv("TEST_OPENAI_KEY", "sk-wrong")
	st, err := NewAgent(AgentConfig{Harness: agent.HarnessOpenAI, Endpoint: srv.URL(), Model: "m", APIKeyEnv: "TEST_OPENAI_KEY", Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	a, b := agentTestDossier("a"), agentTestDossier("b")
	for _, f := range agentCollect(t, st, a, b) {
		if f.Wait == nil || f.Wait.For != pipeline.WaitAgent || f.AgentRan || f.Unusable {
			t.Fatalf("%s: wait %+v, ran %v, unusable %v: want waiting for the agent, uncharged", f.Fingerprint, f.Wait, f.AgentRan, f.Unusable)
		}
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("%d requests, want 1: the agent is down", n)
	}
}

// The stage's own checks, and the harness's through it, name the config
// key at fault as the config file spells it.
func TestNewAgentRejectsBadConfigNamingTheKey(t *testing.T) {
	for _, tc := range []struct {
		cfg  AgentConfig
		want string
	}{
		{AgentConfig{Harness: agent.HarnessBuiltin, Parallel: -1}, "selfDiagnosis.agentParallel:"},
		{AgentConfig{Harness: agent.HarnessClaude, Timeout: -time.Second}, "selfDiagnosis.timeoutSeconds:"},
		{AgentConfig{Harness: agent.HarnessBuiltin, Env: []string{"GITHUB_TOKEN"}}, "selfDiagnosis.agentEnv:"},
		{AgentConfig{Harness: "gpt"}, "selfDiagnosis.harness:"},
	} {
		if _, err := NewAgent(tc.cfg); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("NewAgent(%+v) error = %v, want one naming %s", tc.cfg, err, tc.want)
		}
	}
}
