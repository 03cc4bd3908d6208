package agent

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	openaifake "github.com/the-loop/the-loop-diagnose/fakes/openai"
	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// openAITest is a runner against srv with the retry bound made short.
func openAITest(t *testing.T, url string, edit func(*Config)) *openAIRunner {
	t.Helper()
	cfg := Config{Harness: HarnessOpenAI, Endpoint: url, Model: "qwen2.5-coder:7b", Timeout: 20 * time.Second, Log: zerolog.Nop()}
	if edit != nil {
		edit(&cfg)
	}
	r, err := newOpenAIRunner(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.retryBound = 50 * time.Millisecond
	return r
}

func openAIFake(t *testing.T, opts openaifake.Options) *openaifake.Server {
	srv := openaifake.New(opts)
	t.Cleanup(srv.Close)
	return srv
}

func openAIRunOne(t *testing.T, r *openAIRunner) pipeline.Finding {
	t.Helper()
	f, err := r.run(context.Background(), testDossier("fp1", "# Dossier\n\n`worker 3 crashed: config is nil`\n"))
	if err != nil {
		t.Fatalf("run returned %v; failures must be findings", err)
	}
	return f
}

// One request: a system and a user message quoting the dossier, the
// answer's strict JSON schema, the key from the named variable as a Bearer
// token, none of the client's telemetry; the usage is the run's cost,
// priced when prices are configured.
func TestOpenAIRequestAndAnswer(t *testing.T) {
	srv := openAIFake(t, openaifake.Options{})
	t.Setenv("TEST_OPENAI_KEY", "sk-test-123")
	r := openAITest(t, srv.URL(), func(c *Config) {
		c.APIKeyEnv, c.PricePerMillionInput, c.PricePerMillionOutput = "TEST_OPENAI_KEY", 1, 2
	})
	f := openAIRunOne(t, r)
	if f.Failure != "" || f.Answer == nil || !strings.Contains(f.Answer.Title, "queue drops") {
		t.Fatalf("finding %+v, want the fake's answer", f)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	q := reqs[0]
	if q.Authorization != "Bearer sk-test-123" {
		t.Fatalf("Authorization %q, want the key from TEST_OPENAI_KEY", q.Authorization)
	}
	if q.Model != "qwen2.5-coder:7b" || q.Roles() != "system,user" || !strings.Contains(q.Messages[1][1], "worker 3 crashed: config is nil") {
		t.Fatalf("model %q, roles %q, user message %q", q.Model, q.Roles(), q.Messages[1][1])
	}
	if q.ResponseFormat != "json_schema" {
		t.Fatalf("response_format %q, want json_schema", q.ResponseFormat)
	}
	js := q.Body["response_format"].(map[string]any)["json_schema"].(map[string]any)
	if js["strict"] != true || js["schema"].(map[string]any)["required"] == nil {
		t.Fatalf("json_schema %v, want strict with the answer's schema", js)
	}
	for name := range q.Header {
		if strings.HasPrefix(strings.ToLower(name), "x-stainless") {
			t.Fatalf("telemetry header %s sent", name)
		}
	}
	if f.Cost == nil || f.Cost.InputTokens == 0 || f.Cost.OutputTokens == 0 {
		t.Fatalf("cost %+v, want the usage's tokens", f.Cost)
	}
	if want := float64(f.Cost.InputTokens)/1e6 + 2*float64(f.Cost.OutputTokens)/1e6; f.Cost.USD != want {
		t.Fatalf("USD %v, want %v", f.Cost.USD, want)
	}
}

// Without apiKeyEnv no key is sent, not even OPENAI_API_KEY from our
// environment (the client's own default); without prices, USD is 0.
func TestOpenAINoKeyConfiguredSendsNone(t *testing.T) {
	srv := openAIFake(t, openaifake.Options{})
	t.Setenv("OPENAI_API_KEY", "sk-must-not-leave")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	f := openAIRunOne(t, openAITest(t, srv.URL(), nil))
	if f.Failure != "" {
		t.Fatal(f.Failure)
	}
	if a := srv.Requests()[0].Authorization; a != "" {
		t.Fatalf("Authorization %q sent without apiKeyEnv", a)
	}
	if f.Cost == nil || f.Cost.USD != 0 || f.Cost.InputTokens == 0 {
		t.Fatalf("cost %+v, want tokens at 0 USD", f.Cost)
	}
}

// A server that rejects json_schema is asked once more with json_object,
// and the runner keeps to it; one that rejects both is asked without.
func TestOpenAIResponseFormatFallback(t *testing.T) {
	srv := openAIFake(t, openaifake.Options{RejectJSONSchema: true})
	r := openAITest(t, srv.URL(), nil)
	for i := 0; i < 2; i++ {
		if f := openAIRunOne(t, r); f.Failure != "" || f.Answer == nil {
			t.Fatalf("run %d: %+v", i, f)
		}
	}
	var formats []string
	for _, q := range srv.Requests() {
		formats = append(formats, q.ResponseFormat)
	}
	if got := strings.Join(formats, ","); got != "json_schema,json_object,json_object" {
		t.Fatalf("formats asked %s, want json_schema once, then json_object", got)
	}

	srv = openAIFake(t, openaifake.Options{RejectJSONSchema: true, RejectJSONObject: true})
	r = openAITest(t, srv.URL(), nil)
	openAIRunOne(t, r)
	if f := openAIRunOne(t, r); f.Failure != "" {
		t.Fatal(f.Failure)
	}
	formats = nil
	for _, q := range srv.Requests() {
		formats = append(formats, q.ResponseFormat)
		if _, ok := q.Body["response_format"]; q.ResponseFormat == "" && ok {
			t.Fatalf("plain request still carries response_format: %s", q.Raw)
		}
	}
	if got := strings.Join(formats, ","); got != "json_schema,json_object,," {
		t.Fatalf("formats asked %q, want json_schema, json_object, then none twice", formats)
	}
}

// What the model said decides whose failure it is: prose around the JSON
// still answers; malformed or empty content, a refusal and a dossier over
// the model's context are the dossier's (Unusable).
func TestOpenAIAnswersAndTheDossiersFailures(t *testing.T) {
	for _, c := range []struct {
		name     string
		reply    openaifake.Reply
		answer   bool
		unusable bool
		reason   string
	}{
		{"prose around JSON", openaifake.Prose(), true, false, ""},
		{"malformed", openaifake.Malformed(), false, true, "output limit"},
		{"empty", openaifake.Reply{Empty: true}, false, true, "empty answer"},
		{"no choices", openaifake.Reply{Raw: `{"id":"x","object":"chat.completion","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":0,"total_tokens":5}}`}, false, true, "no choices"},
		{"refusal", openaifake.Reply{Raw: `{"id":"x","object":"chat.completion","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":null,"refusal":"I cannot help with that."}}]}`}, false, true, "refused"},
		{"context length", openaifake.ContextLength(), false, true, "too long"},
		{"llama.cpp context size", openaifake.Reply{Status: 400, Raw: `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}`}, false, true, "too long"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := openAIFake(t, openaifake.Options{})
			srv.Script(c.reply)
			f := openAIRunOne(t, openAITest(t, srv.URL(), nil))
			if (f.Answer != nil) != c.answer || f.Unusable != c.unusable || !strings.Contains(f.Failure, c.reason) {
				t.Fatalf("answer %v, unusable %v, failure %q; want answer %v, unusable %v, failure with %q", f.Answer != nil, f.Unusable, f.Failure, c.answer, c.unusable, c.reason)
			}
			if c.name == "malformed" && f.Cost == nil {
				t.Fatal("an unusable answer's usage is not recorded: it was spent")
			}
		})
	}
}

// The endpoint's setup or an outage is the agent's failure (Unusable
// false): a bad key, an unknown model, a 5xx past the retries, nothing
// listening.
func TestOpenAITheAgentsFailures(t *testing.T) {
	for _, c := range []struct {
		name     string
		reply    openaifake.Reply
		requests int
		reason   string
	}{
		{"401", openaifake.Unauthorized(), 1, "refused the key"},
		{"403", openaifake.Reply{Status: 403, Error: &openaifake.ErrorObject{Message: "Project does not have access", Type: "invalid_request_error"}}, 1, "refused the key"},
		{"404", openaifake.ModelNotFound(), 1, "not found"},
		{"500", openaifake.ServerError(), 1 + openAIMaxRetries, "500"},
		{"html 502", openaifake.Reply{Status: 502, Raw: "<html>Bad Gateway</html>"}, 1 + openAIMaxRetries, "502"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := openAIFake(t, openaifake.Options{Always: &c.reply})
			f := openAIRunOne(t, openAITest(t, srv.URL(), nil))
			if f.Unusable || f.Answer != nil || !strings.Contains(f.Failure, c.reason) {
				t.Fatalf("unusable %v, failure %q: want the agent's failure with %q", f.Unusable, f.Failure, c.reason)
			}
			if n := len(srv.Requests()); n != c.requests {
				t.Fatalf("%d requests, want %d", n, c.requests)
			}
		})
	}
	t.Run("connection refused", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		f := openAIRunOne(t, openAITest(t, "http://"+addr+"/v1", nil))
		if f.Unusable || !strings.Contains(f.Failure, "unreachable") {
			t.Fatalf("unusable %v, failure %q", f.Unusable, f.Failure)
		}
	})
}

// A 429's Retry-After is honoured, in seconds or as an HTTP date, up to
// the bound; one asking for longer fails at once, as the agent's failure;
// the wait ends with the scan.
func TestOpenAIRetryAfter(t *testing.T) {
	t.Run("seconds, within the bound", func(t *testing.T) {
		srv := openAIFake(t, openaifake.Options{})
		srv.Script(openaifake.RateLimited("1"))
		r := openAITest(t, srv.URL(), nil)
		r.retryBound = 5 * time.Second
		start := time.Now()
		f := openAIRunOne(t, r)
		if took := time.Since(start); f.Failure != "" || took < 900*time.Millisecond || took > 4*time.Second {
			t.Fatalf("failure %q after %s: want the answer after about 1s", f.Failure, took)
		}
	})
	t.Run("HTTP date, within the bound", func(t *testing.T) {
		srv := openAIFake(t, openaifake.Options{})
		srv.Script(openaifake.RateLimited(time.Now().Add(2 * time.Second).UTC().Format(http.TimeFormat)))
		r := openAITest(t, srv.URL(), nil)
		r.retryBound = 5 * time.Second
		start := time.Now()
		f := openAIRunOne(t, r)
		if took := time.Since(start); f.Failure != "" || took < 500*time.Millisecond || took > 4*time.Second {
			t.Fatalf("failure %q after %s: want the answer after 1-2s", f.Failure, took)
		}
	})
	t.Run("beyond the bound", func(t *testing.T) {
		srv := openAIFake(t, openaifake.Options{})
		srv.Script(openaifake.RateLimited("3600"))
		r := openAITest(t, srv.URL(), nil)
		r.retryBound = 2 * time.Second
		start := time.Now()
		f := openAIRunOne(t, r)
		if took := time.Since(start); f.Unusable || !strings.Contains(f.Failure, "rate limited") || !strings.Contains(f.Failure, "3600") || took > time.Second {
			t.Fatalf("unusable %v, failure %q after %s: want the agent's failure at once", f.Unusable, f.Failure, took)
		}
		if n := len(srv.Requests()); n != 1 {
			t.Fatalf("%d requests, want 1", n)
		}
	})
	t.Run("the bound is at most the timeout", func(t *testing.T) {
		cfg := Config{Endpoint: "http://127.0.0.1:1/v1", Model: "m", Timeout: 3 * time.Second}
		if r, err := newOpenAIRunner(cfg, nil); err != nil || r.retryBound != 3*time.Second {
			t.Fatalf("bound %v, %v: want the 3s timeout", r, err)
		}
		cfg.Timeout = time.Hour
		if r, err := newOpenAIRunner(cfg, nil); err != nil || r.retryBound != openAIRetryBound {
			t.Fatalf("bound %v, %v: want %s", r, err, openAIRetryBound)
		}
	})
	t.Run("cancelled while waiting", func(t *testing.T) {
		srv := openAIFake(t, openaifake.Options{})
		srv.Script(openaifake.RateLimited("30"))
		r := openAITest(t, srv.URL(), nil)
		r.retryBound = time.Minute
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(200*time.Millisecond, cancel)
		start := time.Now()
		_, err := r.run(ctx, testDossier("fp1", "# d\n"))
		if took := time.Since(start); !errors.Is(err, context.Canceled) || took > 3*time.Second {
			t.Fatalf("err %v after %s: want the cancellation, promptly", err, took)
		}
	})
}

func TestOpenAIConfigErrorsNameTheKey(t *testing.T) {
	t.Setenv("TEST_OPENAI_UNSET", "")
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Model: "m"}, "selfDiagnosis.endpoint"},
		{Config{Endpoint: "127.0.0.1:11434/v1", Model: "m"}, "selfDiagnosis.endpoint"},
		{Config{Endpoint: "ftp://h/v1", Model: "m"}, "selfDiagnosis.endpoint"},
		{Config{Endpoint: "http://127.0.0.1:11434/v1"}, "selfDiagnosis.model"},
		{Config{Endpoint: "http://h/v1", Model: "m", APIKeyEnv: "TEST_OPENAI_UNSET"}, "selfDiagnosis.apiKeyEnv"},
		{Config{Endpoint: "http://h/v1", Model: "m", APIKeyEnv: "GH_TOKEN"}, "selfDiagnosis.apiKeyEnv"},
		{Config{Endpoint: "http://h/v1", Model: "m", PricePerMillionInput: -1}, "pricePerMillion"},
	} {
		c.cfg.Harness = HarnessOpenAI
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one naming %s", c.cfg, err, c.want)
		}
	}
}

// A dossier over the inline limit is cut, with a note, not referred to a
// file the model cannot read.
func TestOpenAIInlinesABigDossierCut(t *testing.T) {
	big := strings.Repeat("line of the log, quite long indeed\n", 4000)
	d := openAIInline(testDossier("fp", big))
	if len(d.Markdown) > inlineLimit || !strings.Contains(d.Markdown, "more bytes are not shown") {
		t.Fatalf("cut dossier is %d bytes", len(d.Markdown))
	}
	if p := Prompt(d); !strings.Contains(p, "BEGIN DOSSIER-DATA-") {
		t.Fatal("the cut dossier is not quoted inline")
	}
	if d := openAIInline(testDossier("fp", "small\n")); d.Markdown != "small\n" {
		t.Fatal(d.Markdown)
	}
}
