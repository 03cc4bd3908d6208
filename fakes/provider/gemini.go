package provider

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// gemini answers models/X:generateContent and :streamGenerateContent (SSE
// with alt=sse, else a JSON array).
func (m *Model) gemini(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Tools            []any `json:"tools"`
		GenerationConfig struct {
			MimeType   string         `json:"responseMimeType"`
			JSONSchema map[string]any `json:"responseJsonSchema"`
			Schema     map[string]any `json:"responseSchema"`
		} `json:"generationConfig"`
		Contents []struct {
			Role  string           `json:"role"`
			Parts []map[string]any `json:"parts"`
		} `json:"contents"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	turns := 0
	for _, c := range req.Contents {
		if c.Role == "model" {
			turns++
			continue
		}
		// Responses answer the previous model turn's calls, in order.
		i := 0
		for _, p := range c.Parts {
			fr, ok := p["functionResponse"].(map[string]any)
			if !ok {
				continue
			}
			id, _ := fr["id"].(string)
			if turnOf(id) < 0 {
				id = "gem_" + itoa(turns-1) + "_" + itoa(i)
			}
			resp, _ := fr["response"].(map[string]any)
			content, isErr := text(resp["output"]), false
			if e, ok := resp["error"]; ok {
				content, isErr = text(e), true
			}
			if content == "" {
				content = mustJSON(resp)
			}
			m.record(id, content, isErr)
			i++
		}
	}
	st := m.step(turns, req.Tools)
	if gc := req.GenerationConfig; len(req.Tools) == 0 && gc.MimeType == "application/json" {
		// A side request wanting JSON (gemini's model router): a value of
		// its schema.
		st = Step{Text: mustJSON(fromSchema(cmpOr(gc.JSONSchema, gc.Schema)))}
	}
	var parts []any
	if len(st.Calls) == 0 {
		parts = append(parts, map[string]any{"text": st.Text})
	}
	for i, c := range st.Calls {
		parts = append(parts, map[string]any{"functionCall": map[string]any{"id": m.callID("gem", turns, i, c), "name": c.Name, "args": c.Args}})
	}
	resp := map[string]any{
		"candidates":    []any{map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": 1000, "candidatesTokenCount": 50, "totalTokenCount": 1050},
		"modelVersion":  "gemini-fake",
	}
	switch {
	case !strings.Contains(r.URL.Path, ":streamGenerateContent"):
		writeJSON(w, resp)
	case r.URL.Query().Get("alt") == "sse":
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\n\n", mustJSON(resp))
	default:
		writeJSON(w, []any{resp})
	}
}

func cmpOr(a, b map[string]any) map[string]any {
	if a != nil {
		return a
	}
	return b
}

// fromSchema is a value of the JSON schema s (Gemini writes its types in
// capitals): every property present, strings "x", numbers 1.
func fromSchema(s map[string]any) any {
	switch strings.ToLower(text(s["type"])) {
	case "object":
		out := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		for k, v := range props {
			sub, _ := v.(map[string]any)
			out[k] = fromSchema(sub)
		}
		return out
	case "array":
		return []any{}
	case "integer", "number":
		return 1
	case "boolean":
		return false
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	return "x"
}
