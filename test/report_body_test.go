package test

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// A defect filed by the builtin agent reads like a bug report: a title in
// words, the counts and distinct values of what the records share, a few
// sample records, the traceback as real lines, the deployment's versions,
// and nothing addressed to the operator.
func TestFiledIssueReadsLikeABugReport(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{harness: "builtin"})
	const traceback = "Traceback (most recent call last):\n" +
		"  File \"/srv/app/worker/dispatch.py\", line 88, in handle\n" +
		"    result = route(event)\n" +
		"  File \"/srv/app/worker/router.py\", line 41, in route\n" +
		"    return HANDLERS[event[\"harness\"]](event)\n" +
		"KeyError: 'harness_config'"
	var lines []string
	for i := range 50 {
		harness, version := "claude", "1.4.1"
		if i%3 == 0 {
			harness = "cursor"
		}
		if i%2 == 0 { // a rolling upgrade: two replicas, one upgraded
			version = "1.4.2"
		}
		lines = append(lines, failure(t0.Add(time.Duration(i)*3*time.Minute), "dispatch.failed", traceback,
			"harness", harness, "version", version, "request_id", "req-"+strings.Repeat("a", 8)+string(rune('a'+i%26))))
	}
	d.appendLog(lines...)
	if res := d.run("run"); res.code != 0 {
		t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
	}
	issues := gh.Issues()
	if len(issues) != 1 {
		t.Fatalf("want 1 issue filed, got %d", len(issues))
	}
	title, body := issues[0].Title, issues[0].Body
	t.Logf("filed title: %s", title)
	t.Logf("filed body (%d bytes):\n%s", len(body), body)

	if strings.Contains(title, "<*>") || strings.Contains(title, "[]") || len([]rune(title)) > 100 {
		t.Errorf("title %q: want no masks, no empty brackets, at most 100 characters", title)
	}
	if !strings.HasPrefix(title, "[self-diagnosed] ") || !strings.Contains(title, "KeyError") {
		t.Errorf("title %q does not name the defect", title)
	}
	if len(body) >= 8<<10 {
		t.Errorf("body is %d bytes, want under 8 KB", len(body))
	}
	if n := strings.Count(body, `{"`); n > 3 {
		t.Errorf("body quotes %d records, want at most 3", n)
	}
	// The counts are over all 50 occurrences, not the 20 samples kept.
	for _, want := range []string{"- Occurrences: 50\n", "- First seen: 2026-11-28T09:00:00Z\n", "- Last seen: 2026-11-28T11:27:00Z\n",
		"- Rate: 20.4 per hour\n", "\nValues seen:\n", "- harness: claude ×33, cursor ×17\n", "- level: error ×50\n"} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q", want)
		}
	}
	if strings.Contains(body, "newest records") {
		t.Error("the counts are over the samples kept, not every occurrence")
	}
	// The traceback as real lines inside a fence.
	fence := regexp.MustCompile("(?s)\n(`{3,})\n(Traceback \\(most recent call last\\):\n.*?)\n`{3,}\n").FindStringSubmatch(body)
	if fence == nil || !strings.Contains(fence[2], "\n  File ") || !strings.HasSuffix(fence[2], "KeyError: 'harness_config'") {
		t.Error("the traceback is not shown as lines in a fenced block")
	}
	if strings.Contains(body, `\n  File`) {
		t.Error("the traceback still shows as an escaped one-line string")
	}
	env := body[strings.Index(body, "## Environment"):]
	if !strings.Contains(env[:strings.Index(env, "---")], "- Versions: 1.4.1 ×25, 1.4.2 ×25\n") {
		t.Errorf("Environment lacks the deployment's versions 1.4.1 and 1.4.2 with their counts")
	}
	if footer := body[strings.LastIndex(body, "\n---\n"):]; !regexp.MustCompile(`the-loop-diagnose \S+ from`).MatchString(footer) {
		t.Errorf("the footer does not name this tool's version: %q", footer)
	}
	order := []string{"## Summary", "## Root cause", "## Suggested fix", "## Evidence", "## Environment"}
	for i := 1; i < len(order); i++ {
		if a, b := strings.Index(body, order[i-1]), strings.Index(body, order[i]); a < 0 || b < a {
			t.Errorf("%q does not come before %q", order[i-1], order[i])
		}
	}
	lower := strings.ToLower(body)
	for _, w := range []*regexp.Regexp{regexp.MustCompile(`\byou\b|\byour\b`), regexp.MustCompile(`run an agent|agent harness|--harness`),
		regexp.MustCompile(`the dossier|dossier\.md`), regexp.MustCompile(`\boperator\b|selfdiagnosis\.`)} {
		if m := w.FindString(lower); m != "" {
			t.Errorf("body addresses the operator: %q", m)
		}
	}
	if strings.Contains(body, "req-aaaaaaaa") {
		t.Error("body holds a request id the allow-list drops")
	}
}
