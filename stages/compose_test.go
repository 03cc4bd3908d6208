package stages

import (
	"strings"
	"testing"

	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/redact/redacttest"
	"github.com/the-loop/the-loop-diagnose/stages/group"
	"github.com/the-loop/the-loop-diagnose/stages/issue"
)

// hostileProse is what a prompt-injected agent or a user writing into an
// error message would try, in every field that reaches the issue.
const hostileProse = "cc @acme/security and @octocat; see acme/private#7, #12 and GH-3. Fixes #1. " +
	"![p](https://attacker.example/pixel.png) <img src=https://attacker.example/i.png> " +
	"<details><summary>x</summary>hidden</details> <!-- the-loop-diagnose fingerprint:v2:deadbeef --> " +
	"[docs](https://attacker.example/) &#64;octocat www.attacker.example the-loop\u00a0start the-loop\u3000stop the-loop\vdo"

func TestComposeLeavesNothingLive(t *testing.T) {
	g := sampleGroup()
	// A record whose allow-listed fields carry structures and markup.
	g.Samples[2].Fields.Set("source", map[string]any{"dsn": "postgres://app:pw0rdSecret1@db/x", "token": "ghp_" + strings.Repeat("Q7w8", 9)})
	g.Samples[2].Fields.Set("via", []any{"@octocat", "#9"})
	g.Samples[2].Fields.Set("error", hostileProse)
	g.Samples[1].Fields.Set("harness", hostileProse[:min(len(hostileProse), 90)]) // shown in the distinct values
	g.Samples[1].Fields.Set("version", "1.2.3 @octocat")                          // not a version: not shown
	for _, o := range g.Samples {                                                 // as dedup counts them
		group.TallyRecord(&g.Tally, o.Record)
	}
	g.Event = "agent.gave_up` @octocat <img src=x> `"
	g.Template = hostileProse
	d := pipeline.Dossier{Group: g, Markdown: BuildDossier(g, testScrubber, DossierMaxChars), Environment: Environment("1.0")}
	conf := 0.99
	f := pipeline.Finding{Dossier: d, Answer: &pipeline.Answer{
		Title: hostileProse, Summary: hostileProse, RootCause: hostileProse, SuggestedFix: hostileProse,
		Verdict: "environment " + hostileProse, Confidence: &conf, Evidence: []string{hostileProse, "@team"},
	}}
	title, body := Compose(f, ComposeConfig{Scrubber: testScrubber, Repo: "o/r", Label: "the-loop: self-diagnosed"})
	for name, text := range map[string]string{"title": title, "body": redacttest.WithoutMarkers(body)} {
		if kind, m := redacttest.LiveConstruct(text); kind != "" {
			t.Errorf("%s keeps a live %s %q:\n%s", name, kind, m, text)
		}
		for _, leak := range []string{"pw0rdSecret1", "Q7w8Q7w8", "the-loop start", "the-loop stop", "the-loop do"} {
			if strings.Contains(strings.Join(strings.Fields(text), " "), leak) {
				t.Errorf("%s holds %q", name, leak)
			}
		}
	}
	if !strings.Contains(body, "- harness: ") || strings.Contains(body, "1.2.3 @octocat") {
		t.Errorf("the distinct values are not shown, or a version that is not one is:\n%s", body)
	}
	if got := strings.Count(body, "<!-- the-loop-diagnose fingerprint:"); got != 1 {
		t.Errorf("body carries %d fingerprint markers, want exactly the tool's own one", got)
	}
	if !strings.Contains(body, issue.FingerprintMarker(g.Fingerprint)) {
		t.Error("the tool's own marker is missing")
	}
}

func TestDossierShowsOnlyNamesInline(t *testing.T) {
	g := sampleGroup()
	g.Event = "poll.failed` **bold** [x](https://e.example) `"
	md := BuildDossier(g, testScrubber, DossierMaxChars)
	if strings.Contains(md, "- Event: `poll.failed`") {
		t.Fatalf("an event name with a backtick broke out of its code span:\n%s", md)
	}
	if !strings.Contains(md, "- Event:\n\n```") {
		t.Fatalf("an event that is not a name is not fenced:\n%s", md)
	}
	g.Event = "poll.comment_failed"
	if md := BuildDossier(g, testScrubber, DossierMaxChars); !strings.Contains(md, "- Event: `poll.comment_failed`") {
		t.Fatalf("a plain event name is not shown inline:\n%s", md)
	}
}

// The Environment names the records' versions, else the configured one.
func TestComposeEnvironmentVersions(t *testing.T) {
	g := sampleGroup()
	f := pipeline.Finding{Dossier: pipeline.Dossier{Group: g, Environment: Environment("1.0")}}
	if env := composeEnvironment(f, "2.7.1"); !strings.Contains(env, "- Version: 2.7.1 (as configured: the records name none)\n") || !strings.Contains(env, "- OS: ") {
		t.Errorf("no versions in the records: %q", env)
	}
	if env := composeEnvironment(f, ""); !strings.Contains(env, "- Version: not recorded in the log\n") {
		t.Errorf("no versions anywhere: %q", env)
	}
	for i, v := range []string{"3.0.0", "3.0.0", "v3.1.0-rc.1", "not-a-version"} {
		f.Samples[i%len(f.Samples)].Fields.Set("version", v)
		group.TallyRecord(&f.Group.Tally, f.Samples[i%len(f.Samples)].Record)
	}
	if env := composeEnvironment(f, "2.7.1"); !strings.Contains(env, "- Versions: 3.0.0 ×2, v3.1.0-rc.1 ×1\n") {
		t.Errorf("records' versions: %q", env)
	}
}
