package stages

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// Google's gemini CLI, run headless (-p) with --output-format json: one
// JSON object on stdout, {"session_id", "response", "stats"}; a failure
// is {"error": {"type", "message", "code"}}, which gemini prints to stderr
// before exiting non-zero (and may carry in the stdout object too).

// agentGeminiArgv is gemini headless and read-only (agentGeminiFlags).
func agentGeminiArgv(cfg AgentConfig, prompt string) []string {
	argv := []string{agentOr(cfg.Binary, AgentBinaries[AgentHarnessGemini]), "-p", prompt, "--output-format", "json"}
	argv = append(argv, agentGeminiFlags()...)
	if cfg.Model != "" {
		argv = append(argv, "-m", cfg.Model)
	}
	return argv
}

// agentGeminiOutput is the object gemini prints with --output-format json.
type agentGeminiOutput struct {
	Response *string           `json:"response"`
	Error    *agentGeminiError `json:"error"`
	Stats    *agentGeminiStats `json:"stats"`
}

type agentGeminiError struct {
	Type    string          `json:"type"`
	Message string          `json:"message"`
	Code    json.RawMessage `json:"code"` // a number (an exit code, an HTTP status) or a string
}

func (e *agentGeminiError) reported() error {
	what := agentOr(e.Type, "no type")
	if code := strings.Trim(string(e.Code), `"`); code != "" && code != "null" {
		what += ", code " + code
	}
	return &agentReportedError{fmt.Sprintf("agent reported an error (gemini %s): %s", what, agentExcerpt([]byte(e.Message), 200))}
}

// agentGeminiStats is the part of gemini's session metrics that says
// what the run used, per model.
type agentGeminiStats struct {
	Models map[string]struct {
		Tokens struct {
			Prompt     int64 `json:"prompt"` // cached tokens included
			Candidates int64 `json:"candidates"`
			Thoughts   int64 `json:"thoughts"` // billed as output
			Total      int64 `json:"total"`
		} `json:"tokens"`
	} `json:"models"`
}

func (s *agentGeminiStats) cost() *pipeline.Cost {
	if s == nil || len(s.Models) == 0 {
		return nil
	}
	c := &pipeline.Cost{}
	for _, m := range s.Models {
		c.Add(0, m.Tokens.Prompt, max(m.Tokens.Candidates, 0)+max(m.Tokens.Thoughts, 0))
	}
	return c
}

// agentGeminiDecode finds gemini's JSON object in out: all of it, or from
// the first line that opens an object (a warning printed before it).
func agentGeminiDecode(out []byte) (agentGeminiOutput, bool) {
	var o agentGeminiOutput
	trimmed := bytes.TrimSpace(out)
	for len(trimmed) > 0 {
		if trimmed[0] == '{' {
			o = agentGeminiOutput{}
			if json.Unmarshal(trimmed, &o) == nil && (o.Response != nil || o.Error != nil) {
				return o, true
			}
		}
		i := bytes.IndexByte(trimmed, '\n')
		if i < 0 {
			break
		}
		trimmed = bytes.TrimSpace(trimmed[i+1:])
	}
	return agentGeminiOutput{}, false
}

// agentGeminiAnswer reads the answer from gemini's stdout.
func agentGeminiAnswer(stdout []byte) (*pipeline.Answer, *pipeline.Cost, error) {
	o, ok := agentGeminiDecode(stdout)
	if !ok {
		return nil, nil, fmt.Errorf("agent output is not gemini's JSON output: %s", agentExcerpt(bytes.TrimSpace(stdout), 200))
	}
	cost := o.Stats.cost()
	if o.Error != nil {
		return nil, cost, o.Error.reported()
	}
	if strings.TrimSpace(*o.Response) == "" {
		return nil, cost, fmt.Errorf("agent returned an empty response (gemini)")
	}
	a, err := ParseAnswer([]byte(*o.Response))
	return a, cost, err
}

// agentGeminiFailure is the error gemini printed (to stderr) before it
// exited non-zero, or nil when it printed none in its JSON shape.
func agentGeminiFailure(stdout, stderr []byte) error {
	for _, out := range [][]byte{stderr, stdout} {
		if o, ok := agentGeminiDecode(out); ok && o.Error != nil {
			return o.Error.reported()
		}
	}
	return nil
}
