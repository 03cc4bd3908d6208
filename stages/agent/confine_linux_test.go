package agent

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/the-loop/the-loop-diagnose/stages/agent/sandbox"
)

// attempt mirrors a line of the fake's FAKE_AGENT_HOSTILE_OUT.
type attempt struct {
	Action, Target, Got, Err string
	Control, OK              bool
}

// requireLandlock skips where the kernel cannot confine, and fails
// under CI, whose machines have Landlock.
func requireLandlock(t *testing.T) {
	t.Helper()
	if ok, detail := sandbox.Available(); !ok {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI machines have Landlock: %s", detail)
		}
		t.Skip(detail)
	}
}

// A prompt-injected claude, codex or gemini with a shell of its own
// reads its dossier and writes its directory, but reaches nothing else of
// the host: not /etc/hostname, not the event log beside us, not our own
// /proc entries nor any other process's, nowhere to write outside; a
// shell it starts is confined as it is. Its answer is still used.
func TestAgentKernelConfinesAHostileAgent(t *testing.T) {
	requireLandlock(t)
	for _, harness := range []string{HarnessClaude, HarnessCodex, HarnessGemini} {
		t.Run(harness, func(t *testing.T) {
			useFake(t, "hostile")
			host := t.TempDir()
			eventLog := filepath.Join(host, "events.jsonl")
			os.WriteFile(eventLog, []byte(`{"event":"x","token":"ghp_secretsecret"}`+"\n"), 0o600)
			state := filepath.Join(host, "self-diagnosis.db")
			os.WriteFile(state, []byte("state"), 0o600)
			out := filepath.Join(t.TempDir(), "attempts.jsonl")
			t.Setenv("FAKE_AGENT_HOSTILE_READ", eventLog+string(filepath.ListSeparator)+state)
			t.Setenv("FAKE_AGENT_HOSTILE_PIDS", strconv.Itoa(os.Getpid())+",1")
			t.Setenv("FAKE_AGENT_HOSTILE_OUT", out)
			t.Setenv("HOME", t.TempDir())

			f := runAgent(t, Config{Harness: harness, Binary: fakeAs(t, harness)}, testDossier("fp", "d"))[0]
			if f.Failure != "" || f.Answer == nil || f.Answer.Title != fakeTitle {
				t.Fatalf("the confined agent's answer was not used: %+v", f)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatalf("the fake recorded no attempts: %v", err)
			}
			var controls, denied int
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				var a attempt
				if err := json.Unmarshal([]byte(line), &a); err != nil {
					t.Fatal(err)
				}
				switch {
				case a.Control && !a.OK:
					t.Errorf("the agent cannot %s its own %s: %s", a.Action, a.Target, a.Err)
				case a.Control:
					controls++
				case a.OK || a.Got != "":
					t.Errorf("the agent could %s %s: got %q", a.Action, a.Target, a.Got)
				default:
					denied++
				}
			}
			if controls != 2 || denied < 12 {
				t.Errorf("%d controls and %d denied attempts recorded, want 2 and at least 12:\n%s", controls, denied, b)
			}
		})
	}
}
