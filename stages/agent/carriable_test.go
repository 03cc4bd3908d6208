package agent

import (
	"os"
	"strings"
	"testing"
)

func TestAgentCarriableShowsNULAndKeepsEverythingElse(t *testing.T) {
	for in, want := range map[string]string{
		"":                           "",
		"plain":                      "plain",
		"a\x00b":                     "a\u2400b",
		"\x00\x00":                   "\u2400\u2400",
		"soh\x01 esc\x1b tab\t nl\n": "soh\x01 esc\x1b tab\t nl\n", // exec carries these
		"lone surrogate \ufffd":      "lone surrogate \ufffd",
		`literal \x00 and \u0000`:    `literal \x00 and \u0000`, // text, not a NUL
	} {
		got := Carriable(in)
		if got != want {
			t.Errorf("Carriable(%q) = %q, want %q", in, got, want)
		}
		if strings.IndexByte(got, 0) >= 0 {
			t.Errorf("Carriable(%q) still holds a NUL", in)
		}
		if Carriable(got) != got {
			t.Errorf("Carriable is not idempotent on %q", in)
		}
	}
}

// The inline limit is measured on the carriable text: a dossier of NULs
// under the limit grows past it when each NUL becomes three bytes, and
// must then be left to ./dossier.md rather than overflow an argv element.
func TestAgentPromptIsCarriableAndFitsAnArgument(t *testing.T) {
	d := testDossier("fp", "worker crashed: \x00 in name\n")
	p := Prompt(d)
	if strings.IndexByte(p, 0) >= 0 || !strings.Contains(p, "worker crashed: \u2400 in name") {
		t.Errorf("prompt does not show the NUL as U+2400:\n%s", p)
	}
	nuls := testDossier("fp", strings.Repeat("\x00", inlineLimit/2))
	if bp := Prompt(nuls); strings.Contains(bp, "\u2400") || len(bp) > 4096 {
		t.Errorf("a dossier over the inline limit once carriable was quoted (%d bytes prompt)", len(bp))
	}
}

// Through every harness that puts the prompt in argv (claude's and
// cursor's -p, a command's {prompt}), a NUL in the dossier reaches the
// agent as U+2400, in the prompt and in dossier.md alike, and the run
// answers instead of failing in exec.
func TestAgentRunsWithANULInTheDossier(t *testing.T) {
	d := testDossier("fp", "worker 7 crashed: name \"a\x00b\" \x01 \ufffd\n")
	for name, cfg := range map[string]Config{
		"claude":  {Harness: "claude", Binary: fakeBinary},
		"cursor":  {Harness: "cursor", Binary: fakeBinary},
		"command": {Harness: "command", Command: []string{fakeBinary, "--fake-mode", "raw", "-p", "{prompt}"}},
	} {
		t.Run(name, func(t *testing.T) {
			record := useFake(t, "valid")
			f := runAgent(t, cfg, d)[0]
			if f.Answer == nil {
				t.Fatalf("no answer: %s", f.Failure)
			}
			rec := oneRecord(t, record)
			if !strings.Contains(rec.Prompt, "name \"a\u2400b\" \x01 \ufffd") || strings.IndexByte(rec.Prompt, 0) >= 0 {
				t.Errorf("the prompt the agent got does not carry the NUL as U+2400:\n%q", rec.Prompt)
			}
			if !rec.DossierInPrompt {
				t.Error("dossier.md and the inline copy differ")
			}
		})
	}
}

func TestAgentConfigNULIsNamedNotExecuted(t *testing.T) {
	record := useFake(t, "raw")
	f := runAgent(t, Config{Harness: "command", Command: []string{fakeBinary, "bad\x00arg"}}, testDossier("fp", "d"))[0]
	if !strings.Contains(f.Failure, "argument 1 of the agent's command line holds a NUL byte") {
		t.Errorf("failure = %q, want one naming the argument", f.Failure)
	}
	if _, err := os.Stat(record); err == nil {
		t.Error("the agent ran")
	}
}
