package store

import (
	"encoding/json"
	"errors"
	"github.com/the-loop/the-loop-diagnose/fingerprint"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A state file as the-loop's Python original writes it, with a key of its own
// this tool does not know.
const theLoopState = `{
  "reported": {"0123456789abcdef": "https://github.com/o/r/issues/7", "fedcba9876543210": {"url": "https://github.com/o/r/issues/9", "number": 9}},
  "abandoned": ["1111111111111111"],
  "attempts": {"2222222222222222": 2},
  "posted": ["2026-11-28T10:00:00Z", 1764500000.5],
  "schema": 1
}`

func TestLoadsTheLoopStateAndKeepsUnknownKeys(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "self-diagnosis.json")
	if err := os.WriteFile(path, []byte(theLoopState), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.View(func(st *State) {
		if fp, ok := st.IsReported("nope", "0123456789abcdef"); !ok || st.Reported.At(fp).URL != "https://github.com/o/r/issues/7" {
			t.Errorf("string entry of reported not read as a URL: %+v", st.Reported)
		}
		if st.Reported.At("fedcba9876543210").Number != 9 {
			t.Errorf("object entry of reported lost its number: %+v", st.Reported)
		}
		if _, ok := st.IsAbandoned("1111111111111111"); !ok {
			t.Errorf("list form of abandoned not read: %+v", st.Abandoned)
		}
		if st.Attempts["2222222222222222"] != 2 {
			t.Errorf("attempts = %v", st.Attempts)
		}
		if len(st.Posted) != 2 || st.Posted[1].Unix() != 1764500000 {
			t.Errorf("posted = %v, want an RFC 3339 and an epoch time", st.Posted)
		}
	})
	if err := s.Update(func(st *State) error { st.Attempts["3333333333333333"] = 1; return nil }); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != theLoopState {
		t.Errorf("the imported file was changed: %s", b)
	}
	st, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.MarshalJSON() // what state export --format the-loop writes
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("exported state is not JSON: %v", err)
	}
	if string(m["schema"]) != "1" || !strings.Contains(string(m["attempts"]), "3333333333333333") {
		t.Errorf("unknown key or a change dropped: %s", b)
	}
	for _, k := range []string{"reported", "abandoned", "attempts", "posted"} {
		if _, ok := m[k]; !ok {
			t.Errorf("the-loop key %q missing from written state", k)
		}
	}
}

func TestHeldLockMeansSkip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	first, err := Open(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if _, err := Open(path, false); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open = %v, want ErrLocked", err)
	}
	// A dry run takes no lock and can read while a scan runs.
	ro, err := Open(path, true)
	if err != nil {
		t.Fatalf("read-only Open while locked: %v", err)
	}
	ro.Close()
}

func TestMalformedStateIsAnErrorNamingTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	os.WriteFile(path, []byte(`{"reported": 5`), 0o644)
	_, err := Open(path, false)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open = %v, want an error naming %s", err, path)
	}
	b, _ := os.ReadFile(path)
	if string(b) != `{"reported": 5` {
		t.Fatal("a malformed state file must be left as it is")
	}
}

// A state file that exists but holds nothing (a full disk, a crash while
// copying it back) is an error, never a fresh start; only a missing file is.
func TestEmptyOrCutOffStateIsAnErrorNotAFreshStart(t *testing.T) {
	for name, content := range map[string]string{
		"zero bytes": "", "white space": " \n\t\n", "cut off": `{"reported": {"v3:abc": {"url": "https://github.com/o/r/issues/1"`,
	} {
		path := filepath.Join(t.TempDir(), "state.json")
		os.WriteFile(path, []byte(content), 0o600)
		for _, readOnly := range []bool{false, true} {
			_, err := Open(path, readOnly)
			var corrupt *CorruptStateError
			if !errors.As(err, &corrupt) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "delete it to start afresh") {
				t.Fatalf("%s (read-only %v): Open = %v, want a CorruptStateError naming %s and what to do", name, readOnly, err, path)
			}
		}
		if _, err := Load(path); err == nil {
			t.Fatalf("%s: Load took it as a state", name)
		}
		if b, _ := os.ReadFile(path); string(b) != content {
			t.Fatalf("%s: the file was changed", name)
		}
	}
	st, err := Load(filepath.Join(t.TempDir(), "missing.json"))
	if err != nil || st == nil {
		t.Fatalf("a missing state file is a fresh start: %v", err)
	}
}

func TestReadOnlyStoreWritesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	os.WriteFile(path, []byte(theLoopState), 0o644)
	before, _ := os.ReadFile(path)
	s, err := Open(path, true)
	if err != nil {
		t.Fatal(err)
	}
	s.Update(func(st *State) error { st.Posted = append(st.Posted, time.Now()); return nil })
	s.Close()
	after, _ := os.ReadFile(path)
	if string(before) != string(after) {
		t.Fatal("read-only store changed the file")
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("read-only store left files behind: %v", entries)
	}
}

func TestAtomicWriteLeavesNoTempFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	s, err := Open(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < 20; i++ {
		if err := s.Update(func(st *State) error { st.Attempts["x"]++; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	st, err := Load(path)
	if err != nil || st.Attempts["x"] != 20 {
		t.Fatalf("Load = %+v, %v", st, err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Fatalf("temp file left behind: %s", e.Name())
		}
	}
}

func TestPostedWindow(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	st := NewState()
	st.Posted = []time.Time{now.Add(-25 * time.Hour), now.Add(-23 * time.Hour), now.Add(-time.Minute)}
	if n := st.PostedSince(now.Add(-24 * time.Hour)); n != 2 {
		t.Fatalf("PostedSince = %d, want 2", n)
	}
	st.PrunePosted(now.Add(-24 * time.Hour))
	if len(st.Posted) != 2 {
		t.Fatalf("PrunePosted kept %v", st.Posted)
	}
}

func TestAppendEventsOneLinePerEvent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	os.WriteFile(path, []byte(`{"event":"x"}`+"\n"), 0o644)
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	err := AppendEvents(path, []Event{
		{Type: "diagnosis.posted", Level: "info", At: at, Fields: map[string]any{"fingerprint": "v2:1"}},
		{Type: "diagnosis.failed", Level: "warning", At: at, Fields: map[string]any{"error": "x"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 {
		t.Fatalf("got %d lines: %s", len(lines), b)
	}
	var ev map[string]any
	json.Unmarshal([]byte(lines[2]), &ev)
	if ev["event"] != "diagnosis.failed" || ev["level"] != "warning" || ev["ts"] != "2026-11-29T12:00:00.000Z" {
		t.Fatalf("event = %v", ev)
	}
}

func TestResumeDetectsAppendTruncationAndReplacement(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events.jsonl")
	os.WriteFile(path, []byte("line one\nline two\n"), 0o644)
	open := func() *os.File {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	pos, err := Resume(open(), path, nil)
	if err != nil || pos.Offset != 0 {
		t.Fatalf("first Resume = %+v, %v", pos, err)
	}
	cur := pos.Cursor
	cur.Offset, cur.Line = 18, 2

	// Appended: resume at the cursor.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("line three\n")
	f.Close()
	if pos, _ := Resume(open(), path, &cur); pos.Offset != 18 || pos.Line != 2 || pos.Warning != "" {
		t.Fatalf("after append: %+v", pos)
	}
	// Truncated: from the start, with a warning.
	os.Truncate(path, 5)
	if pos, _ := Resume(open(), path, &cur); pos.Offset != 0 || !strings.Contains(pos.Warning, "truncated") {
		t.Fatalf("after truncation: %+v", pos)
	}
	// Replaced by a different file of the same size: from the start.
	os.Remove(path)
	os.WriteFile(path, []byte("LINE ONE\nLINE TWO\nline three\n"), 0o644)
	if pos, _ := Resume(open(), path, &cur); pos.Offset != 0 || !strings.Contains(pos.Warning, "replaced") {
		t.Fatalf("after replacement: %+v", pos)
	}
}

func TestHoldsOlderVersionsTellsOlderFingerprintsFromOurs(t *testing.T) {
	cur := fingerprint.Version
	st := NewState()
	st.Reported.Set(cur+":0123456789abcdef", Reported{})
	st.Reported.Set(cur+"p:0123456789abcdef", Reported{})
	st.Attempts[cur+":fedcba9876543210"] = 1
	if st.HoldsOlderVersions() {
		t.Fatal("only current fingerprints, yet HoldsOlderVersions")
	}
	for _, older := range []func(){
		func() { st.Abandoned["0123456789abcdef"] = Abandoned{} },     // the-loop's
		func() { st.Reported.Set("v3:0123456789abcdef", Reported{}) }, // the previous release's
		func() { st.Reported.Set("v2:0123456789abcdef", Reported{}) },
		func() { st.Deferred["v2:0123456789abcdef"] = Deferred{} },
	} {
		st = NewState()
		older()
		if !st.HoldsOlderVersions() {
			t.Fatalf("an older fingerprint was not noticed: %+v", st)
		}
	}
}

// Every field of the state survives a write and a read as itself: written
// once, with its value, never next to a stale copy kept as an unknown key.
func TestEveryFieldRoundTripsOnce(t *testing.T) {
	st := NewState()
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	st.Outages["github"] = Outage{Since: at, Reason: "503", Scans: 1, Last: at}
	st.FirstFailed["fp"] = at
	st.Incidents = []IncidentFailure{{At: at, Values: []string{"a"}, Fingerprint: "v3:x"}}
	st.IncidentKeys = []string{"work_item"}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var back State
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	back.Outages["github"] = Outage{Since: at, Reason: "503", Scans: 2, Last: at.Add(time.Hour)}
	again, err := json.Marshal(&back)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(again), `"outages"`); n != 1 {
		t.Fatalf("outages written %d times: %s", n, again)
	}
	var last State
	if err := json.Unmarshal(again, &last); err != nil || last.Outages["github"].Scans != 2 || last.Incidents[0].Fingerprint != "v3:x" || !last.FirstFailed["fp"].Equal(at) {
		t.Fatalf("a field did not survive the round trip: %v %+v", err, last)
	}
	// Every json key of State is known: none would be kept as extra.
	var keys map[string]json.RawMessage
	json.Unmarshal(again, &keys)
	for k := range keys {
		if !knownKeys[k] {
			t.Errorf("key %q of State's own fields is not known", k)
		}
	}
}

// The lock is the-loop's RunLock: held, it holds the holder's PID and a
// newline; taken over from a holder that died (its PID left behind, longer
// than ours) it holds ours alone; released, it is gone; and a lock another
// process holds makes Open skip, its PID readable by LockHolder.
func TestLockHoldsItsHoldersPIDAsTheLoopsDoes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "self-diagnosis.json")
	lock := path + ".lock"
	mine := strconv.Itoa(os.Getpid()) + "\n"
	if err := os.WriteFile(lock, []byte("4194304999\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 2; round++ {
		s, err := Open(path, false)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(lock); string(b) != mine {
			t.Errorf("round %d: lock holds %q, want %q", round, b, mine)
		}
		if got := LockHolder(path); got != os.Getpid() {
			t.Errorf("round %d: LockHolder = %d, want %d", round, got, os.Getpid())
		}
		s.Close()
		if _, err := os.Lstat(lock); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("round %d: after Close the lock file is still there (%v)", round, err)
		}
	}

	// the-loop's scan holds it: flock on the file, its PID inside.
	f, err := os.OpenFile(lock, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	f.WriteString("31337\n")
	if _, err := Open(path, false); !errors.Is(err, ErrLocked) {
		t.Fatalf("Open while the-loop holds the lock = %v, want ErrLocked", err)
	}
	if note := LockHolderNote(path); note != " (pid 31337)" {
		t.Errorf("LockHolderNote = %q, want the holder's PID", note)
	}
	if b, _ := os.ReadFile(lock); string(b) != "31337\n" {
		t.Errorf("a failed Open changed the holder's lock file to %q", b)
	}
}
