// Package openaifake is an OpenAI-compatible chat-completions server for
// tests: POST /v1/chat/completions answers in the real response shape, each
// request with the next scripted reply (a valid answer once the script is
// spent), and every request is recorded.
package openaifake

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// DefaultAnswer is the content of a valid reply: an answer the tool files.
const DefaultAnswer = `{"title":"queue drops work items after three attempts","summary":"The queue dropped a work item.","root_cause":"The queue is full and retries are exhausted.","suggested_fix":"Raise the queue's capacity."}`

// Reply is one scripted answer to a request.
type Reply struct {
	Status     int    // 0: 200
	RetryAfter string // the Retry-After header, when set
	// Content is the message content of a 200 reply; "" means DefaultAnswer
	// unless Empty is set.
	Content      string
	Empty        bool
	FinishReason string // default "stop"
	// Error is the OpenAI error object of a non-200 reply.
	Error *ErrorObject
	// Raw, when set, is written as the body verbatim.
	Raw string
}

// ErrorObject is OpenAI's error shape: {"error":{...}}.
type ErrorObject struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func str(s string) *string { return &s }

// Valid answers with DefaultAnswer.
func Valid() Reply { return Reply{} }

// Content answers with the given message content.
func Content(s string) Reply { return Reply{Content: s} }

// Prose is a model that ignores the schema: the answer in prose and a fence.
func Prose() Reply {
	return Reply{Content: "Sure! Here is my diagnosis of the failure.\n\n```json\n" + DefaultAnswer + "\n```\n\nLet me know if you need more."}
}

// Malformed is content that is no answer at all.
func Malformed() Reply {
	return Reply{Content: `{"title": "cut off in the mid`, FinishReason: "length"}
}

// RateLimited is a 429 asking to wait retryAfter (seconds or an HTTP date).
func RateLimited(retryAfter string) Reply {
	return Reply{Status: http.StatusTooManyRequests, RetryAfter: retryAfter, Error: &ErrorObject{
		Message: "Rate limit reached for requests", Type: "requests", Code: str("rate_limit_exceeded")}}
}

// ServerError is a 500.
func ServerError() Reply {
	return Reply{Status: http.StatusInternalServerError, Error: &ErrorObject{Message: "The server had an error while processing your request.", Type: "server_error"}}
}

// ContextLength is OpenAI's 400 for a prompt over the model's context.
func ContextLength() Reply {
	return Reply{Status: http.StatusBadRequest, Error: &ErrorObject{
		Message: "This model's maximum context length is 8192 tokens. However, your messages resulted in 20000 tokens. Please reduce the length of the messages.",
		Type:    "invalid_request_error", Param: str("messages"), Code: str("context_length_exceeded")}}
}

// Unauthorized is OpenAI's 401 for a bad key.
func Unauthorized() Reply {
	return Reply{Status: http.StatusUnauthorized, Error: &ErrorObject{
		Message: "Incorrect API key provided.", Type: "invalid_request_error", Code: str("invalid_api_key")}}
}

// ModelNotFound is OpenAI's 404 for an unknown model.
func ModelNotFound() Reply {
	return Reply{Status: http.StatusNotFound, Error: &ErrorObject{
		Message: "The model `nope` does not exist or you do not have access to it.", Type: "invalid_request_error", Code: str("model_not_found")}}
}

// Options configure a Server.
type Options struct {
	// RejectJSONSchema answers a request asking for a json_schema
	// response_format with a 400, as servers without structured output
	// do; json_object is accepted.
	RejectJSONSchema bool
	// RejectJSONObject does the same for json_object.
	RejectJSONObject bool
	// Always, when set, answers every request not scripted (instead of a
	// valid answer).
	Always *Reply
}

// Request is one recorded request.
type Request struct {
	Header         http.Header
	Body           map[string]any
	Raw            []byte
	Model          string
	ResponseFormat string // response_format.type, "" when absent
	Authorization  string
	// Messages are the messages' roles and contents, in order.
	Messages [][2]string
}

// Server is the fake endpoint.
type Server struct {
	srv  *httptest.Server
	opts Options

	mu       sync.Mutex
	script   []Reply
	requests []Request
}

// New starts a fake endpoint.
func New(opts Options) *Server {
	s := &Server{opts: opts}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL is the base URL a client is configured with (…/v1).
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Script queues replies for the next requests, in order.
func (s *Server) Script(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, replies...)
}

// Requests returns the requests recorded so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		writeError(w, http.StatusNotFound, &ErrorObject{Message: "unknown path " + r.URL.Path, Type: "invalid_request_error"})
		return
	}
	raw, _ := io.ReadAll(r.Body)
	req := Request{Header: r.Header.Clone(), Raw: raw, Authorization: r.Header.Get("Authorization")}
	if err := json.Unmarshal(raw, &req.Body); err != nil {
		writeError(w, http.StatusBadRequest, &ErrorObject{Message: "We could not parse the JSON body of your request.", Type: "invalid_request_error"})
		return
	}
	req.Model, _ = req.Body["model"].(string)
	if rf, ok := req.Body["response_format"].(map[string]any); ok {
		req.ResponseFormat, _ = rf["type"].(string)
	}
	if msgs, ok := req.Body["messages"].([]any); ok {
		for _, m := range msgs {
			mm, _ := m.(map[string]any)
			role, _ := mm["role"].(string)
			content, _ := mm["content"].(string)
			req.Messages = append(req.Messages, [2]string{role, content})
		}
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	var reply Reply
	switch {
	case s.opts.RejectJSONSchema && req.ResponseFormat == "json_schema":
		reply = Reply{Status: http.StatusBadRequest, Error: &ErrorObject{
			Message: "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.",
			Type:    "invalid_request_error", Param: str("response_format")}}
	case s.opts.RejectJSONObject && req.ResponseFormat == "json_object":
		reply = Reply{Status: http.StatusBadRequest, Error: &ErrorObject{
			Message: "Invalid parameter: 'response_format' of type 'json_object' is not supported with this model.",
			Type:    "invalid_request_error", Param: str("response_format")}}
	case len(s.script) > 0:
		reply, s.script = s.script[0], s.script[1:]
	case s.opts.Always != nil:
		reply = *s.opts.Always
	}
	s.mu.Unlock()
	s.write(w, req, reply)
}

func (s *Server) write(w http.ResponseWriter, req Request, reply Reply) {
	if reply.RetryAfter != "" {
		w.Header().Set("Retry-After", reply.RetryAfter)
	}
	if reply.Raw != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(max(reply.Status, http.StatusOK))
		io.WriteString(w, reply.Raw)
		return
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		e := reply.Error
		if e == nil {
			e = &ErrorObject{Message: http.StatusText(reply.Status), Type: "server_error"}
		}
		writeError(w, reply.Status, e)
		return
	}
	content := reply.Content
	if content == "" && !reply.Empty {
		content = DefaultAnswer
	}
	finish := reply.FinishReason
	if finish == "" {
		finish = "stop"
	}
	prompt, completion := len(req.Raw)/4+1, len(content)/4+1
	resp := map[string]any{
		"id": fmt.Sprintf("chatcmpl-fake%d", len(s.Requests())), "object": "chat.completion", "created": 1764320400,
		"model": req.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": finish, "logprobs": nil,
			"message": map[string]any{"role": "assistant", "content": content, "refusal": nil}}},
		"usage": map[string]any{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(resp)
}

func writeError(w http.ResponseWriter, status int, e *ErrorObject) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": e})
}

// Roles is a helper for asserting messages: "system,user".
func (r Request) Roles() string {
	var roles []string
	for _, m := range r.Messages {
		roles = append(roles, m[0])
	}
	return strings.Join(roles, ",")
}
