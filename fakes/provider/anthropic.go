package provider

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// anthropic answers POST /v1/messages, streamed (SSE) when asked.
func (m *Model) anthropic(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Tools    []any  `json:"tools"`
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		writeJSON(w, map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": err.Error()}})
		return
	}
	turns := 0
	for _, msg := range req.Messages {
		if msg.Role == "assistant" {
			turns++
		}
		blocks, _ := msg.Content.([]any)
		for _, b := range blocks {
			blk, _ := b.(map[string]any)
			if blk["type"] == "tool_result" {
				isErr, _ := blk["is_error"].(bool)
				id, _ := blk["tool_use_id"].(string)
				m.record(id, text(blk["content"]), isErr)
			}
		}
	}
	st := m.step(turns, req.Tools)
	var content []map[string]any
	stop := "end_turn"
	if len(st.Calls) == 0 {
		content = append(content, map[string]any{"type": "text", "text": st.Text})
	}
	for i, c := range st.Calls {
		stop = "tool_use"
		content = append(content, map[string]any{"type": "tool_use", "id": m.callID("toolu", turns, i, c), "name": c.Name, "input": c.Args})
	}
	usage := map[string]any{"input_tokens": 1000, "output_tokens": 50, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	msg := map[string]any{"id": "msg_" + itoa(turns), "type": "message", "role": "assistant", "model": req.Model,
		"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": usage}
	if !req.Stream {
		writeJSON(w, msg)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	event := func(name string, data any) {
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, mustJSON(data))
	}
	start := map[string]any{}
	for k, v := range msg {
		start[k] = v
	}
	start["content"], start["stop_reason"] = []any{}, nil
	event("message_start", map[string]any{"type": "message_start", "message": start})
	for i, blk := range content {
		if blk["type"] == "text" {
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": blk["text"]}})
		} else {
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": blk["id"], "name": blk["name"], "input": map[string]any{}}})
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": mustJSON(blk["input"])}})
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 50}})
	event("message_stop", map[string]any{"type": "message_stop"})
}
