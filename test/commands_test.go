package test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
)

// canonicalEntries are the keys of a state map that are this tool's own
// (not the copies kept for the-loop under its v1 fingerprints).
func canonicalEntries(d *deployment, key string) []string {
	var out []string
	for fp, raw := range d.stateMap(key) {
		var e map[string]any
		if json.Unmarshal(raw, &e) != nil || e["alias_of"] == nil {
			out = append(out, fp)
		}
	}
	return out
}

// forget makes the state forget a defect: an abandoned one is then new to
// the next scan that sees it (where retry would have filed it from the
// backlog), the-loop's copies go with it, an unknown fingerprint is an
// error naming it, and a filed one is found again on GitHub, not filed
// twice.
func TestForgetMakesADefectNewAgain(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{agentMode: "garbage"})
	line := failure(t0, "dispatch.failed", "boom: the queue refused the delivery")
	d.appendLog(line)
	for _, after := range []time.Duration{time.Hour, 2 * time.Hour, 3 * time.Hour} {
		d.run("run", "--now", t0.Add(after).Format(time.RFC3339))
	}
	abandoned := canonicalEntries(d, "abandoned")
	if len(abandoned) != 1 || len(d.stateMap("abandoned")) < 2 {
		t.Fatalf("want one abandoned defect with the-loop's copy, got %s", d.readState()["abandoned"])
	}
	fp := abandoned[0]

	res := d.run("forget", fp, "v3:0000000000000000")
	if res.code != 1 || !strings.Contains(res.stderr, "not in the state (see status): v3:0000000000000000") {
		t.Fatalf("forget with an unknown fingerprint: exit %d, want 1 naming it\n%s%s", res.code, res.stdout, res.stderr)
	}
	if !strings.Contains(res.stdout, "forgot "+fp+": removed from abandoned, attempts") || !strings.Contains(res.stdout, "treats it as new") {
		t.Fatalf("forget does not say what it removed:\n%s", res.stdout)
	}
	if n := len(d.stateMap("abandoned")); n != 0 {
		t.Fatalf("after forget %d abandoned entries remain (the-loop's copies too must go): %s", n, d.readState()["abandoned"])
	}
	if len(d.stateMap("attempts")) != 0 || len(d.stateMap("deferred")) != 0 {
		t.Fatalf("after forget: attempts %s deferred %s", d.readState()["attempts"], d.readState()["deferred"])
	}
	// Forgotten, not retried: nothing waits in the backlog, so a scan with
	// no new lines files nothing; the next occurrence is a new defect.
	d.env = append(d.env, "FAKE_AGENT_MODE=valid")
	if res := d.run("run", "--now", t0.Add(27*time.Hour).Format(time.RFC3339)); res.code != 0 || gh.CountCreates() != 0 {
		t.Fatalf("scan after forget, no new lines: exit %d, %d issues\n%s", res.code, gh.CountCreates(), res.stderr)
	}
	d.appendLog(failure(t0.Add(28*time.Hour), "dispatch.failed", "boom: the queue refused the delivery"))
	if res := d.run("run", "--now", t0.Add(28*time.Hour+time.Minute).Format(time.RFC3339)); res.code != 0 || gh.CountCreates() != 1 {
		t.Fatalf("the forgotten defect recurred: exit %d, %d issues, want it filed as new\n%s", res.code, gh.CountCreates(), res.stderr)
	}

	// A filed defect forgotten: its issue stays, and the next sighting is
	// counted there, not filed again.
	res = d.run("forget", fp)
	if res.code != 0 || !strings.Contains(res.stdout, "removed from reported") || !strings.Contains(res.stdout, "its issue #1 stays on GitHub") {
		t.Fatalf("forget of a filed defect: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	d.appendLog(failure(t0.Add(30*time.Hour), "dispatch.failed", "boom: the queue refused the delivery"))
	if res := d.run("run", "--now", t0.Add(30*time.Hour+time.Minute).Format(time.RFC3339)); res.code != 0 || gh.CountCreates() != 1 {
		t.Fatalf("after forgetting a filed defect: exit %d, %d issues, want still 1\n%s", res.code, gh.CountCreates(), res.stderr)
	}
	if len(canonicalEntries(d, "reported")) != 1 {
		t.Fatalf("the defect found on GitHub again is not recorded as reported: %s", d.readState()["reported"])
	}
	if res := d.run("forget"); res.code != 2 {
		t.Fatalf("forget with no fingerprint: exit %d, want 2", res.code)
	}
}

// help COMMAND and COMMAND --help print that command's usage and its own
// flags on stdout and exit 0; help alone lists every command.
func TestHelpPrintsOneCommandsFlags(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, nil, deployOpts{})
	list := d.bare("help")
	if list.code != 0 || list.stderr != "" {
		t.Fatalf("help: exit %d\n%s", list.code, list.stderr)
	}
	flag := regexp.MustCompile(`(?m)^\s+(?:-\w, )?(--[a-z-]+)`)
	own := map[string][]string{ // flags only that command has
		"run":     {"--dry-run"},
		"watch":   {"--dry-run", "--metrics-addr"},
		"replay":  {"--stage"},
		"status":  {"--json"},
		"doctor":  {"--json", "--no-agent"},
		"retry":   {"--all-abandoned"},
		"forget":  {},
		"redact":  {},
		"version": {"--json"},
	}
	others := map[string]bool{"--dry-run": true, "--metrics-addr": true, "--stage": true, "--json": true, "--all-abandoned": true, "--no-agent": true}
	for name, want := range own {
		if !regexp.MustCompile(`(?m)^  the-loop-diagnose ` + name + ` `).MatchString(list.stdout) {
			t.Errorf("help does not list %s:\n%s", name, list.stdout)
		}
		for _, args := range [][]string{{"help", name}, {name, "--help"}, {name, "-h"}} {
			res := d.bare(args...)
			if res.code != 0 || res.stderr != "" || !strings.HasPrefix(res.stdout, "Usage: the-loop-diagnose "+name+" ") {
				t.Errorf("%v: exit %d, stderr %q\n%s", args, res.code, res.stderr, res.stdout)
				continue
			}
			if strings.Contains(res.stdout, "Usage:\n") {
				t.Errorf("%v printed the whole command list", args)
			}
			got := map[string]bool{}
			for _, m := range flag.FindAllStringSubmatch(res.stdout, -1) {
				got[m[1]] = true
			}
			for _, f := range want {
				if !got[f] {
					t.Errorf("%v lacks its flag %s:\n%s", args, f, res.stdout)
				}
			}
			for f := range others {
				if got[f] && !contains(want, f) {
					t.Errorf("%v shows %s, another command's flag:\n%s", args, f, res.stdout)
				}
			}
		}
	}
	if res := d.bare("help", "frobnicate"); res.code != 2 || !strings.Contains(res.stderr, `unknown command "frobnicate"`) {
		t.Errorf("help of an unknown command: exit %d\n%s", res.code, res.stderr)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
