package test

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	fakegh "github.com/the-loop/the-loop-diagnose/fakes/github"
	"github.com/the-loop/the-loop-diagnose/fingerprint"
)

// theLoopTS is the-loop's timestamp (selfdiagnosis._iso, eventlog._utcnow):
// UTC with milliseconds, as its _to_epoch and dashboards read it.
var theLoopTS = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

// reportedKinds splits the state's reported entries into this tool's own
// and those kept for the-loop under its v1 fingerprint (alias_of).
func reportedKinds(d *deployment) (own, theLoop map[string]map[string]any) {
	own, theLoop = map[string]map[string]any{}, map[string]map[string]any{}
	for fp, raw := range d.stateMap("reported") {
		var e map[string]any
		json.Unmarshal(raw, &e)
		if e["alias_of"] != nil {
			theLoop[fp] = e
		} else {
			own[fp] = e
		}
	}
	return own, theLoop
}

// ownEntries counts the entries of a state map (reported, abandoned) that
// are this tool's own, not the copies kept for the-loop (alias_of).
func ownEntries(d *deployment, key string) int {
	n := 0
	for _, raw := range d.stateMap(key) {
		var e map[string]any
		if json.Unmarshal(raw, &e) != nil || e["alias_of"] == nil {
			n++
		}
	}
	return n
}

// theLoopV1 is the fingerprint the-loop's scan gives a log line (the
// fingerprint package's golden tests pin LegacyOf to the-loop's own).
func theLoopV1(t *testing.T, line string) string {
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatal(err)
	}
	ev, _ := m["event"].(string)
	text, _ := m["error"].(string)
	return fingerprint.LegacyOf(fingerprint.Input{Event: ev, Error: text, Fields: fingerprint.MapFields(m)})
}

func checkTheLoopEvent(t *testing.T, e map[string]any, keys ...string) {
	t.Helper()
	for _, k := range append([]string{"ts", "event", "level", "source", "pid", "fingerprint", "trigger"}, keys...) {
		if e[k] == nil || e[k] == "" {
			t.Errorf("%s lacks the-loop's %q: %v", e["event"], k, e)
		}
	}
	if ts, _ := e["ts"].(string); !theLoopTS.MatchString(ts) {
		t.Errorf("%s ts %q is not the-loop's format", e["event"], ts)
	}
	if pid, _ := e["pid"].(float64); int(pid) <= 0 {
		t.Errorf("%s pid %v", e["event"], e["pid"])
	}
}

// Every diagnosis.* event carries the fields the-loop writes, with its
// meaning: detected (fingerprint, trigger) once, on the first attempt and
// never for a deferral; posted (url); deferred (fingerprint, trigger);
// failed (stage agent | post, attempt: this attempt's number); pid always.
func TestEventsCarryTheLoopsFields(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{maxPerDay: 1})
	d.appendLog(
		failure(t0, "git.failed", "git push failed: exit status 128"),
		failure(t0.Add(time.Second), "git.failed", "git fetch failed: exit status 128"))
	now := t0.Add(time.Hour)
	if res := d.run("run", "--now", now.Format(time.RFC3339)); res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	posted, deferred, detected := d.events("diagnosis.posted"), d.events("diagnosis.deferred"), d.events("diagnosis.detected")
	if len(posted) != 1 || len(deferred) != 1 {
		t.Fatalf("posted %v deferred %v", posted, deferred)
	}
	checkTheLoopEvent(t, posted[0], "url")
	checkTheLoopEvent(t, deferred[0])
	if posted[0]["trigger"] != "git.failed" || deferred[0]["trigger"] != "git.failed" ||
		!strings.HasPrefix(posted[0]["url"].(string), "http") {
		t.Errorf("posted %v deferred %v", posted[0], deferred[0])
	}
	// the-loop emits no diagnosis.detected for a deferral.
	if len(detected) != 1 || detected[0]["fingerprint"] != posted[0]["fingerprint"] {
		t.Fatalf("detected = %v, want only the posted defect's", detected)
	}
	checkTheLoopEvent(t, detected[0])

	// The next day the deferred defect is attempted: now it is detected.
	if res := d.run("run", "--now", now.Add(25*time.Hour).Format(time.RFC3339)); res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	if detected = d.events("diagnosis.detected"); len(detected) != 2 || detected[1]["fingerprint"] != deferred[0]["fingerprint"] {
		t.Fatalf("detected after the deferral was filed = %v", detected)
	}

	t.Run("failed: agent", func(t *testing.T) {
		t.Parallel()
		d := newDeployment(t, newGitHub(t), deployOpts{agentMode: "garbage"})
		d.appendLog(failure(t0, "worker.crashed", "worker crashed on nil config"))
		for i := 0; i < 2; i++ {
			d.run("run", "--now", t0.Add(time.Duration(i+1)*time.Hour).Format(time.RFC3339))
		}
		failed := d.events("diagnosis.failed")
		if len(failed) != 2 || len(d.events("diagnosis.detected")) != 1 {
			t.Fatalf("failed %v detected %v", failed, d.events("diagnosis.detected"))
		}
		for i, e := range failed {
			checkTheLoopEvent(t, e, "stage", "attempt", "error")
			if e["stage"] != "agent" || e["attempt"] != float64(i+1) || e["level"] != "warning" {
				t.Errorf("failed #%d = %v", i+1, e)
			}
		}
	})

	t.Run("failed: post", func(t *testing.T) {
		t.Parallel()
		gh := newGitHub(t)
		d := newDeployment(t, gh, deployOpts{})
		gh.Inject(fakegh.RouteCreateIssue, fakegh.Unprocessable("body is too long"))
		d.appendLog(failure(t0, "worker.crashed", "worker crashed on nil config"))
		d.run("run", "--now", t0.Add(time.Hour).Format(time.RFC3339))
		failed := d.events("diagnosis.failed")
		if len(failed) != 1 {
			t.Fatalf("failed %v\n%s", failed, d.readState())
		}
		checkTheLoopEvent(t, failed[0], "stage", "attempt", "error")
		if failed[0]["stage"] != "post" || failed[0]["attempt"] != float64(1) {
			t.Errorf("failed = %v", failed[0])
		}
	})
}

// Abandonment is written as the-loop writes it, {"ts", "event", "reason":
// "agent failed N times"}, under this tool's fingerprint (with the backlog
// entry retry needs) and under the-loop's own, so either tool's status and
// scan see it.
func TestAbandonmentHasTheLoopsShape(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, newGitHub(t), deployOpts{agentMode: "garbage"})
	line := failure(t0, "worker.crashed", "worker crashed on nil config at /home/josé/w 12")
	d.appendLog(line)
	for _, at := range []time.Duration{time.Hour, 2 * time.Hour, 3 * time.Hour} {
		d.run("run", "--now", t0.Add(at).Format(time.RFC3339))
	}
	abandoned := d.stateMap("abandoned")
	v1 := theLoopV1(t, line)
	if len(abandoned) != 2 || abandoned[v1] == nil {
		t.Fatalf("abandoned = %s, want this tool's entry and the-loop's %s", d.readState()["abandoned"], v1)
	}
	for fp, raw := range abandoned {
		var e map[string]any
		json.Unmarshal(raw, &e)
		ts, _ := e["ts"].(string)
		if e["reason"] != "agent failed 3 times" || e["event"] != "worker.crashed" || !theLoopTS.MatchString(ts) {
			t.Errorf("abandoned[%s] = %s, want the-loop's shape", fp, raw)
		}
		if (fp == v1) != (e["pending"] == nil) {
			t.Errorf("abandoned[%s]: only this tool's own entry keeps the backlog entry: %s", fp, raw)
		}
	}
	if res := d.run("status"); !strings.Contains(res.stdout, "agent failed 3 times") {
		t.Errorf("status does not show the abandonment:\n%s", res.stdout)
	}
	// retry brings it back and forgets the-loop's copy with it.
	if res := d.run("retry", "--all-abandoned"); res.code != 0 {
		t.Fatalf("retry: exit %d\n%s", res.code, res.stderr)
	}
	if a := d.stateMap("abandoned"); len(a) != 0 {
		t.Fatalf("after retry: abandoned %v", a)
	}
}

// Switching back: what this tool wrote keeps the-loop's keys in the-loop's
// shapes, so the-loop's own scan (_load_state, then `fp in reported`)
// re-enabled files nothing again: reported holds each defect under the
// fingerprint the-loop gives its records, as {"url", "ts", "event"}, and
// posted holds the-loop's millisecond timestamps (its _to_epoch reads
// them; more fraction digits are not read by Python before 3.11).
func TestStateReadsAsTheLoopsOwn(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{})
	lines := []string{
		failure(t0, "git.failed", "git push failed: cannot open /home/josé/données/x.txt"),
		failure(t0.Add(time.Second), "git.failed", "git push failed: cannot open /home/bob/other/y.txt"),
		failure(t0.Add(2*time.Second), "worker.crashed", "exit ١٣٧ after ５ retries"),
	}
	d.appendLog(lines...)
	if res := d.run("run", "--now", t0.Add(time.Hour).Format(time.RFC3339)); res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	own, theLoop := reportedKinds(d)
	if len(own) != 2 {
		t.Fatalf("reported %s", d.readState()["reported"])
	}
	for _, l := range lines {
		v1 := theLoopV1(t, l)
		e, ok := theLoop[v1]
		if !ok {
			if e, ok = own[v1]; !ok {
				t.Fatalf("the-loop's fingerprint %s of %s is not reported: %s", v1, l, d.readState()["reported"])
			}
		}
		ts, _ := e["ts"].(string)
		url, _ := e["url"].(string)
		if !strings.HasPrefix(url, "http") || !theLoopTS.MatchString(ts) || e["event"] == nil {
			t.Errorf("reported[%s] = %v, want the-loop's {url, ts, event}", v1, e)
		}
	}
	var posted []string
	if err := json.Unmarshal(d.readState()["posted"], &posted); err != nil || len(posted) != 2 {
		t.Fatalf("posted = %s (%v)", d.readState()["posted"], err)
	}
	for _, p := range posted {
		if !theLoopTS.MatchString(p) || !strings.HasPrefix(p, "2026-11-28T10:00:") {
			t.Errorf("posted %q, want the-loop's format at the scan's time", p)
		}
	}
	// And this tool reads its own file back: a rerun files nothing.
	if res := d.run("run", "--now", t0.Add(2*time.Hour).Format(time.RFC3339)); res.code != 0 || gh.CountCreates() != 2 {
		t.Fatalf("rerun: exit %d, %d creates", res.code, gh.CountCreates())
	}
	if os.Getenv("THE_LOOP_STATE_OUT") != "" { // for a manual check with the-loop's own loader
		b, _ := os.ReadFile(d.state)
		os.WriteFile(os.Getenv("THE_LOOP_STATE_OUT"), b, 0o644)
		os.WriteFile(os.Getenv("THE_LOOP_STATE_OUT")+".log", []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	}
}
