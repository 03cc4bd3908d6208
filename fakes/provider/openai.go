package provider

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// turnOf reads the turn from a call id we gave ("call_3_0": turn 3), -1
// for an id not ours.
func turnOf(id string) int {
	f := strings.Split(id, "_")
	if len(f) != 3 {
		return -1
	}
	n, err := strconv.Atoi(f[1])
	if err != nil {
		return -1
	}
	return n
}

// responses answers POST /v1/responses (codex): streamed as SSE events.
func (m *Model) responses(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model  string           `json:"model"`
		Stream bool             `json:"stream"`
		Tools  []any            `json:"tools"`
		Input  []map[string]any `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	turns := 0
	tools := req.Tools
	for _, it := range req.Input {
		switch it["type"] {
		case "additional_tools": // codex 0.171 declares its tools here
			t, _ := it["tools"].([]any)
			tools = append(tools, t...)
		case "function_call", "custom_tool_call", "local_shell_call":
			id, _ := it["call_id"].(string)
			turns = max(turns, turnOf(id)+1)
		case "function_call_output", "custom_tool_call_output", "local_shell_call_output":
			id, _ := it["call_id"].(string)
			out := text(it["output"])
			if o, ok := it["output"].(map[string]any); ok {
				out = text(o["content"])
			}
			m.record(id, out, false)
		}
	}
	st := m.step(turns, tools)
	var items []map[string]any
	if len(st.Calls) == 0 {
		items = append(items, map[string]any{"type": "message", "id": "msg_" + itoa(turns), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": st.Text, "annotations": []any{}}}})
	}
	for i, c := range st.Calls {
		id := m.callID("call", turns, i, c)
		if s, ok := c.Args["__custom"].(string); ok { // a freeform tool (apply_patch)
			item := map[string]any{"type": "custom_tool_call", "id": "ctc_" + id, "call_id": id, "name": c.Name, "input": s, "status": "completed"}
			if ns, ok := c.Args["__namespace"].(string); ok {
				item["namespace"] = ns
			}
			items = append(items, item)
			continue
		}
		items = append(items, map[string]any{"type": "function_call", "id": "fc_" + id, "call_id": id, "name": c.Name, "arguments": mustJSON(c.Args), "status": "completed"})
	}
	resp := map[string]any{"id": "resp_" + itoa(turns), "object": "response", "model": req.Model, "status": "completed", "output": items,
		"usage": map[string]any{"input_tokens": 1000, "output_tokens": 50, "total_tokens": 1050,
			"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}}
	if !req.Stream {
		writeJSON(w, resp)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	seq := 0
	event := func(typ string, data map[string]any) {
		data["type"], data["sequence_number"] = typ, seq
		seq++
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, mustJSON(data))
	}
	created := map[string]any{"id": resp["id"], "object": "response", "model": req.Model, "status": "in_progress", "output": []any{}}
	event("response.created", map[string]any{"response": created})
	for i, it := range items {
		event("response.output_item.added", map[string]any{"output_index": i, "item": it})
		if it["type"] == "message" {
			event("response.output_text.delta", map[string]any{"output_index": i, "item_id": it["id"], "content_index": 0, "delta": st.Text})
		}
		event("response.output_item.done", map[string]any{"output_index": i, "item": it})
	}
	event("response.completed", map[string]any{"response": resp})
}

// chat answers POST /v1/chat/completions, streamed when asked.
func (m *Model) chat(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string           `json:"model"`
		Stream   bool             `json:"stream"`
		Tools    []any            `json:"tools"`
		Messages []map[string]any `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	turns := 0
	for _, msg := range req.Messages {
		switch msg["role"] {
		case "assistant":
			turns++
		case "tool":
			id, _ := msg["tool_call_id"].(string)
			m.record(id, text(msg["content"]), false)
		}
	}
	st := m.step(turns, req.Tools)
	message := map[string]any{"role": "assistant", "content": st.Text}
	finish := "stop"
	var calls []any
	for i, c := range st.Calls {
		finish = "tool_calls"
		calls = append(calls, map[string]any{"index": i, "id": m.callID("call", turns, i, c), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": mustJSON(c.Args)}})
	}
	if len(calls) > 0 {
		message["tool_calls"], message["content"] = calls, nil
	}
	usage := map[string]any{"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050}
	if !req.Stream {
		writeJSON(w, map[string]any{"id": "chatcmpl-" + itoa(turns), "object": "chat.completion", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": message, "finish_reason": finish}}, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta map[string]any, finish any, usage any) {
		fmt.Fprintf(w, "data: %s\n\n", mustJSON(map[string]any{"id": "chatcmpl-" + itoa(turns), "object": "chat.completion.chunk", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}, "usage": usage}))
	}
	chunk(message, nil, nil)
	chunk(map[string]any{}, finish, usage)
	fmt.Fprint(w, "data: [DONE]\n\n")
}
