package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/the-loop/the-loop-diagnose/store"
)

// cmdState is `state export`: the state out of its store, as the-loop's
// self-diagnosis.json (--format the-loop, for a switch back to the-loop's
// own scan), as this tool's whole state with its ledger (--format json), or
// as the ledger's lines (--format ledger, diagnoses.jsonl's shape).
func cmdState(args []string, io stdio) error {
	if len(args) == 0 || args[0] != "export" {
		return usageErr("state: want `state export [--format the-loop|json|ledger] [-o FILE]`")
	}
	fs := newFlagSet("state export", io)
	var c commonFlags
	c.register(fs)
	format := fs.String("format", "the-loop", "the-loop | json | ledger")
	out := fs.StringP("output", "o", "", "write to FILE (atomically) instead of stdout")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if *format != "the-loop" && *format != "json" && *format != "ledger" {
		return usageErr("state export: --format %q is not one of the-loop, json, ledger", *format)
	}
	cfg, _, err := c.resolve()
	if err != nil {
		return err
	}
	db, err := store.OpenDSN(cfg.StatePath, cfg.Store, true)
	if err != nil {
		return err
	}
	defer db.Close()
	b, err := exportState(db, *format)
	if err != nil {
		return err
	}
	if *out == "" {
		_, err = io.out.Write(b)
		return err
	}
	if err := store.WriteFile(*out, b); err != nil {
		return err
	}
	fmt.Fprintf(io.err, "the-loop-diagnose: wrote the state of %s to %s (%s)\n", db.Name(), *out, *format)
	return nil
}

func exportState(db *store.Store, format string) ([]byte, error) {
	var ledger []store.LedgerEntry
	var err error
	if format != "the-loop" {
		if ledger, err = db.Ledger(time.Time{}); err != nil {
			return nil, err
		}
	}
	if format == "ledger" {
		var b []byte
		for _, e := range ledger {
			line, err := json.Marshal(e)
			if err != nil {
				return nil, err
			}
			b = append(append(b, line...), '\n')
		}
		return b, nil
	}
	st, err := db.Everything()
	if err != nil {
		return nil, err
	}
	if format == "the-loop" {
		b, err := st.MarshalJSON()
		return append(b, '\n'), err
	}
	pruned, err := db.PrunedBacklog()
	if err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(map[string]any{
		"store": db.Name(), "state": st,
		"ledger": append([]store.LedgerEntry{}, ledger...), "backlog_pruned": append([]store.BacklogSummary{}, pruned...),
	}, "", "  ")
	return append(b, '\n'), err
}
