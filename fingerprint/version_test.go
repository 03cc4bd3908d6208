package fingerprint

import (
	"slices"
	"testing"
)

// The previous releases' fingerprints stay aliases, computed exactly as they
// computed them (these values are the v2 and v3 releases' own output): a
// defect they filed, or the-loop filed, is never filed again after an
// upgrade to v4.
func TestOlderVersionsStayAliases(t *testing.T) {
	cases := []struct {
		in             Input
		v3, v2, legacy string
	}{
		{Input{Event: "dispatch.failed", Error: "claude exited 1 after 30s: pid 4242"}, "v3:91206b6295e58712", "v2:12dfb6365e196645", "70b41d191ee7a347"},
		{Input{Event: "git.push.failed", Error: "git push origin HEAD:refs/heads/feature/docs-fix: exit status 1: remote: error: GH007"}, "v3:729ed8ae68d3ecc8", "v2:62fe328c8d80bc0f", "c99a515315cd63be"},
		{Input{Event: "agent.crashed", Error: "Traceback (most recent call last):\n  File \"/srv/app/main.py\", line 12, in run\n    x = d['k']\nKeyError: 'k'"}, "v3:d8214a02b2ef6ddb", "v2:8ab0dd89448dffa2", "ea6ebc9f7995664e"},
		{Input{Event: "poll.comment_failed", Fields: MapFields{"source": "poll", "will_retry": false, "attempts": 3.0}}, "v3:993721777a47f1f7", "v2:a1b821d85b47e950", "f31b9186515f485e"},
	}
	for _, c := range cases {
		// The record's identity changes v3 and v4 only: v2 saw the raw text.
		c.in.Identity = [][2]int{{0, 3}}
		r := Compute(c.in)
		if r.Fingerprint[:3] != "v4:" || !slices.Equal(r.Aliases, []string{c.legacy, c.v3, c.v2}) {
			t.Errorf("Compute(%q) = %s %v; want a v4 fingerprint with aliases [%s %s %s]", c.in.Error, r.Fingerprint, r.Aliases, c.legacy, c.v3, c.v2)
		}
	}
	f, err := New([]Rule{{Name: "db", Event: "store.*", Fingerprint: "db-timeouts"}, {Name: "g", Event: "queue.*", Group: []string{"{{ event }}", "{{ template }}"}}})
	if err != nil {
		t.Fatal(err)
	}
	// An operator's fixed name keeps its fingerprint; a group rule's v2 form
	// is an alias.
	if got := f.Compute(Input{Event: "store.read", Error: "timeout 5s"}).Fingerprint; got != "v2:2bde8abd054e0161" {
		t.Errorf("fixed rule: %s, want the v2 release's v2:2bde8abd054e0161", got)
	}
	if got := f.Compute(Input{Event: "queue.stalled", Error: "stalled 5s"}); !slices.Contains(got.Aliases, "v2:469745496e0b7112") || !slices.Contains(got.Aliases, "v3:46b5c3fa425db72a") {
		t.Errorf("group rule: aliases %v lack the v2 release's v2:469745496e0b7112 or the v3 release's v3:46b5c3fa425db72a", got.Aliases)
	}
}

// The record's identity is masked in v3's template, wherever it stands.
func TestIdentityRangesAreMasked(t *testing.T) {
	text := "tmux send-keys -t loop-docs-134:0.0 failed for octo/widgets"
	in := Input{Event: "tmux.failed", Error: text, Identity: [][2]int{{18, 35}, {47, 59}}}
	other := Input{Event: "tmux.failed", Error: "tmux send-keys -t loop-auth-9:0.0 failed for globex/data-pipeline", Identity: [][2]int{{18, 33}, {45, 65}}}
	if a, b := Compute(in), Compute(other); a.Fingerprint != b.Fingerprint {
		t.Errorf("one defect, two fingerprints:\n%s %q\n%s %q", a.Fingerprint, a.Template, b.Fingerprint, b.Template)
	}
	// Bad ranges mask less, never panic.
	for _, bad := range [][][2]int{{{5, 3}}, {{0, 999}}, {{10, 20}, {15, 25}}, {{-1, 2}}} {
		_ = MaskIdentity(text, bad)
	}
	if got := MaskIdentity("abc def", [][2]int{{4, 7}, {0, 3}}); got != "abc "+identityPlaceholder {
		t.Errorf("out-of-order ranges: %q", got)
	}
}
