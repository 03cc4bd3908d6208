package test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An error text carrying escapes JSON allows but argv does not (a NUL,
// written \u0000) or that decode to something else (a control character,
// a lone surrogate) reaches an agent that takes its prompt as an argument:
// the defect is filed on the first scan, and the agent's prompt holds no
// NUL byte (the dossier quotes the error as the body does, control
// characters dropped), never one that would have failed exec three times.
func TestAnErrorWithANULIsDiagnosedWithThePromptInArgv(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	runs := filepath.Join(t.TempDir(), "agent-runs.jsonl")
	d := newDeployment(t, gh, deployOpts{
		harness: "command\n  command: [" + quote(fakeAgent) + ", -p, \"{prompt}\"]",
		env:     []string{"FAKE_AGENT_RECORD=" + runs},
	})
	// Written by hand: Go's encoder would not write a lone surrogate.
	d.appendLog(`{"ts":"2026-11-28T09:00:00.000Z","event":"dispatch.failed","level":"error","source":"webhook",` +
		`"harness":"claude","error":"handler read name \"a\u0000b\" then \u0001 and \ud800 from the queue"}`)
	res := d.run("run")
	if res.code != 0 || gh.CountCreates() != 1 {
		t.Fatalf("exit %d, %d issues: want the defect filed on the first scan\n%s", res.code, gh.CountCreates(), res.stderr)
	}
	if strings.Contains(res.stderr, "invalid argument") || len(d.events("diagnosis.failed")) != 0 {
		t.Errorf("the agent failed to start:\n%s", res.stderr)
	}
	b, err := os.ReadFile(runs)
	if err != nil {
		t.Fatalf("the agent never ran: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 1 {
		t.Fatalf("the agent ran %d times, want once", len(lines))
	}
	var rec struct {
		Argv   []string `json:"argv"`
		Prompt string   `json:"prompt"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.Argv) != 3 || rec.Argv[2] != rec.Prompt {
		t.Fatalf("the prompt was not the -p argument: %q", rec.Argv)
	}
	// The dossier quotes the error as the issue shows it, control
	// characters dropped; a NUL elsewhere would show as U+2400.
	if strings.IndexByte(rec.Prompt, 0) >= 0 || !strings.Contains(rec.Prompt, "handler read name \"ab\" then") {
		t.Errorf("the prompt carries a NUL or lost the error:\n%q", rec.Prompt)
	}
	if !strings.Contains(rec.Prompt, "\ufffd") {
		t.Errorf("the lone surrogate did not arrive as U+FFFD:\n%q", rec.Prompt)
	}
}
