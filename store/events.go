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

// AppendEvents appends events to the log at path in the-loop's record shape.
// The log is the service's: it is opened as the service and our reader open
// it (a deployment may well point eventLog.path at a link), and its mode is
// left alone.
func AppendEvents(path string, events []Event) error {
	if len(events) == 0 {
		return nil
	}
	lines := make([]any, 0, len(events))
	for _, e := range events {
		m := map[string]any{}
		for k, v := range e.Fields {
			m[k] = v
		}
		m["ts"] = e.At.UTC().Format("2006-01-02T15:04:05.000Z")
		m["event"] = e.Type
		m["level"] = e.Level
		m["source"] = "the-loop-diagnose"
		m["pid"] = pid // the-loop's emit stamps every record with its writer's pid
		lines = append(lines, m)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("event log %s: %w", path, err)
	}
	return appendJSONLines(f, path, "event log", lines)
}

// LedgerEntry is one settlement in diagnoses.jsonl: what the machine decided
// without a human, and the evidence it used.
type LedgerEntry struct {
	Time        time.Time      `json:"time"`
	Fingerprint string         `json:"fingerprint"`
	Verdict     string         `json:"verdict"`
	Reason      string         `json:"reason"`
	Evidence    map[string]any `json:"evidence,omitempty"`
	ToolVersion string         `json:"tool_version"`
}

// LedgerPath is the settlement ledger beside the state file.
func LedgerPath(statePath string) string {
	return filepath.Join(filepath.Dir(statePath), "diagnoses.jsonl")
}

// AppendLedger appends settlements to the append-only ledger, a file of
// this tool's own: 0600, never through a link.
func AppendLedger(path string, entries []LedgerEntry) error {
	if len(entries) == 0 {
		return nil
	}
	lines := make([]any, len(entries))
	for i := range entries {
		lines[i] = entries[i]
	}
	f, err := openPrivate("ledger", path, ledgerFix, os.O_WRONLY|os.O_APPEND|os.O_CREATE)
	if err != nil {
		return err
	}
	return appendJSONLines(f, path, "ledger", lines)
}

// appendJSONLines appends one JSON line per item with O_APPEND, one write per
// line, so a concurrent writer (the-loop itself) never interleaves within a line.
// It closes f.
func appendJSONLines(f *os.File, path, what string, items []any) error {
	defer f.Close()
	for _, it := range items {
		line, err := json.Marshal(it)
		if err != nil {
			return fmt.Errorf("%s %s: encode: %w", what, path, err)
		}
		if _, err := f.Write(append(line, '\n')); err != nil {
			return fmt.Errorf("%s %s: %w", what, path, err)
		}
	}
	return f.Sync()
}
