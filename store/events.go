package store

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// Event is one diagnosis.* line appended to the event log.
type Event struct {
	Type   string         // e.g. "diagnosis.posted"
	Level  string         // info | warning
	At     time.Time      //
	Fields map[string]any // extra fields (fingerprint, url, reason, ...)
}

// AppendEvents appends events to the log at path, one write per line with
// O_APPEND, so a concurrent writer (the-loop itself) never interleaves
// within a line.
func AppendEvents(path string, events []Event) error {
	if len(events) == 0 {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("event log %s: %w", path, err)
	}
	defer f.Close()
	for _, e := range events {
		m := map[string]any{}
		for k, v := range e.Fields {
			m[k] = v
		}
		m["ts"] = e.At.UTC().Format("2006-01-02T15:04:05.000Z")
		m["event"] = e.Type
		m["level"] = e.Level
		m["source"] = "the-loop-diagnose"
		line, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("event log %s: encode %s: %w", path, e.Type, err)
		}
		if _, err := f.Write(append(line, '\n')); err != nil {
			return fmt.Errorf("event log %s: %w", path, err)
		}
	}
	return nil
}
