package eventlog

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func generateDeployment(t testing.TB, o DeploymentOptions) ([]byte, DeploymentStats, map[int]string) {
	t.Helper()
	var buf bytes.Buffer
	truth := map[int]string{}
	st, err := GenerateDeployment(&buf, func(line int, id string) { truth[line] = id }, o)
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), st, truth
}

func TestDeploymentSameSeedSameBytes(t *testing.T) {
	a, _, _ := generateDeployment(t, DeploymentOptions{Lines: 3000, Seed: 5})
	b, _, _ := generateDeployment(t, DeploymentOptions{Lines: 3000, Seed: 5})
	c, _, _ := generateDeployment(t, DeploymentOptions{Lines: 3000, Seed: 6})
	if !bytes.Equal(a, b) {
		t.Fatal("the same options gave different logs")
	}
	if bytes.Equal(a, c) {
		t.Fatal("another seed gave the same log")
	}
}

// The truth names exactly the candidate lines, and the log is in time order.
func TestDeploymentTruthIsTheCandidateLines(t *testing.T) {
	log, st, truth := generateDeployment(t, DeploymentOptions{Lines: 5000, Seed: 2})
	lines := readLines(t, log)
	if len(lines) != 5000 || st.Lines != 5000 {
		t.Fatalf("%d lines (stats %d), want 5000", len(lines), st.Lines)
	}
	got := candidateLines(t, log)
	want := slices.Sorted(func(yield func(int) bool) {
		for l := range truth {
			if !yield(l) {
				return
			}
		}
	})
	if !slices.Equal(got, want) {
		t.Fatalf("candidates %v\ntruth %v", got[:min(len(got), 20)], want[:min(len(want), 20)])
	}
	var prev time.Time
	for _, p := range lines {
		ts, err := time.Parse(time.RFC3339Nano, p.fields["ts"].(string))
		if err != nil || ts.Before(prev) {
			t.Fatalf("line %d: ts %v after %v (%v)", p.n, ts, prev, err)
		}
		prev = ts
	}
}

// Identifiers vary the way a deployment's do: many repositories, all three
// home directory shapes, branches of every form, both harnesses, unique
// deliveries and sessions.
func TestDeploymentIdentifiersVary(t *testing.T) {
	log, _, _ := generateDeployment(t, DeploymentOptions{Lines: 8000, Seed: 3})
	homeRE := regexp.MustCompile(`^(/home/|/Users/|C:\\Users\\|/srv/)`)
	distinct := map[string]map[string]bool{}
	homes := map[string]bool{}
	for _, p := range readLines(t, log) {
		for _, k := range []string{"work_item", "delivery_id", "tmux_target", "branch", "actor", "host", "harness", "version", "cwd"} {
			if v, ok := p.fields[k].(string); ok {
				if distinct[k] == nil {
					distinct[k] = map[string]bool{}
				}
				distinct[k][v] = true
				if k == "cwd" {
					homes[homeRE.FindString(v)] = true
				}
			}
		}
	}
	repos := map[string]bool{}
	for w := range distinct["work_item"] {
		if !strings.HasPrefix(w, "github:") || !strings.Contains(w, "#") {
			t.Fatalf("work_item %q is not github:owner/repo#N", w)
		}
		repos[w[:strings.IndexByte(w, '#')]] = true
	}
	if len(repos) < 60 {
		t.Errorf("%d repositories, want a varied pool (>= 60)", len(repos))
	}
	for _, h := range []string{"/home/", "/Users/", `C:\Users\`} {
		if !homes[h] {
			t.Errorf("no cwd under %s", h)
		}
	}
	var forms [3]bool
	perRun := regexp.MustCompile(`^the-loop/\d+-[a-z-]+-[0-9a-f]{6}$`)
	for b := range distinct["branch"] {
		forms[0] = forms[0] || perRun.MatchString(b)
		forms[1] = forms[1] || strings.HasPrefix(b, "feature/")
		forms[2] = forms[2] || b == "main"
	}
	if forms != [3]bool{true, true, true} {
		t.Errorf("branch forms the-loop/N-slug-hex, feature/x, main: %v", forms)
	}
	for _, h := range []string{"claude", "codex", "cursor"} {
		if !distinct["harness"][h] {
			t.Errorf("no %s harness", h)
		}
	}
	for k, atLeast := range map[string]int{"delivery_id": 2000, "tmux_target": 200, "actor": 20, "host": 20, "version": 4} {
		if n := len(distinct[k]); n < atLeast {
			t.Errorf("%d distinct %s, want >= %d", n, k, atLeast)
		}
	}
	tmuxRE := regexp.MustCompile(`^loop-[a-z0-9._-]+-\d+:0\.0$`)
	for tm := range distinct["tmux_target"] {
		if !tmuxRE.MatchString(tm) {
			t.Fatalf("tmux_target %q is not loop-<repo>-<n>:0.0", tm)
		}
	}
}

// Incidents: failures with text, then a give-up without text for the same
// work item (and delivery) a little later, with the same true defect;
// incidents interleave on one work item; some give-ups stand alone.
func TestDeploymentIncidentsEndInBareGiveUps(t *testing.T) {
	log, st, truth := generateDeployment(t, DeploymentOptions{Lines: 10000, Seed: 4})
	if st.GiveUps == 0 || st.Orphans == 0 || st.Interleaved == 0 {
		t.Fatalf("stats %+v: want give-ups, orphans and interleaved incidents", st)
	}
	type fail struct {
		at    time.Time
		id    string
		retry bool
	}
	byDelivery := map[string][]fail{}
	bare, linked, orphans := 0, 0, 0
	for _, p := range readLines(t, log) {
		id, ok := truth[p.n]
		if !ok {
			continue
		}
		ts, _ := time.Parse(time.RFC3339Nano, p.fields["ts"].(string))
		wi, _ := p.fields["work_item"].(string)
		key := wi + " " + p.fields["source"].(string)
		tmux, _ := p.fields["tmux_target"].(string)
		if d, ok := p.fields["delivery_id"].(string); ok {
			key = d
		} else if tmux != "" {
			key = tmux // the poller's give-up names the session
		}
		if _, hasErr := p.fields["error"]; hasErr {
			f := fail{ts, id, p.fields["will_retry"].(bool)}
			byDelivery[key] = append(byDelivery[key], f)
			if tmux != "" && key != tmux {
				byDelivery[tmux] = append(byDelivery[tmux], f)
			}
			continue
		}
		bare++
		if p.fields["will_retry"] != false || p.fields["attempts"] != float64(3) || wi == "" {
			t.Fatalf("line %d: a bare give-up is will_retry false, attempts 3, with a work item: %v", p.n, p.fields)
		}
		if strings.HasPrefix(id, "orphan:") {
			orphans++
			if len(byDelivery[key]) > 0 {
				t.Errorf("line %d: orphan give-up after failures of its own key", p.n)
			}
			continue
		}
		// Its own incident's retried failure came shortly before (not
		// always last: a poll incident has no delivery, and another on the
		// same work item may interleave).
		found := false
		for _, f := range byDelivery[key] {
			found = found || f.id == id && f.retry && ts.Sub(f.at) <= 30*time.Minute
		}
		if !found {
			t.Errorf("line %d (%s): no retried failure of the same defect shortly before for %s: %v", p.n, id, key, byDelivery[key])
		}
		linked++
	}
	if bare != st.GiveUps+st.Orphans || linked != st.GiveUps || orphans != st.Orphans {
		t.Fatalf("bare %d linked %d orphans %d, stats %+v", bare, linked, orphans, st)
	}
}

func TestDeploymentInvalidOptions(t *testing.T) {
	for _, o := range []DeploymentOptions{{Lines: -1}, {Lines: 10, FailureRate: 2}, {Lines: 10, Defects: -1}, {Lines: 10, Gap: -time.Second}} {
		if _, err := GenerateDeployment(&bytes.Buffer{}, nil, o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}
