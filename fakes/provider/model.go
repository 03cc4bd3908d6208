// Package provider is a stand-in for the model providers the real agent
// CLIs talk to: Anthropic Messages (with SSE streaming), OpenAI Responses
// and chat completions, and Gemini generateContent and its stream. One
// scripted Model answers on all of them: each turn of the agent's
// conversation gets the next Step (tool calls in that API's own format,
// or the final text), and every tool result the CLI sends back is
// recorded, so a test asserts on what a tool call actually returned.
package provider

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// Call is one tool call the model asks for.
type Call struct {
	Name string
	Args map[string]any
}

// Step is one turn of the model: tool calls, or (none) the final Text.
type Step struct {
	Calls []Call
	Text  string
}

// Result is what the CLI sent back for one tool call.
type Result struct {
	ID, Name string
	Args     map[string]any
	Content  string
	IsError  bool
}

// Model is a scripted model. Steps are played by the conversation's turn
// (the number of model turns already in the request's history), so a
// retried request gets the same step; past the script, the last step.
// A request without tools (a CLI's side request: a title, a summary)
// gets SideText.
type Model struct {
	Steps    []Step
	SideText string

	mu       sync.Mutex
	results  map[string]Result
	order    []string
	calls    map[string]Call // by the id we gave each call
	paths    []string        // every request path, in order
	tools    []string        // the tools the main conversation offers
	finished bool            // the final step was served
}

// Answer is a model that answers text at once.
func Answer(text string) *Model { return &Model{Steps: []Step{{Text: text}}} }

// Server serves m on every API it fakes, until the test ends.
func (m *Model) Server(t interface{ Cleanup(func()) }) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/", m.route)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func (m *Model) route(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	m.paths = append(m.paths, r.Method+" "+r.URL.Path)
	m.mu.Unlock()
	p := r.URL.Path
	switch {
	case strings.HasSuffix(p, "/messages") && r.Method == http.MethodPost:
		m.anthropic(w, r)
	case strings.HasSuffix(p, "/messages/count_tokens"):
		writeJSON(w, map[string]any{"input_tokens": 100})
	case strings.HasSuffix(p, "/responses") && r.Method == http.MethodPost:
		m.responses(w, r)
	case strings.HasSuffix(p, "/chat/completions") && r.Method == http.MethodPost:
		m.chat(w, r)
	case strings.Contains(p, ":generateContent") || strings.Contains(p, ":streamGenerateContent"):
		m.gemini(w, r)
	case strings.Contains(p, ":countTokens"):
		writeJSON(w, map[string]any{"totalTokens": 100})
	case strings.HasSuffix(p, "/models"):
		writeJSON(w, map[string]any{"object": "list", "data": []any{}, "models": []any{}})
	default:
		http.NotFound(w, r)
	}
}

// SetSteps replaces the script (for steps that name what is known only
// once the tool runs, such as its pid).
func (m *Model) SetSteps(steps ...Step) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Steps = steps
}

// step is the step for a conversation with turns model turns so far,
// whose request offers tools (each a declaration in that API's shape); a
// request offering none is a side request, answered SideText.
func (m *Model) step(turns int, tools []any) Step {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(tools) == 0 {
		return Step{Text: m.SideText}
	}
	if m.tools == nil {
		m.tools = toolNames(tools)
	}
	if len(m.Steps) == 0 {
		return Step{Text: "{}"}
	}
	i := min(turns, len(m.Steps)-1)
	if i == len(m.Steps)-1 {
		m.finished = true
	}
	return m.Steps[i]
}

// callID names the call i of turn: stable, so a retried request's
// results match.
func (m *Model) callID(prefix string, turn, i int, c Call) string {
	id := prefix + "_" + itoa(turn) + "_" + itoa(i)
	m.mu.Lock()
	if m.calls == nil {
		m.calls = map[string]Call{}
	}
	m.calls[id] = c
	m.mu.Unlock()
	return id
}

func (m *Model) record(id, content string, isError bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.results == nil {
		m.results = map[string]Result{}
	}
	if _, seen := m.results[id]; !seen {
		m.order = append(m.order, id)
	}
	c := m.calls[id]
	m.results[id] = Result{ID: id, Name: c.Name, Args: c.Args, Content: content, IsError: isError}
}

// Results are the tool results the CLI sent back, in the order first seen.
func (m *Model) Results() []Result {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Result, 0, len(m.order))
	for _, id := range m.order {
		out = append(out, m.results[id])
	}
	return out
}

// Finished reports whether the script's last step was served.
func (m *Model) Finished() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.finished
}

// Paths are the requests' methods and paths, in order.
func (m *Model) Paths() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.paths...)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func itoa(i int) string { return strings.TrimSpace(mustJSON(i)) }

// text flattens a content value (a string, or a list of blocks holding
// text) into its text.
func text(v any) string {
	switch c := v.(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, e := range c {
			if m, ok := e.(map[string]any); ok {
				if s, ok := m["text"].(string); ok {
					b.WriteString(s)
				} else if s, ok := m["output"].(string); ok {
					b.WriteString(s)
				}
			} else if s, ok := e.(string); ok {
				b.WriteString(s)
			}
		}
		return b.String()
	case map[string]any:
		return mustJSON(c)
	case nil:
		return ""
	}
	return mustJSON(v)
}

// Brief is v as short text for a log line: JSON, cut at 160 bytes.
func Brief(v any) string {
	s, ok := v.(string)
	if !ok {
		s = mustJSON(v)
	}
	if len(s) > 160 {
		return s[:160] + "…"
	}
	return s
}

// Tools are the names of the tools the CLI offered its model.
func (m *Model) Tools() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.tools...)
}

// toolNames finds the names in tool declarations: {"name"}, {"function":
// {"name"}}, {"functionDeclarations": [{"name"}]}, {"type"} for a built-in.
func toolNames(tools []any) []string {
	out := []string{}
	for _, t := range tools {
		d, _ := t.(map[string]any)
		switch {
		case d["type"] == "namespace": // codex: a namespace of tools
			ts, _ := d["tools"].([]any)
			for _, n := range toolNames(ts) {
				out = append(out, text(d["name"])+"."+n)
			}
		case d["name"] != nil:
			out = append(out, text(d["name"]))
		case d["function"] != nil:
			f, _ := d["function"].(map[string]any)
			out = append(out, text(f["name"]))
		case d["functionDeclarations"] != nil:
			fs, _ := d["functionDeclarations"].([]any)
			out = append(out, toolNames(fs)...)
		default:
			out = append(out, text(d["type"]))
		}
	}
	return out
}
