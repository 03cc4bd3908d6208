package store

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/the-loop/the-loop-diagnose/fingerprint"
)

// The state's the-loop keys are written in the-loop's shapes
// (selfdiagnosis._scan_locked / _failure / _iso): reported {url, ts, event},
// abandoned {ts, event, reason}, posted millisecond "Z" strings; and read
// back from the-loop's file, this tool's and an older release's ("at").
func TestStateKeepsTheLoopShapes(t *testing.T) {
	at := time.Date(2026, 11, 28, 9, 0, 1, 987654321, time.UTC)
	st := NewState()
	st.Reported.Set(fingerprint.Version+":a", Reported{URL: "https://github.com/o/r/issues/1", Number: 1, At: at, Event: "git.failed"})
	st.Reported.Set("0123456789abcdef", Reported{URL: "https://github.com/o/r/issues/1", At: at, Event: "git.failed", AliasOf: fingerprint.Version + ":a"})
	st.Abandoned[fingerprint.Version+":b"] = Abandoned{Reason: "agent failed 3 times", At: at, Event: "worker.crashed", Stage: "agent"}
	st.Posted = []time.Time{at}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Reported  map[string]map[string]any `json:"reported"`
		Abandoned map[string]map[string]any `json:"abandoned"`
		Posted    []string                  `json:"posted"`
	}
	json.Unmarshal(b, &raw)
	const ts = "2026-11-28T09:00:01.987Z" // truncated, as strftime("%f")[:-3]
	if r := raw.Reported["0123456789abcdef"]; r["url"] != "https://github.com/o/r/issues/1" || r["ts"] != ts || r["event"] != "git.failed" {
		t.Errorf("reported entry %v", r)
	}
	if a := raw.Abandoned[fingerprint.Version+":b"]; a["reason"] != "agent failed 3 times" || a["ts"] != ts || a["event"] != "worker.crashed" {
		t.Errorf("abandoned entry %v", a)
	}
	if len(raw.Posted) != 1 || raw.Posted[0] != ts {
		t.Errorf("posted %v, want [%s]", raw.Posted, ts)
	}
	if strings.Contains(string(b), `"at"`) {
		t.Errorf("an older key is written: %s", b)
	}
	if got := Fingerprints(st.Reported.All()); len(got) != 1 || got[0] != fingerprint.Version+":a" {
		t.Errorf("Fingerprints lists the-loop's copies: %v", got)
	}
	if st.HoldsOlderVersions() {
		t.Error("the-loop's copies of this tool's entries need no aliases")
	}

	// the-loop's own file, and an older release's.
	in := `{"reported":{"aaaa":{"url":"u","ts":"2026-11-28T09:00:01.987Z","event":"e"},"bbbb":{"url":"v","at":"2026-11-28T09:00:01Z"}},
		"abandoned":{"cccc":{"ts":"2026-11-28T09:00:01.987Z","event":"e","reason":"post failed 3 times"}},"attempts":{"dddd":1},"posted":["2026-11-28T09:00:01.987Z"]}`
	back := NewState()
	if err := json.Unmarshal([]byte(in), back); err != nil {
		t.Fatal(err)
	}
	want := time.Date(2026, 11, 28, 9, 0, 1, 987000000, time.UTC)
	if !back.Reported.At("aaaa").At.Equal(want) || back.Reported.At("aaaa").Event != "e" || back.Reported.At("bbbb").At.IsZero() ||
		!back.Abandoned["cccc"].At.Equal(want) || back.Abandoned["cccc"].Reason != "post failed 3 times" || !back.Posted[0].Equal(want) {
		t.Errorf("read back %+v %+v %v", back.Reported, back.Abandoned, back.Posted)
	}
	if !back.HoldsOlderVersions() {
		t.Error("the-loop's own entries need its aliases")
	}
}
