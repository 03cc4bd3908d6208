package agent

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// Google's gemini CLI, run headless (-p) with --output-format json: one
// JSON object on stdout, {"session_id", "response", "stats"}; a failure
// is {"error": {"type", "message", "code"}}, which gemini prints to stderr
// before exiting non-zero (and may carry in the stdout object too).

// geminiArgv is gemini headless and read-only (geminiFlags).
func geminiArgv(cfg Config, prompt string) []string {
	argv := []string{cmp.Or(cfg.Binary, Binaries[HarnessGemini]), "-p", prompt, "--output-format", "json"}
	argv = append(argv, geminiFlags()...)
	if cfg.Model != "" {
		argv = append(argv, "-m", cfg.Model)
	}
	return argv
}

// geminiOutput is the object gemini prints with --output-format json.
type geminiOutput struct {
	Response *string      `json:"response"`
	Error    *geminiError `json:"error"`
	Stats    *geminiStats `json:"stats"`
}

type geminiError struct {
	Type    string          `json:"type"`
	Message string          `json:"message"`
	Code    json.RawMessage `json:"code"` // a number (an exit code, an HTTP status) or a string
}

func (e *geminiError) reported() error {
	what := cmp.Or(e.Type, "no type")
	if code := strings.Trim(string(e.Code), `"`); code != "" && code != "null" {
		what += ", code " + code
	}
	return &reportedError{fmt.Sprintf("agent reported an error (gemini %s): %s", what, quoteExcerpt([]byte(e.Message), 200))}
}

// geminiStats is the part of gemini's session metrics that says
// what the run used, per model.
type geminiStats struct {
	Models map[string]struct {
		Tokens struct {
			Prompt     int64 `json:"prompt"` // cached tokens included
			Candidates int64 `json:"candidates"`
			Thoughts   int64 `json:"thoughts"` // billed as output
			Total      int64 `json:"total"`
		} `json:"tokens"`
	} `json:"models"`
}

func (s *geminiStats) cost() *pipeline.Cost {
	if s == nil || len(s.Models) == 0 {
		return nil
	}
	c := &pipeline.Cost{}
	for _, m := range s.Models {
		c.Add(0, m.Tokens.Prompt, max(m.Tokens.Candidates, 0)+max(m.Tokens.Thoughts, 0))
	}
	return c
}

// geminiDecode finds gemini's JSON object in out: all of it, or from
// the first line that opens an object (a warning printed before it).
func geminiDecode(out []byte) (geminiOutput, bool) {
	var o geminiOutput
	trimmed := bytes.TrimSpace(out)
	for len(trimmed) > 0 {
		if trimmed[0] == '{' {
			o = geminiOutput{}
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
	return geminiOutput{}, false
}

// geminiAnswer reads the answer from gemini's stdout.
func geminiAnswer(stdout []byte) (*pipeline.Answer, *pipeline.Cost, error) {
	o, ok := geminiDecode(stdout)
	if !ok {
		return nil, nil, fmt.Errorf("agent output is not gemini's JSON output: %s", quoteExcerpt(bytes.TrimSpace(stdout), 200))
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

// geminiFailure is the error gemini printed (to stderr) before it
// exited non-zero, or nil when it printed none in its JSON shape.
func geminiFailure(stdout, stderr []byte) error {
	for _, out := range [][]byte{stderr, stdout} {
		if o, ok := geminiDecode(out); ok && o.Error != nil {
			return o.Error.reported()
		}
	}
	return nil
}
