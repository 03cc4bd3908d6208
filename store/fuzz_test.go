package store

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The old ledger file is whatever a crash or an operator left: any bytes
// parse without a panic, every line is either an entry or counted as
// skipped, and an entry written back parses as itself.
func FuzzParseLedger(f *testing.F) {
	f.Add([]byte(`{"time":"2026-11-30T10:00:00Z","fingerprint":"v3:a","verdict":"environment","reason":"dns","tool_version":"0.1"}` + "\n{torn"))
	f.Add([]byte("\n\n  \n"))
	f.Add([]byte(`{"fingerprint":""}` + "\n" + `[1,2]` + "\r\n" + `{"fingerprint":"x","evidence":{"a":[1,"b"]}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		entries, skipped := parseLedger(raw)
		lines := 0
		for _, l := range bytes.Split(raw, []byte("\n")) {
			if len(bytes.TrimSpace(l)) > 0 {
				lines++
			}
		}
		if len(entries)+skipped != lines {
			t.Fatalf("%d entries + %d skipped != %d lines", len(entries), skipped, lines)
		}
		for _, e := range entries {
			if e.Fingerprint == "" {
				t.Fatal("an entry without a fingerprint was kept")
			}
			b, err := json.Marshal(e)
			if err != nil {
				continue // a float evidence value JSON cannot carry back (NaN never parses; kept for safety)
			}
			back, n := parseLedger(b)
			if n != 0 || len(back) != 1 || back[0].Fingerprint != e.Fingerprint {
				t.Fatalf("entry %s does not parse back as itself", b)
			}
		}
	})
}

// Whatever an event carries (it comes from logs and agents), the line the
// outbox writes is found again by its id, among any other lines, and
// nothing else is taken for an id of ours.
func FuzzEventIDsAreFoundAgain(f *testing.F) {
	f.Add("diagnosis.posted", "v3:abc", `"event_id":"0-0-0"`, []byte(`{"event":"service"}`))
	f.Add("diagnosis.failed", "\"\n\\", "\u2028", []byte("garbage\x00\xff"))
	f.Fuzz(func(t *testing.T, typ, fp, reason string, other []byte) {
		id := newID(time.Unix(1764500000, 0))
		line, err := encodeEvent(Event{Type: typ, Level: "info", At: time.Unix(1764500000, 0),
			Fields: map[string]any{"fingerprint": fp, "reason": reason}}, id)
		if err != nil {
			t.Skip()
		}
		if bytes.ContainsAny(line, "\n") {
			t.Fatalf("an event line holds a newline: %q", line)
		}
		path := filepath.Join(t.TempDir(), "events.jsonl")
		content := append(append(append([]byte{}, other...), '\n'), append(line, '\n')...)
		os.WriteFile(path, content, 0o600)
		ids, err := idsWritten(path, 0, int64(len(content)))
		if err != nil {
			t.Fatal(err)
		}
		if !ids[id] {
			t.Fatalf("the line's id %s was not found in %q", id, content)
		}
		for got := range ids {
			if got != id && !bytes.Contains(other, []byte(got)) {
				t.Fatalf("found id %q that no line carries", got)
			}
		}
	})
}
