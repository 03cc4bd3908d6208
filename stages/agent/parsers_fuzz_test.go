package agent

import (
	"strings"
	"testing"

	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// The harnesses' output parsers take whatever a CLI printed: they never
// panic, an answer always has a title, and a cost is never negative (the
// source finder's parsers of error text: stages.FuzzSourceParsers).
func FuzzHarnessOutputParsers(f *testing.F) {
	f.Add([]byte(`{"type":"item.completed","item":{"type":"agent_message","text":"{\"title\":\"T\",\"summary\":\"S\"}"}}`+"\n"+`{"type":"turn.completed","usage":{"input_tokens":10,"output_tokens":3}}`), []byte(""))
	f.Add([]byte(`{"response":"{\"title\":\"T\"}","stats":{"models":{"m":{"tokens":{"prompt":5,"candidates":2}}}}}`), []byte(`{"error":{"type":"auth","message":"no","code":401}}`))
	f.Add([]byte(`{"type":"result","is_error":false,"result":"{\"title\":\"T\"}","total_cost_usd":-1,"usage":{"input_tokens":-5}}`), []byte("x"))
	f.Add([]byte("Traceback (most recent call last):\n  File \"app/x.py\", line 3, in f\n    at com.acme.W.run(W.java:12)\n main.go:7 +0x1"), []byte(""))
	f.Fuzz(func(t *testing.T, stdout, other []byte) {
		check := func(name string, a *pipeline.Answer, c *pipeline.Cost) {
			if a != nil && strings.TrimSpace(a.Title) == "" {
				t.Fatalf("%s: an answer without a title", name)
			}
			if c != nil && (c.USD < 0 || c.InputTokens < 0 || c.OutputTokens < 0) {
				t.Fatalf("%s: a negative cost %+v", name, c)
			}
		}
		a, c, _ := codexAnswer(stdout, other)
		check("codex", a, c)
		a, c, _ = geminiAnswer(stdout)
		check("gemini", a, c)
		_ = geminiFailure(stdout, other)
		a, c, _ = envelopeAnswer(HarnessClaude, stdout)
		check("claude", a, c)
	})
}
