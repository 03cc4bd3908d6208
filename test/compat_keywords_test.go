package test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// theLoopKeywordRE is the-loop's control.parse_command for one keyword: the
// literal keyword, any case, no \w, ':' or '-' on either side.
func theLoopKeywordRE(kw string) *regexp.Regexp {
	return regexp.MustCompile(`(?i)(?:^|[^\pL\pN_:-])` + regexp.QuoteMeta(kw) + `(?:$|[^\pL\pN_:-])`)
}

// withControlKeywords appends the-loop's routing.control.keywords to d's
// config, in the-loop's shape (command -> keyword).
func withControlKeywords(t *testing.T, d *deployment, keywords string) {
	t.Helper()
	f, err := os.OpenFile(d.config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("\nrouting:\n  control:\n    requireStartCommand: true\n    keywords:\n" + keywords); err != nil {
		t.Fatal(err)
	}
}

// A deployment's own control keywords (routing.control.keywords), quoted
// by a log line or by the agent's answer, reach the filed issue defanged
// with the-loop's marker, as the-loop's own scan writes them; the shipped
// defaults still are.
func TestDeploymentControlKeywordsAreDefanged(t *testing.T) {
	t.Parallel()
	const keywords = "      start: loop-go\n      stop: \"halt the loop\"\n      pause: \"\"\n"
	armed := []string{"loop-go", "halt the loop", "the-loop start", "the-loop stop", "the-loop execute"}
	check := func(t *testing.T, text string) {
		t.Helper()
		for _, kw := range armed {
			if m := theLoopKeywordRE(kw).FindString(text); m != "" {
				t.Errorf("the-loop would read %q as a command in:\n%s", m, text)
			}
		}
		for _, want := range []string{"l‹defanged›oop-go", "halt ‹defanged› the ‹defanged› loop", "the-loop ‹defanged› start"} {
			if !strings.Contains(strings.ToLower(text), want) {
				t.Errorf("missing the-loop's defanged form %q in:\n%s", want, text)
			}
		}
	}
	logText := "deploy hook failed: say loop-go or Halt The Loop, or the-loop start / THE-LOOP STOP, 12 times"

	t.Run("log text", func(t *testing.T) {
		t.Parallel()
		gh := newGitHub(t)
		d := newDeployment(t, gh, deployOpts{harness: "builtin"})
		withControlKeywords(t, d, keywords)
		d.appendLog(failure(t0, "deploy.failed", logText))
		if res := d.run("run"); res.code != 0 {
			t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
		}
		issues := gh.Issues()
		if len(issues) != 1 {
			t.Fatalf("want 1 issue, got %d", len(issues))
		}
		check(t, issues[0].Title+"\n"+issues[0].Body)
	})

	t.Run("agent answer", func(t *testing.T) {
		t.Parallel()
		gh := newGitHub(t)
		answer := `{"title":"loop-go is armed","summary":"Post loop-go or halt the loop, or the-loop start.",` +
			`"root_cause":"the LOOP-GO keyword; HALT  THE LOOP; the-loop execute","suggested_fix":"never say loop-go"}`
		d := newDeployment(t, gh, deployOpts{harness: "command\n  command: [/bin/sh, -c, " + quote("printf '%s' "+shellQuote(answer)) + "]"})
		withControlKeywords(t, d, keywords)
		d.appendLog(failure(t0, "deploy.failed", "deploy hook failed 3 times"))
		if res := d.run("run"); res.code != 0 {
			t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
		}
		issues := gh.Issues()
		if len(issues) != 1 {
			t.Fatalf("want 1 issue, got %d", len(issues))
		}
		check(t, issues[0].Title+"\n"+issues[0].Body)
	})

	t.Run("a keyword the-loop cannot read is an error", func(t *testing.T) {
		t.Parallel()
		d := newDeployment(t, nil, deployOpts{harness: "builtin"})
		withControlKeywords(t, d, "      start: [a, b]\n")
		res := d.run("run", "--dry-run")
		if res.code == 0 || !strings.Contains(res.stderr, "routing.control.keywords.start") {
			t.Fatalf("want a config error naming routing.control.keywords.start, got exit %d\n%s", res.code, res.stderr)
		}
	})
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
