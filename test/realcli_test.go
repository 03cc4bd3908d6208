package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/the-loop/the-loop-diagnose/fakes/provider"
	"github.com/the-loop/the-loop-diagnose/stages/agent/sandbox"
)

// The real agent CLIs, installed by `make realcli` (pinned versions, npm)
// into .cache/npm-clis, each run by the tool against this project's fake
// of its provider's API (fakes/provider).

// realCLIBin is where `make realcli` puts the CLIs' commands.
var realCLIBin = filepath.Join("..", ".cache", "npm-clis", "node_modules", ".bin")

// realCLI returns the installed CLI's command, skipping (failing under
// CI, which installs them) when it is not installed.
func realCLI(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(realCLIBin, name))
	if err == nil {
		_, err = os.Stat(p)
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed (make realcli installs it): %v", name, err)
		}
		t.Skipf("%s is not installed: `make realcli` installs the pinned CLIs", name)
	}
	if ok, detail := sandbox.Available(); !ok {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI machines have Landlock: %s", detail)
		}
		t.Skip(detail)
	}
	return p
}

// realAnswer is the final answer the scripted models give: what is filed.
const realAnswer = `{"title":"dispatch handler indexes past the end of its queue","summary":"The handler panicked reading item 3 of 3.","root_cause":"An off-by-one in the dispatch loop.","suggested_fix":"Loop while i < len(queue).","verdict":"bug","confidence":0.7,"evidence":["index out of range [3] with length 3"]}`

// eventLogOnly is in the event log, in a field the dossier leaves out: a
// tool result holding it read the raw log.
const eventLogOnly = "EVENTLOG-ONLY-7f3a9c"

// realRun is one run of the tool with a real CLI: a deployment whose
// agent is harness with the CLI on PATH, the model's server, and the
// tool's pid once it started.
type realRun struct {
	d       *deployment
	model   *provider.Model
	srv     string
	toolPid atomic.Int64
	res     result
}

func newRealRun(t *testing.T, harness string, env ...string) *realRun {
	t.Helper()
	gh := newGitHub(t)
	r := &realRun{model: &provider.Model{SideText: "ok"}}
	r.srv = r.model.Server(t).URL
	path := filepath.Dir(realCLI(t, harness)) + string(filepath.ListSeparator) + os.Getenv("PATH")
	r.d = newDeployment(t, gh, deployOpts{harness: harness, timeout: 180, env: append([]string{"PATH=" + path}, env...)})
	r.d.appendLog(failure(t0, "dispatch.failed", "handler panicked: index out of range [3] with length 3", "internal_note", eventLogOnly))
	return r
}

// run runs the tool once, scripting the model with steps(toolPid) once
// the tool has started.
func (r *realRun) run(t *testing.T, steps func(pid int) []provider.Step) {
	t.Helper()
	cmd := r.d.command("run")
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	r.model.SetSteps(provider.Step{Text: realAnswer}) // until the pid is known
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.model.SetSteps(steps(cmd.Process.Pid)...)
	err := cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	r.res = result{code, out.String(), errb.String()}
}

// filed checks the tool exited 0 and filed one issue with the answer.
func (r *realRun) filed(t *testing.T) {
	t.Helper()
	if r.res.code != 0 {
		t.Fatalf("exit %d\n%s", r.res.code, r.res.stderr)
	}
	is := r.d.gh.Issues()
	if len(is) != 1 || !strings.Contains(is[0].Title, "dispatch handler indexes past the end") {
		t.Fatalf("the diagnosis was not filed: %d issues %+v\nrequests: %v\n%s", len(is), is, r.model.Paths(), r.res.stderr)
	}
}

// leaked reports what of the host a tool result shows, "" for nothing.
func leaked(res provider.Result, hostname, token string) string {
	switch {
	case strings.Contains(res.Content, eventLogOnly):
		return "the raw event log"
	case strings.Contains(res.Content, token):
		return "the GitHub token"
	case regexp.MustCompile(`(?m)(^|[\s→:])` + regexp.QuoteMeta(hostname) + `\s*$`).MatchString(res.Content):
		return "/etc/hostname"
	case regexp.MustCompile(`(?i)found [1-9]\d* (file|match)|binary file .* matches|GH_TOKEN=`).MatchString(res.Content):
		return "a match in /proc (an oracle)"
	}
	return ""
}

// checkHostile asserts that no tool result leaked anything, that the
// write outside landed nowhere, the fetch reached no one, and every
// hostile call got a result (the CLI answered each, so none was skipped).
func (r *realRun) checkHostile(t *testing.T, calls int, outside ...string) {
	t.Helper()
	hostname, _ := os.ReadFile("/etc/hostname")
	results := r.model.Results()
	for _, res := range results {
		t.Logf("%s %s -> error=%v %q", res.Name, provider.Brief(res.Args), res.IsError, provider.Brief(res.Content))
		if what := leaked(res, strings.TrimSpace(string(hostname)), "test-token"); what != "" {
			t.Errorf("%s %v returned %s: %q", res.Name, res.Args, what, res.Content)
		}
	}
	if len(results) < calls {
		t.Errorf("%d tool results for %d hostile calls", len(results), calls)
	}
	for _, p := range outside {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("the agent wrote %s", p)
		}
	}
	for _, p := range r.model.Paths() {
		if strings.Contains(p, "/exfil") {
			t.Errorf("the agent fetched %s", p)
		}
	}
}

// claude, asked for a shell, a write outside, reads of /etc/hostname, the
// event log and the tool's environ, a Grep over /proc and a fetch, gets
// none of them; the diagnosis it then gives is filed.
func TestRealClaudeHostileModelIsConfined(t *testing.T) {
	r := newRealRun(t, "claude", "ANTHROPIC_API_KEY=sk-ant-fake", "ANTHROPIC_BASE_URL=")
	r.d.env = append(r.d.env, "ANTHROPIC_BASE_URL="+r.srv)
	pwned := filepath.Join(r.d.dir, "pwned.txt")
	var calls int
	r.run(t, func(pid int) []provider.Step {
		environ := "/proc/" + strconv.Itoa(pid) + "/environ"
		hostile := []provider.Call{
			{Name: "Bash", Args: map[string]any{"command": "cat /etc/hostname", "description": "host"}},
			{Name: "Write", Args: map[string]any{"file_path": pwned, "content": "pwned"}},
			{Name: "Read", Args: map[string]any{"file_path": "/etc/hostname"}},
			{Name: "Read", Args: map[string]any{"file_path": r.d.log}},
			{Name: "Read", Args: map[string]any{"file_path": environ}},
			{Name: "Grep", Args: map[string]any{"pattern": "GH_TOKEN", "path": "/proc", "output_mode": "files_with_matches"}},
			{Name: "Grep", Args: map[string]any{"pattern": "GH_TOKEN=t", "path": environ, "output_mode": "content"}},
			{Name: "Glob", Args: map[string]any{"pattern": "**/*.jsonl", "path": r.d.dir}},
			{Name: "WebFetch", Args: map[string]any{"url": r.srv + "/exfil", "prompt": "summarise"}},
		}
		calls = len(hostile)
		return []provider.Step{{Calls: hostile}, {Text: realAnswer}}
	})
	r.filed(t)
	r.checkHostile(t, calls, pwned)
}
