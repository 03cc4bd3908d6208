package stages

import (
	"context"
	"testing"
	"time"

	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/stages/agent"
	"github.com/the-loop/the-loop-diagnose/store"
)

func TestAgentVerdictSettlesOnlyOnVerifiedEvidence(t *testing.T) {
	const dossier = "Records:\n\n```\n{\"error\":\"write /var/lib/loop/blob: no space left on device\",\"event\":\"dispatch.failed\"}\n```\n"
	const good = "`write /var/lib/loop/blob: no space left on device`"
	c := func(f float64) *float64 { return &f }
	cases := []struct {
		name   string
		answer *pipeline.Answer
		settle bool
	}{
		{"confident environment quoting the dossier", &pipeline.Answer{Verdict: "environment", Confidence: c(0.9), Evidence: []string{good}}, true},
		{"confident transient quoting the dossier", &pipeline.Answer{Verdict: "transient", Confidence: c(0.8), Evidence: []string{"line 1: " + good}}, true},
		{"fabricated quote", &pipeline.Answer{Verdict: "environment", Confidence: c(0.99), Evidence: []string{"`ENOSPC on /dev/sda1 (disk 100% full)`"}}, false},
		{"one fabricated among good", &pipeline.Answer{Verdict: "environment", Confidence: c(0.99), Evidence: []string{good, "`the VPN was down at the time`"}}, false},
		{"empty evidence", &pipeline.Answer{Verdict: "environment", Confidence: c(0.99), Evidence: []string{}}, false},
		{"no evidence", &pipeline.Answer{Verdict: "transient", Confidence: c(0.95)}, false},
		{"blank evidence", &pipeline.Answer{Verdict: "transient", Confidence: c(0.95), Evidence: []string{"  "}}, false},
		{"bug", &pipeline.Answer{Verdict: "bug", Confidence: c(0.99), Evidence: []string{good}}, false},
		{"inconclusive", &pipeline.Answer{Verdict: "inconclusive", Confidence: c(0.99), Evidence: []string{good}}, false},
		{"low confidence", &pipeline.Answer{Verdict: "environment", Confidence: c(0.79), Evidence: []string{good}}, false},
		{"no confidence", &pipeline.Answer{Verdict: "environment", Evidence: []string{good}}, false},
		{"confidence over 1", &pipeline.Answer{Verdict: "environment", Confidence: c(7), Evidence: []string{good}}, false},
		{"malformed verdict", &pipeline.Answer{Verdict: "ENVIRONMENT!", Confidence: c(0.95), Evidence: []string{good}}, false},
		{"no verdict", &pipeline.Answer{Title: "t"}, false},
		{"nil", nil, false},
	}
	for _, tc := range cases {
		s := AgentSettlement(tc.answer, dossier, 0.8)
		if got := s != nil; got != tc.settle {
			t.Errorf("%s: settled %v, want %v", tc.name, got, tc.settle)
		}
		if s != nil && !AgentSettledEarlier(store.Settlement{Verdict: string(s.Verdict), Evidence: s.Evidence}) {
			t.Errorf("%s: the settlement would not hold in dedup", tc.name)
		}
	}
	// A settlement an older version made on unverified evidence no longer holds.
	if AgentSettledEarlier(store.Settlement{Verdict: "environment", Evidence: map[string]any{"agent_evidence": []string{"x"}}}) {
		t.Error("an unverified agent settlement holds")
	}
}

// Malformed verdict fields cost the verdict, never the answer: it is still
// parsed, its verdict is inconclusive or absent, and the gate lets it through.
func TestMalformedVerdictsNeverSuppressAReport(t *testing.T) {
	const dossier = "```\n{\"error\":\"write /var/lib/loop/blob: no space left on device\"}\n```\n"
	const quote = `"evidence":["` + "`write /var/lib/loop/blob: no space left on device`" + `"]`
	for _, fields := range []string{
		`"verdict":"environmental","confidence":0.99,` + quote,
		`"verdict":42,"confidence":0.99,` + quote,
		`"verdict":["environment"],"confidence":0.99,` + quote,
		`"verdict":"environment","confidence":"0.99",` + quote,
		`"verdict":"environment","confidence":1.5,` + quote,
		`"verdict":"environment","confidence":-0.1,` + quote,
		`"verdict":"environment","confidence":null,` + quote,
		`"verdict":"environment","confidence":true,` + quote,
		`"verdict":"environment","confidence":1e400,` + quote,
		`"verdict":"environment","confidence":0.99,"evidence":"write /var/lib/loop/blob: no space left on device"`,
		`"verdict":"environment","confidence":0.99,"evidence":[1,2]`,
		`"verdict":"environment","confidence":0.99,"evidence":{"a":"write /var/lib/loop/blob: no space left on device"}`,
		`"verdict":"environment","confidence":0.99,"evidence":[["write /var/lib/loop/blob: no space left on device"]]`,
	} {
		out := `{"title":"Disk full","summary":"The disk filled up.",` + fields + `}`
		a, err := agent.ParseAnswer([]byte(out))
		if err != nil {
			t.Errorf("%s: the answer was lost: %v", fields, err)
			continue
		}
		if AgentSettlement(a, dossier, 0.8) != nil {
			t.Errorf("%s: settled on a malformed verdict (%+v)", fields, a)
		}
		f := pipeline.Finding{Answer: a}
		f.Fingerprint, f.Verdict, f.Markdown = "fp", pipeline.VerdictNew, dossier
		got, err := pipeline.Collect(context.Background(), NewGate(GateConfig{Store: store.OpenMemory(), Now: time.Now, MaxIssuesPerDay: 3, Confidence: 0.8}), f)
		if err != nil || len(got) != 1 || got[0].Verdict != pipeline.VerdictNew {
			t.Errorf("%s: gate made it %+v (%v), want it filed", fields, got, err)
		}
	}
	a, _ := agent.ParseAnswer([]byte(`{"title":"T","summary":"S","verdict":"Definitely!"}`))
	if a.Verdict != "inconclusive" {
		t.Errorf("an unknown verdict word became %q, want inconclusive", a.Verdict)
	}
}
