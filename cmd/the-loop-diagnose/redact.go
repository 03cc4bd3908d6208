package main

import "github.com/the-loop/the-loop-diagnose/redact"

// cmdRedact scrubs JSON-string lines from stdin to stdout (the contract
// ../shared/tools/redaction-score speaks).
func cmdRedact(args []string, io stdio) error {
	fs := newFlagSet("redact", io)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	return redact.ServeJSONLines(io.in, io.out, redact.FromEnvironment())
}
