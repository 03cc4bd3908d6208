package test

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"testing"
)

var markerRE = regexp.MustCompile(`<!-- the-loop-diagnose fingerprint:(\S+) -->`)

// markerOf is the fingerprint an issue body's hidden marker names, or "".
func markerOf(body string) string {
	if m := markerRE.FindStringSubmatch(body); m != nil {
		return m[1]
	}
	return ""
}

// expectedFingerprints is what `replay --stage fingerprint` prints for the
// failure records lines, distinct and sorted.
func expectedFingerprints(t *testing.T, lines []string) []string {
	t.Helper()
	d := newDeployment(t, nil, deployOpts{})
	d.appendLog(lines...)
	res := d.run("replay", "--stage", "fingerprint", "--log", d.log)
	if res.code != 0 {
		t.Fatalf("replay: exit %d\n%s", res.code, res.stderr)
	}
	seen := map[string]bool{}
	var fps []string
	for _, line := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
		var rec struct{ Fingerprint string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Fingerprint == "" {
			t.Fatalf("replay printed %q", line)
		}
		if !seen[rec.Fingerprint] {
			seen[rec.Fingerprint] = true
			fps = append(fps, rec.Fingerprint)
		}
	}
	sort.Strings(fps)
	return fps
}
