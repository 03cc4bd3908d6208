package test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	openaifake "github.com/the-loop/the-loop-diagnose/fakes/openai"
)

func openAIHarness(srv *openaifake.Server) string {
	return "openai\n  endpoint: " + quote(srv.URL()) + "\n  model: qwen2.5-coder:7b\n  apiKeyEnv: FAKE_OPENAI_KEY\n  pricePerMillionInput: 0.5\n  pricePerMillionOutput: 1.5"
}

// harness: openai files an issue from an OpenAI-compatible endpoint's
// answer, sending the key from the variable apiKeyEnv names as a Bearer
// token and asking for the answer's JSON schema.
func TestTheOpenAIHarnessFilesAnIssue(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	srv := openaifake.New(openaifake.Options{})
	t.Cleanup(srv.Close)
	d := newDeployment(t, gh, deployOpts{harness: openAIHarness(srv), env: []string{"FAKE_OPENAI_KEY=sk-e2e-456", "OPENAI_API_KEY=sk-not-this-one"}})
	d.appendLog(killDefects()[1])
	res := d.run("run")
	if res.code != 0 || gh.CountCreates() != 1 {
		t.Fatalf("exit %d, %d issues, want 1\n%s", res.code, gh.CountCreates(), res.stderr)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests to the endpoint, want 1", len(reqs))
	}
	if q := reqs[0]; q.Authorization != "Bearer sk-e2e-456" || q.ResponseFormat != "json_schema" || q.Model != "qwen2.5-coder:7b" {
		t.Fatalf("Authorization %q, response_format %q, model %q", q.Authorization, q.ResponseFormat, q.Model)
	}
	if !strings.Contains(reqs[0].Messages[1][1], "queue full") {
		t.Fatalf("the dossier is not in the user message:\n%s", reqs[0].Messages[1][1])
	}
	issue := gh.Issues()[0]
	if !strings.Contains(issue.Title+issue.Body, "queue drops work items") {
		t.Fatalf("the issue does not carry the endpoint's answer: %q\n%s", issue.Title, issue.Body)
	}
	// The usage is the run's cost, priced at the configured prices.
	var st struct {
		AgentCost struct {
			Day struct {
				Runs int     `json:"runs"`
				USD  float64 `json:"usd"`
				In   int64   `json:"in"`
				Out  int64   `json:"out"`
			} `json:"last_24h"`
		} `json:"agent_cost"`
	}
	out := d.run("status", "--json").stdout
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	if c := st.AgentCost.Day; c.Runs != 1 || c.In == 0 || c.Out == 0 || math.Abs(c.USD-(float64(c.In)*0.5+float64(c.Out)*1.5)/1e6) > 1e-12 {
		t.Fatalf("agent cost %+v, want the usage's tokens at the configured prices", c)
	}
}

// A rejected key is the agent's failure, not the defect's: the defect
// waits for the agent, nothing is charged, and once the key works it is
// filed.
func TestTheOpenAIHarnessWithABadKeyWaitsForTheAgent(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	srv := openaifake.New(openaifake.Options{})
	t.Cleanup(srv.Close)
	srv.Script(openaifake.Unauthorized())
	d := newDeployment(t, gh, deployOpts{harness: openAIHarness(srv), env: []string{"FAKE_OPENAI_KEY=sk-wrong"}})
	d.appendLog(killDefects()...)
	res := d.run("run", "--now", t0.Add(time.Hour).Format(time.RFC3339))
	if res.code != 1 || !strings.Contains(res.stderr, "waiting for the agent") || !strings.Contains(res.stderr, "refused the key") {
		t.Fatalf("exit %d, want 1 waiting for the agent\n%s", res.code, res.stderr)
	}
	nothingCharged(t, d, 1)
	if n := len(srv.Requests()); n != 1 || gh.CountCreates() != 0 {
		t.Fatalf("%d requests, %d issues: want one request, then the agent is down", n, gh.CountCreates())
	}
	res = d.run("run", "--now", t0.Add(2*time.Hour).Format(time.RFC3339))
	if res.code != 0 || gh.CountCreates() != 3 {
		t.Fatalf("once the key works: exit %d, %d issues, want 3\n%s", res.code, gh.CountCreates(), res.stderr)
	}
}

// The harness's keys are checked with errors naming the key.
func TestTheOpenAIHarnessConfigErrorsNameTheKey(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ harness, want string }{
		{"openai\n  model: m", "selfDiagnosis.endpoint"},
		{"openai\n  endpoint: \"localhost:11434/v1\"\n  model: m", "selfDiagnosis.endpoint"},
		{"openai\n  endpoint: \"http://127.0.0.1:11434/v1\"", "selfDiagnosis.model"},
		{"openai\n  endpoint: \"http://127.0.0.1:11434/v1\"\n  model: m\n  apiKeyEnv: GH_TOKEN", "selfDiagnosis.apiKeyEnv"},
		{"openai\n  endpoint: \"http://127.0.0.1:11434/v1\"\n  model: m\n  apiKeyEnv: FAKE_OPENAI_UNSET", "FAKE_OPENAI_UNSET"},
	} {
		d := newDeployment(t, newGitHub(t), deployOpts{harness: c.harness})
		d.appendLog(killDefects()[0])
		res := d.run("run")
		if res.code == 0 || !strings.Contains(res.stderr, c.want) {
			t.Errorf("%q: exit %d, want an error naming %s\n%s", c.harness, res.code, c.want, res.stderr)
		}
	}
}
