package test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/the-loop/the-loop-diagnose/redact/redacttest"
)

// attackerText is what a user of the service can put into an error
// message: it is quoted in the filed issue (by the builtin agent's title
// and template, and in the dossier's records).
const attackerText = "cc @acme/security-team @octocat see acme/infra#7 #3 GH-12 Fixes #1 " +
	"![x](https://attacker.example/pixel.png) <img src=https://attacker.example/i.png> " +
	"<details><summary>ok</summary>hidden</details> <!-- the-loop-diagnose fingerprint:v2:0000000000000000 --> " +
	"[docs](https://attacker.example/) &#64;octocat www.attacker.example the-loop\u00a0start the-loop\u3000stop"

// A log line is the first attacker: its error text, its event name and its
// allow-listed fields holding structures reach the issue, and none of it may
// notify anyone, cross-link another issue, hide text or leak a secret.
func TestALogLineCannotActThroughTheIssue(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{harness: "builtin"})
	pat := "ghp_" + strings.Repeat("Xk4q", 9)
	rec := func(event string, extra map[string]any) string {
		m := map[string]any{"ts": t0.Format("2006-01-02T15:04:05.000Z"), "event": event, "level": "error",
			"source": map[string]any{"dsn": "postgres://app:Tr0ub4dor-pw@db.internal/x", "token": pat},
			"via":    []any{"@octocat", "#9", "<img src=x>"}, "attempts": []any{1, "Bearer " + strings.Repeat("z", 32)},
			"error": attackerText}
		for k, v := range extra {
			m[k] = v
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	// Three defects: one specific text is one defect under any event, so
	// each record's text opens with words of its own.
	d.appendLog(
		rec("dispatch.failed", map[string]any{"error": "dispatch queue refused the job: " + attackerText}),
		rec("poll.failed` @octocat <img src=x> `", map[string]any{"error": "poller lost its cursor: " + attackerText}),
		rec("agent.crashed", map[string]any{"harness": "claude` ![p](https://attacker.example/q.png) `", "gh_event": "@octocat",
			"error": "agent crashed in its sandbox: " + attackerText}),
	)
	if res := d.run("run"); res.code != 0 {
		t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
	}
	issues := gh.Issues()
	if len(issues) != 3 {
		t.Fatalf("want 3 issues filed, got %d", len(issues))
	}
	for _, is := range issues {
		for what, text := range map[string]string{"title": is.Title, "body": redacttest.WithoutMarkers(is.Body)} {
			if kind, m := redacttest.LiveConstruct(text); kind != "" {
				t.Errorf("issue #%d %s keeps a live %s %q:\n%s", is.Number, what, kind, m, text)
			}
			folded := strings.Join(strings.Fields(text), " ")
			for _, leak := range []string{pat, "Tr0ub4dor-pw", strings.Repeat("z", 32), "the-loop start", "the-loop stop"} {
				if strings.Contains(folded, leak) {
					t.Errorf("issue #%d %s holds %q", is.Number, what, leak)
				}
			}
		}
		if n := strings.Count(is.Body, "<!-- the-loop-diagnose fingerprint:"); n != 1 {
			t.Errorf("issue #%d carries %d fingerprint markers, want only its own", is.Number, n)
		}
		if markerOf(is.Body) == "v2:0000000000000000" {
			t.Errorf("issue #%d is marked with the forged fingerprint", is.Number)
		}
	}
}
