package test

import (
	"bytes"
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	fakegh "github.com/the-loop/the-loop-diagnose/fakes/github"
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

// fingerprintsOnGitHub maps each marker on the fake to its issue numbers.
func fingerprintsOnGitHub(gh *fakegh.Server) map[string][]int {
	out := map[string][]int{}
	for _, is := range gh.Issues() {
		fp := markerOf(is.Body)
		out[fp] = append(out[fp], is.Number)
	}
	return out
}

func TestTwoRunsStartedTogetherOnOneStatePostEachDefectOnce(t *testing.T) {
	want := expectedFingerprints(t, killDefects())
	for _, slowLookup := range []bool{false, true} {
		gh := newGitHub(t)
		if slowLookup {
			// Stretch the first run so the second surely starts inside it.
			gh.Inject(fakegh.RouteListIssues, fakegh.Slow(300*time.Millisecond))
		}
		d := newDeployment(t, gh, deployOpts{})
		d.appendLog(killDefects()...)
		var wg sync.WaitGroup
		stderr := make([]bytes.Buffer, 2)
		codes := make([]int, 2)
		for i := range 2 {
			cmd := d.command("run")
			cmd.Stderr = &stderr[i]
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd.Wait()
				codes[i] = cmd.ProcessState.ExitCode()
			}()
		}
		wg.Wait()
		for i := range 2 {
			if codes[i] != 0 {
				t.Fatalf("run %d exit %d\n%s", i, codes[i], stderr[i].String())
			}
		}
		skipped := 0
		for i := range 2 {
			if strings.Contains(stderr[i].String(), "skipping this scan") {
				skipped++
			}
		}
		on := fingerprintsOnGitHub(gh)
		if gh.CountCreates() != len(want) || len(on) != len(want) {
			t.Fatalf("slow=%v: %d creates for %d defects: %v", slowLookup, gh.CountCreates(), len(want), on)
		}
		for _, fp := range want {
			if len(on[fp]) != 1 {
				t.Fatalf("defect %s has issues %v, want exactly one", fp, on[fp])
			}
		}
		if slowLookup && skipped != 1 {
			t.Errorf("with the first run held up, exactly one run should skip on the lock; %d did:\n%s\n---\n%s",
				skipped, stderr[0].String(), stderr[1].String())
		}
		t.Logf("slow lookup %v: %d of 2 runs skipped on the lock", slowLookup, skipped)
	}
}

// occurrenceRow reads one row of the occurrence comment's table.
func occurrenceRow(body, row string) string {
	for _, line := range strings.Split(body, "\n") {
		if cells := strings.Split(line, "|"); len(cells) >= 3 && strings.TrimSpace(cells[1]) == row {
			return strings.TrimSpace(cells[2])
		}
	}
	return ""
}

func toolVersion(t *testing.T, d *deployment) string {
	res := d.run("version")
	f := strings.Fields(res.stdout)
	if res.code != 0 || len(f) != 2 {
		t.Fatalf("version: %q", res.stdout)
	}
	return f[1]
}

func TestFleetFilesOnceAndTheSecondDeploymentKeepsOneOccurrenceComment(t *testing.T) {
	gh := newGitHub(t)
	first := newDeployment(t, gh, deployOpts{})
	second := newDeployment(t, gh, deployOpts{})
	errText := "git push failed: exit status 128: remote rejected refs/heads/loop/fix-7"
	stamp := func(d time.Duration) string { return t0.Add(d).UTC().Format(time.RFC3339) }

	first.appendLog(failure(t0, "git.failed", errText))
	if res := first.run("run", "--now", stamp(time.Minute)); res.code != 0 || gh.CountCreates() != 1 {
		t.Fatalf("first deployment: exit %d, %d issues\n%s", res.code, gh.CountCreates(), res.stderr)
	}
	issue := gh.Issues()[0]

	// The second deployment meets the same defect twice: no new issue, one
	// occurrence comment with its tally.
	second.appendLog(failure(t0.Add(10*time.Minute), "git.failed", errText), failure(t0.Add(11*time.Minute), "git.failed", errText))
	if res := second.run("run", "--now", stamp(12*time.Minute)); res.code != 0 {
		t.Fatalf("second deployment: exit %d\n%s", res.code, res.stderr)
	}
	if gh.CountCreates() != 1 {
		t.Fatalf("the second deployment filed the defect again: %d issues", gh.CountCreates())
	}
	reported := second.stateMap("reported")
	fp := markerOf(issue.Body)
	var rep struct {
		URL    string `json:"url"`
		Number int    `json:"number"`
	}
	json.Unmarshal(reported[fp], &rep)
	if rep.Number != issue.Number || !strings.HasSuffix(rep.URL, "/acme/widgets/issues/1") {
		t.Fatalf("second deployment's state does not record the existing issue: %s", reported[fp])
	}
	comments := gh.Comments(issue.Number)
	if len(comments) != 1 {
		t.Fatalf("%d comments, want one occurrence comment", len(comments))
	}
	c := comments[0]
	version := toolVersion(t, second)
	if occurrenceRow(c.Body, "Occurrences") != "2" || occurrenceRow(c.Body, "First seen") != stamp(10*time.Minute) ||
		occurrenceRow(c.Body, "Last seen") != stamp(11*time.Minute) || occurrenceRow(c.Body, "Versions seen") != version {
		t.Fatalf("occurrence comment does not tally the second deployment's sightings:\n%s", c.Body)
	}

	// Within the hour a new sighting is counted but not written.
	second.appendLog(failure(t0.Add(30*time.Minute), "git.failed", errText))
	second.run("run", "--now", stamp(31*time.Minute))
	if cs := gh.Comments(issue.Number); len(cs) != 1 || cs[0].Body != c.Body {
		t.Fatalf("the comment changed within the hour: %d comments\n%s", len(cs), cs[len(cs)-1].Body)
	}

	// An hour on, the one comment is edited in place.
	second.appendLog(failure(t0.Add(2*time.Hour), "git.failed", errText))
	if res := second.run("run", "--now", stamp(2*time.Hour+time.Minute)); res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	cs := gh.Comments(issue.Number)
	if len(cs) != 1 || cs[0].ID != c.ID {
		t.Fatalf("%d comments after the edit, want the same one comment", len(cs))
	}
	if occurrenceRow(cs[0].Body, "Occurrences") != "4" || occurrenceRow(cs[0].Body, "First seen") != stamp(10*time.Minute) ||
		occurrenceRow(cs[0].Body, "Last seen") != stamp(2*time.Hour) {
		t.Fatalf("edited occurrence comment:\n%s", cs[0].Body)
	}
	if n := len(gh.RequestsTo(fakegh.RouteEditComment)); n != 1 {
		t.Fatalf("%d comment edits, want 1", n)
	}
	if n := len(gh.RequestsTo(fakegh.RouteCreateComment)); n != 1 {
		t.Fatalf("%d comments created, want 1", n)
	}
	if gh.CountCreates() != 1 {
		t.Fatalf("%d issues, want 1", gh.CountCreates())
	}
}
