package agent

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// OpenAI's codex CLI, run as `codex exec` (its non-interactive mode):
// JSONL events on stdout (--json), the final message also written to a
// file (--output-last-message) and shaped by a JSON schema
// (--output-schema). Both files live beside the prompt, outside the
// agent's working directory.
const (
	codexSchemaFile      = "answer-schema.json"
	codexLastMessageFile = "last-message.txt"
)

// codexArgv is `codex exec` read-only: the prompt is the last
// argument, after "--" so a prompt can never be read as a flag. baseURL
// is the user's OPENAI_BASE_URL, which every OpenAI client honours but
// codex 0.171 ignores: it reads openai_base_url from its config, which
// -c sets (a TOML string: JSON's quoting is TOML's).
func codexArgv(cfg Config, prompt, root, workDir, baseURL string) []string {
	argv := []string{cmp.Or(cfg.Binary, Binaries[HarnessCodex]), "exec", "--json"}
	argv = append(argv, codexFlags(workDir)...)
	if baseURL != "" {
		q, _ := json.Marshal(baseURL)
		argv = append(argv, "-c", "openai_base_url="+string(q))
	}
	argv = append(argv,
		"--output-schema", filepath.Join(root, codexSchemaFile),
		"--output-last-message", filepath.Join(root, codexLastMessageFile))
	if cfg.Model != "" {
		argv = append(argv, "-m", cfg.Model)
	}
	return append(argv, "--", prompt)
}

// codexSchema is the answer's JSON schema for --output-schema. OpenAI's
// structured outputs (strict) want every property required and no others.
func codexSchema() []byte {
	str := map[string]any{"type": "string"}
	b, _ := json.MarshalIndent(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"title":         str,
			"summary":       str,
			"root_cause":    str,
			"suggested_fix": str,
			"verdict":       map[string]any{"type": "string", "enum": []string{"bug", "environment", "transient", "inconclusive"}},
			"confidence":    map[string]any{"type": "number", "minimum": 0, "maximum": 1},
			"evidence":      map[string]any{"type": "array", "items": str},
		},
		"required":             []string{"title", "summary", "root_cause", "suggested_fix", "verdict", "confidence", "evidence"},
		"additionalProperties": false,
	}, "", "  ")
	return b
}

// codexEvent is one line of `codex exec --json`: thread.started,
// turn.started, item.started/updated/completed, turn.completed (with
// usage), turn.failed (with error) and error (with message).
type codexEvent struct {
	Type    string `json:"type"`
	Message string `json:"message"` // type "error"
	Error   *struct {
		Message string `json:"message"`
	} `json:"error"` // type "turn.failed"
	Item *struct {
		Type     string `json:"type"`
		ItemType string `json:"item_type"` // before codex 0.46 named it so, "assistant_message"
		Text     string `json:"text"`
	} `json:"item"`
	Usage *struct {
		InputTokens       int64 `json:"input_tokens"` // cached_input_tokens are a part of it
		CachedInputTokens int64 `json:"cached_input_tokens"`
		OutputTokens      int64 `json:"output_tokens"`
	} `json:"usage"`
}

// codexRun is what codex's event stream says about a run.
type codexRun struct {
	events    int
	message   string // the last agent message
	completed bool   // a turn.completed arrived
	failure   string // turn.failed's error, else the last error event's
	failed    bool   // a turn.failed arrived
	cost      *pipeline.Cost
}

func codexEvents(stdout []byte) codexRun {
	var run codexRun
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	sc.Buffer(nil, stdoutCap+1)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		var ev codexEvent
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil || ev.Type == "" {
			continue
		}
		run.events++
		switch ev.Type {
		case "item.completed":
			if it := ev.Item; it != nil && (it.Type == "agent_message" || it.ItemType == "assistant_message") {
				run.message = it.Text
			}
		case "turn.completed":
			run.completed = true
			if u := ev.Usage; u != nil {
				if run.cost == nil {
					run.cost = &pipeline.Cost{}
				}
				run.cost.Add(0, u.InputTokens, u.OutputTokens)
			}
		case "turn.failed":
			run.failed = true
			if ev.Error != nil {
				run.failure = ev.Error.Message
			}
		case "error":
			if !run.failed {
				run.failure = ev.Message
			}
		}
	}
	return run
}

// reported is the CLI's own word that the run failed, or nil: a turn that
// failed, or an error with no turn completed (an error before a
// completed turn may be a retry notice).
func (r codexRun) reported() error {
	if !r.failed && (r.failure == "" || r.completed) {
		return nil
	}
	what := "turn.failed"
	if !r.failed {
		what = "error"
	}
	return &reportedError{fmt.Sprintf("agent reported an error (codex %s): %s", what, quoteExcerpt([]byte(r.failure), 200))}
}

// codexAnswer reads codex's answer: the --output-last-message file
// when it holds one (codex writes it as the run ends), else the last
// agent message of the event stream.
func codexAnswer(stdout, lastMessage []byte) (*pipeline.Answer, *pipeline.Cost, error) {
	run := codexEvents(stdout)
	if err := run.reported(); err != nil {
		return nil, run.cost, err
	}
	text := strings.TrimSpace(string(lastMessage))
	if text == "" {
		text = strings.TrimSpace(run.message)
	}
	if text == "" {
		if run.events == 0 {
			return nil, nil, fmt.Errorf("agent output is not codex's JSON events: %s", quoteExcerpt(bytes.TrimSpace(stdout), 200))
		}
		return nil, run.cost, fmt.Errorf("agent returned no final message (codex, %d events)", run.events)
	}
	a, err := ParseAnswer([]byte(text))
	return a, run.cost, err
}
