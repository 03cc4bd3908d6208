package store

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Event is one diagnosis.* line appended to the event log.
type Event struct {
	Type   string         // e.g. "diagnosis.posted"
	Level  string         // info | warning
	At     time.Time      //
	Fields map[string]any // extra fields (fingerprint, url, reason, ...)
}

var pid = os.Getpid()

// encodeEvent is e as a line of the event log, in the-loop's record shape,
// with id as its event_id: the outbox's flush finds by it what a flush cut
// short already wrote.
func encodeEvent(e Event, id string) ([]byte, error) {
	m := map[string]any{}
	for k, v := range e.Fields {
		m[k] = v
	}
	m["ts"] = e.At.UTC().Format("2006-01-02T15:04:05.000Z")
	m["event"] = e.Type
	m["level"] = e.Level
	m["source"] = "the-loop-diagnose"
	m["pid"] = pid // the-loop's emit stamps every record with its writer's pid
	if id != "" {
		m["event_id"] = id
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("event %s: encode: %w", e.Type, err)
	}
	return b, nil
}

// AppendEvents appends events to the log at path (a store without a
// database: a dry run's, replay's). The log is the service's: it is opened
// as the service and our reader open it (a deployment may well point
// eventLog.path at a link), and its mode is left alone.
func AppendEvents(path string, events []Event) error {
	if len(events) == 0 {
		return nil
	}
	lines := make([][]byte, 0, len(events))
	for _, e := range events {
		b, err := encodeEvent(e, "")
		if err != nil {
			return err
		}
		lines = append(lines, b)
	}
	return appendLines(path, lines)
}

// appendLines appends one line per item with O_APPEND, one write per line,
// so a concurrent writer (the-loop itself) never interleaves within a line,
// then fsyncs.
func appendLines(path string, lines [][]byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("event log %s: %w", path, err)
	}
	defer f.Close()
	for _, line := range lines {
		if _, err := f.Write(append(line, '\n')); err != nil {
			return fmt.Errorf("event log %s: %w", path, err)
		}
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("event log %s: %w", path, err)
	}
	return f.Close()
}

// LedgerEntry is one settlement of the ledger: what the machine decided
// without a human, and the evidence it used.
type LedgerEntry struct {
	Time        time.Time      `json:"time"`
	Fingerprint string         `json:"fingerprint"`
	Verdict     string         `json:"verdict"`
	Reason      string         `json:"reason"`
	Evidence    map[string]any `json:"evidence,omitempty"`
	ToolVersion string         `json:"tool_version"`
}

// LedgerPath is the settlement ledger file older versions kept beside the
// state file (diagnoses.jsonl): imported once into the ledger table.
func LedgerPath(statePath string) string {
	return filepath.Join(filepath.Dir(statePath), "diagnoses.jsonl")
}
