package test

import (
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// While an agent runs, a terminal shows that it runs and for how long,
// redrawn each second and erased before the next line; a pipe never gets
// it.
func TestAgentRunShowsOnATerminal(t *testing.T) {
	t.Parallel()
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) is not installed: no terminal to test the agent's status line on")
	}
	gh := newGitHub(t)
	// An agent that takes 2.5 s before it answers.
	slow := fmt.Sprintf("command\n  command: [sh, -c, 'sleep 2.5; exec \"$0\" --prompt-file \"$1\"', %s, \"{promptFile}\"]", quote(fakeAgent))
	d := newDeployment(t, gh, deployOpts{harness: slow})
	d.appendLog(failure(t0, "dispatch.failed", "claude exited 1: bad request"))
	cmd := exec.Command(script, "-qec", fmt.Sprintf("%s run --config %s --now %s", binary, d.config, t0.Add(time.Hour).Format(time.RFC3339)), "/dev/null")
	cmd.Dir = d.dir
	cmd.Env = append(cleanEnv(), d.env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	text := string(out)
	lines := regexp.MustCompile(`\rdiagnosing (v[0-9]+:[0-9a-f]+) with command… (\d+)s`).FindAllStringSubmatch(text, -1)
	t.Logf("terminal output: %q", text)
	if len(lines) < 2 || lines[0][2] != "0" || atoi(lines[len(lines)-1][2]) < 2 {
		t.Fatalf("want the status line drawn from 0s to 2s, got %v:\n%q", lines, text)
	}
	if gh.CountCreates() != 1 || !strings.Contains(text, "filed ") {
		t.Fatalf("%d issues\n%q", gh.CountCreates(), text)
	}
	// Erased before the outcome line: nothing of it is left on that line.
	last := strings.LastIndex(text, "\rdiagnosing")
	if filed := strings.Index(text[last:], "filed "); filed < 0 || !strings.Contains(text[last:last+filed], "\r") ||
		strings.Contains(text[last+filed:], "diagnosing") {
		t.Fatalf("the status line is not erased before what follows:\n%q", text[last:])
	}

	// On a pipe: never.
	d2 := newDeployment(t, newGitHub(t), deployOpts{harness: slow})
	d2.appendLog(failure(t0, "dispatch.failed", "claude exited 1: bad request"))
	res := d2.run("run", "--now", t0.Add(time.Hour).Format(time.RFC3339))
	if res.code != 0 || strings.Contains(res.stderr, "diagnosing") || strings.Contains(res.stderr, "\r") {
		t.Fatalf("status line on a pipe: exit %d\n%q", res.code, res.stderr)
	}
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }
