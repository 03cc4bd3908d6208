package test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReplayPrintsEachStageAndWritesNothing(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, nil, deployOpts{harness: "builtin"})
	d.appendLog(info(t0, "dispatch.started"),
		failure(t0.Add(time.Second), "dispatch.failed", "HTTP 422: validation failed for pr #12"),
		`{"event":"broken"`,
		failure(t0.Add(2*time.Second), "dispatch.failed", "HTTP 422: validation failed for pr #99"),
		failure(t0.Add(3*time.Second), "dispatch.failed", "HTTP 410: issues disabled"),
		`{"ts":"2026-11-28T09:00:04Z","event":"diagnosis.failed","level":"error","error":"x"}`)
	before, _ := os.ReadFile(d.log)
	lines := func(stage string) []map[string]any {
		res := d.run("replay", "--stage", stage, "--log", d.log)
		if res.code != 0 {
			t.Fatalf("replay --stage %s: exit %d\n%s", stage, res.code, res.stderr)
		}
		var out []map[string]any
		for _, l := range splitLines(res.stdout) {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("replay --stage %s printed a non-JSON line %q", stage, l)
			}
			if _, ok := m["line"]; !ok {
				t.Fatalf("replay --stage %s: item without its line: %v", stage, m)
			}
			out = append(out, m)
		}
		return out
	}
	if n := len(lines("read")); n != 5 {
		t.Errorf("read: %d records, want 5 (one corrupt line skipped)", n)
	}
	fps := lines("fingerprint")
	if len(fps) != 3 || fps[0]["line"].(float64) != 2 || fps[2]["line"].(float64) != 5 {
		t.Fatalf("fingerprint: %v, want the 3 candidates in input order (never diagnosis.*)", fps)
	}
	if fps[0]["fingerprint"] != fps[1]["fingerprint"] || fps[0]["fingerprint"] == fps[2]["fingerprint"] {
		t.Errorf("422 twice must be one defect, 410 another: %v", fps)
	}
	if n := len(lines("dedup")); n != 2 {
		t.Errorf("dedup: %d groups, want 2", n)
	}
	for _, c := range lines("compose") {
		body, _ := c["body"].(string)
		if !strings.Contains(body, "<!-- the-loop:agent-comment -->") || strings.Contains(body, "acme/private") {
			t.Errorf("compose body lacks the marker or leaks a private field:\n%s", body)
		}
	}
	after, _ := os.ReadFile(d.log)
	if string(before) != string(after) {
		t.Error("replay wrote to the event log")
	}
	if _, err := os.Stat(d.state); err == nil {
		t.Error("replay wrote a state file")
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(d.state), "diagnoses.jsonl")); err == nil {
		t.Error("replay wrote a ledger")
	}
}
