package stages

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/store"
)

// record builds an occurrence-shaped item for the dedup stage.
func triageOcc(line int64, fp, event, errText string, retry *bool, item string) pipeline.Occurrence {
	f := map[string]any{"event": event, "ts": now.Add(time.Duration(line) * time.Second).Format(time.RFC3339Nano), "work_item": item}
	if errText != "" {
		f["error"] = errText
	}
	if retry != nil {
		f["will_retry"] = *retry
	}
	return pipeline.Occurrence{Candidate: pipeline.Candidate{Record: pipeline.Record{Line: line, Fields: pipeline.FieldsOf(f)}}, Fingerprint: fp}
}

func success(line int64, event, item string) pipeline.Occurrence {
	o := triageOcc(line, "", event, "", nil, item)
	o.Reason = ReasonSuccess
	return o
}

var yes, no = true, false

func runDedup(t *testing.T, st *store.Store, items ...pipeline.Occurrence) map[string]pipeline.Group {
	t.Helper()
	got, err := pipeline.Collect(context.Background(), NewDedup(DedupConfig{Store: st, Now: func() time.Time { return now }, Policy: testPolicy()}), items...)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]pipeline.Group{}
	for _, g := range got {
		m[g.Fingerprint] = g
	}
	return m
}

func TestHealedTransientIsSettledWithEvidence(t *testing.T) {
	g := runDedup(t, store.OpenMemory(),
		triageOcc(1, "t", "dispatch.failed", "timeout talking to queue", &yes, "acme/w#1"),
		success(5, "dispatch.succeeded", "acme/w#1"),
		triageOcc(7, "t", "dispatch.failed", "timeout talking to queue", &yes, "acme/w#2"),
		success(9, "dispatch.succeeded", "acme/w#2"),
	)["t"]
	if g.Verdict != pipeline.VerdictSettled || g.Settle == nil || g.Settle.Verdict != pipeline.SettledHealed {
		t.Fatalf("healed transient: %+v", g)
	}
	if lines, _ := g.Settle.Evidence["lines"].([]int64); len(lines) != 2 {
		t.Fatalf("evidence = %+v", g.Settle.Evidence)
	}
}

func TestFailSafeHealing(t *testing.T) {
	cases := map[string][]pipeline.Occurrence{
		"success of another work item": {triageOcc(1, "t", "dispatch.failed", "x", &yes, "a"), success(2, "dispatch.succeeded", "b")},
		"success of another family":    {triageOcc(1, "t", "dispatch.failed", "x", &yes, "a"), success(2, "git.succeeded", "a")},
		"success before the failure":   {success(1, "dispatch.succeeded", "a"), triageOcc(2, "t", "dispatch.failed", "x", &yes, "a")},
		"a give-up is never healed":    {triageOcc(1, "t", "dispatch.failed", "x", &no, "a"), success(2, "dispatch.succeeded", "a")},
		"one of two unhealed":          {triageOcc(1, "t", "dispatch.failed", "x", &yes, "a"), triageOcc(2, "t", "dispatch.failed", "x", &yes, "b"), success(3, "dispatch.succeeded", "a")},
	}
	for name, items := range cases {
		g := runDedup(t, store.OpenMemory(), items...)["t"]
		if g.Verdict != pipeline.VerdictNew {
			t.Errorf("%s: verdict %s (%s), want new: a real defect must reach a human", name, g.Verdict, g.Reason)
		}
	}
}

func TestHealingThatRecursOftenIsFlakyAndGoesOn(t *testing.T) {
	st := store.OpenMemory()
	st.Update(func(s *store.State) error {
		for i := 0; i < 4; i++ {
			s.Heals["t"] = append(s.Heals["t"], now.Add(-time.Duration(i+1)*time.Hour))
		}
		s.Settled["t"] = store.Settlement{Verdict: string(pipeline.SettledHealed), Until: now.Add(time.Hour)}
		return nil
	})
	g := runDedup(t, st, triageOcc(1, "t", "dispatch.failed", "x", &yes, "a"), success(2, "dispatch.succeeded", "a"))["t"]
	if g.Verdict != pipeline.VerdictNew || g.Reason == "" {
		t.Fatalf("healed 5 times in 24 h must go on as flaky: %+v", g)
	}
}

func TestEnvironmentFailuresAreSettledButMixedOnesAreNot(t *testing.T) {
	env := []string{
		`exec: "claude": executable file not found in $PATH`,
		"POST https://api.github.com/repos/o/r/issues: 401 Bad credentials",
		"open /var/lib/the-loop/state.db: permission denied",
		"write /var/log/x: no space left on device",
		"dial tcp: lookup api.github.com on 10.0.0.2:53: no such host",
		"dial tcp: lookup api.github.com on 127.0.0.53:53: server misbehaving",
		"git clone: exit status 128: Host key verification failed.",
		"Get \"https://api.github.com\": x509: certificate signed by unknown authority",
	}
	for i, e := range env {
		fp := fmt.Sprint("e", i)
		g := runDedup(t, store.OpenMemory(), triageOcc(1, fp, "dispatch.failed", e, &no, "a"))[fp]
		if g.Verdict != pipeline.VerdictSettled || g.Settle == nil || g.Settle.Verdict != pipeline.SettledEnvironment {
			t.Errorf("%q: %+v, want settled as environment", e, g)
		}
	}
	g := runDedup(t, store.OpenMemory(),
		triageOcc(1, "m", "dispatch.failed", "open state.db: permission denied", &no, "a"),
		triageOcc(2, "m", "dispatch.failed", "panic: nil map write in scheduler.go", &no, "a"))["m"]
	if g.Verdict != pipeline.VerdictNew {
		t.Fatalf("a group with one real error was settled: %+v", g)
	}
}

func TestOperatorEnvironmentRule(t *testing.T) {
	rules, err := CompileEnvRules([]EnvRule{{Name: "vpn", Event: "git.*", Error: `corp-proxy refused`, Reason: "the VPN is down"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CompileEnvRules([]EnvRule{{Name: "bad", Error: "("}}); err == nil || !strings.Contains(err.Error(), "bad") {
		t.Fatalf("bad rule error = %v, want it to name the rule", err)
	}
	g := &pipeline.Group{Samples: []pipeline.Occurrence{triageOcc(1, "v", "git.push_failed", "corp-proxy refused CONNECT", &no, "a")}}
	if reason, _ := classifyEnvironment(g, rules); reason != "the VPN is down" {
		t.Fatalf("reason = %q", reason)
	}
}

func TestEnvironmentPersistingPastExpiryGoesToAHuman(t *testing.T) {
	st := store.OpenMemory()
	st.Update(func(s *store.State) error {
		s.Settled["e"] = store.Settlement{Verdict: string(pipeline.SettledEnvironment), At: now.Add(-8 * 24 * time.Hour), Until: now.Add(-24 * time.Hour)}
		return nil
	})
	g := runDedup(t, st, triageOcc(1, "e", "dispatch.failed", "no space left on device", &no, "a"))["e"]
	if g.Verdict != pipeline.VerdictNew || !strings.Contains(g.Reason, "persisted") {
		t.Fatalf("got %+v", g)
	}
}

func TestGateSettlesThenCapsAndCachesTheFinding(t *testing.T) {
	st := store.OpenMemory()
	st.Update(func(s *store.State) error { s.Posted = []time.Time{now.Add(-time.Hour)}; return nil })
	conf := 0.9
	mk := func(fp string, a *pipeline.Answer, cached bool) pipeline.Finding {
		f := pipeline.Finding{Answer: a}
		f.Fingerprint, f.Verdict = fp, pipeline.VerdictNew
		f.Markdown = "```\n{\"error\":\"write /data/x: no space left on device\"}\n```\n"
		if cached {
			f.Group.Finding = a
		}
		return f
	}
	bug := &pipeline.Answer{Title: "bug", Verdict: "bug"}
	got, err := pipeline.Collect(context.Background(), NewGate(GateConfig{Store: st, Now: func() time.Time { return now }, MaxIssuesPerDay: 3, Confidence: 0.8}),
		mk("env", &pipeline.Answer{Title: "e", Verdict: "environment", Confidence: &conf, Evidence: []string{"`no space left on device`"}}, false),
		mk("a", bug, false), mk("b", bug, true), mk("c", bug, false))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]pipeline.Verdict{"env": pipeline.VerdictSettled, "a": pipeline.VerdictNew, "b": pipeline.VerdictNew, "c": pipeline.VerdictDeferred}
	for _, f := range got {
		if f.Verdict != want[f.Fingerprint] {
			t.Errorf("%s: %s, want %s", f.Fingerprint, f.Verdict, want[f.Fingerprint])
		}
	}
	// The capped finding is deferred with its answer, so no agent runs again.
	o := pipeline.Outcome{Report: pipeline.Report{Finding: got[3]}, Status: pipeline.StatusDeferred}
	s := store.NewState()
	Apply(s, o, now, 3)
	if len(s.Deferred["c"].Finding) == 0 {
		t.Fatal("deferred finding not cached in state")
	}
}

// The hints in front of the environment regexps never rule out a text a
// regexp matches (for ASCII text; Unicode case folding such as 'ſ' for 's'
// may make a hint miss, which only sends the failure to a human).
func FuzzEnvironmentHintsNeverHideASign(f *testing.F) {
	for _, s := range []string{"exec: \"claude\": executable file not found in $PATH", "spawn git ENOENT",
		"HTTP 401 Unauthorized", "Bad Credentials", "EACCES: permission denied, open '/x'", "write /x: No Space Left On Device",
		"dial tcp: lookup api.github.com on 10.0.0.1:53: server misbehaving", "getaddrinfo EAI_AGAIN github.com",
		"Host key verification failed.", "x509: certificate signed by unknown authority", "SELF SIGNED CERTIFICATE IN CERTIFICATE CHAIN",
		"no such file or directory: exec /bin/x", "invalid_grant", "EDQUOT"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, c := range []byte(text) {
			if c >= 0x80 {
				return
			}
		}
		lower := strings.ToLower(text)
		for _, s := range environmentSigns {
			if s.re.MatchString(text) && !slices.ContainsFunc(s.hints, func(h string) bool { return strings.Contains(lower, h) }) {
				t.Fatalf("%q matches %q but holds none of its hints %q", text, s.re, s.hints)
			}
		}
	})
}
