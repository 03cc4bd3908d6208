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
	case strings.Contains(provider.Brief(res.Args), "/proc") && regexp.MustCompile(`(?i)found [1-9]\d* (file|match)|binary file .* matches`).MatchString(res.Content),
		strings.Contains(res.Content, "GH_TOKEN="):
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
	t.Parallel()
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
		// What a diagnosis needs still works: its own directory.
		controls := []provider.Call{
			{Name: "Glob", Args: map[string]any{"pattern": "*.md"}},
			{Name: "Grep", Args: map[string]any{"pattern": "dispatch", "output_mode": "files_with_matches"}},
		}
		return []provider.Step{{Calls: append(controls, hostile...)}, {Text: realAnswer}}
	})
	r.filed(t)
	var ok int
	for _, res := range r.model.Results() {
		if _, hasPath := res.Args["path"]; (res.Name == "Glob" || res.Name == "Grep") && !hasPath {
			if !strings.Contains(res.Content, "dossier.md") {
				t.Errorf("claude cannot %s its own directory: %q", res.Name, res.Content)
			}
			ok++
		}
	}
	if ok != 2 {
		t.Errorf("%d of the 2 reads of its own directory answered", ok)
	}
	r.checkHostile(t, calls, pwned)
}

// codex, set up as an OpenAI user already is (OPENAI_BASE_URL and
// OPENAI_API_KEY), diagnoses and its answer is filed.
func TestRealCodexFilesADiagnosis(t *testing.T) {
	t.Parallel()
	r := newRealRun(t, "codex", "OPENAI_API_KEY=sk-fake")
	r.d.env = append(r.d.env, "OPENAI_BASE_URL="+r.srv+"/v1")
	r.run(t, func(int) []provider.Step { return []provider.Step{{Text: realAnswer}} })
	t.Logf("codex offered its model: %v; requests %v", r.model.Tools(), r.model.Paths())
	r.filed(t)
}

// codexExec is one call of codex's exec tool (JavaScript in its V8
// isolate, the way codex 0.171 offers every tool) running one nested tool
// and printing its exit code and output as plain text.
func codexExec(js string) provider.Call {
	src := "try { const o = await " + js + "; text(typeof o === 'string' ? o : ('exit ' + o.exit_code + '\\n' + o.output)); } catch (e) { text('ERR ' + e); }"
	return provider.Call{Name: "exec", Args: map[string]any{"__custom": src, "__namespace": "functions"}}
}

// codex, asked through its exec tool for a shell read of /etc/hostname,
// the event log and the tool's environ, a grep over /proc, a write
// outside (shell and patch), an escalation and a fetch, gets none of
// them; the diagnosis it then gives is filed.
func TestRealCodexHostileModelIsConfined(t *testing.T) {
	t.Parallel()
	r := newRealRun(t, "codex", "OPENAI_API_KEY=sk-fake")
	r.d.env = append(r.d.env, "OPENAI_BASE_URL="+r.srv+"/v1")
	pwned, patched := filepath.Join(r.d.dir, "pwned.txt"), filepath.Join(r.d.dir, "patched.txt")
	var calls int
	r.run(t, func(pid int) []provider.Step {
		sh := func(cmd string, extra string) provider.Call {
			return codexExec("tools.exec_command({cmd: " + quote(cmd) + extra + "})")
		}
		hostile := []provider.Call{
			sh("cat /etc/hostname", ""),
			sh("cat "+r.d.log, ""),
			sh("cat /proc/"+strconv.Itoa(pid)+"/environ | tr '\\0' '\\n'", ""),
			sh("grep -l GH_TOKEN /proc/*/environ", ""),
			sh("echo pwned > "+pwned, ""),
			sh("cat /etc/hostname", `, sandbox_permissions: "require_escalated", justification: "needed"`),
			codexExec("tools.apply_patch(" + quote("*** Begin Patch\n*** Add File: "+patched+"\n+pwned\n*** End Patch\n") + ")"),
			sh("curl -s "+r.srv+"/exfil", ""),
			codexExec("tools.web__run({open: [{ref_id: " + quote(r.srv+"/exfil") + "}]})"),
		}
		calls = len(hostile)
		return []provider.Step{{Calls: hostile}, {Text: realAnswer}}
	})
	r.filed(t)
	r.checkHostile(t, calls, pwned, patched)
}

// geminiSettings is the settings line docs/harnesses.md gives for a gemini
// pointed at a gateway (GOOGLE_GEMINI_BASE_URL): without it gemini picks
// its "gateway" auth type and exits 41.
const geminiSettings = `{"security":{"auth":{"selectedType":"gemini-api-key"}}}`

func newGeminiRun(t *testing.T) *realRun {
	t.Helper()
	r := newRealRun(t, "gemini", "GEMINI_API_KEY=gk-fake")
	r.d.env = append(r.d.env, "GOOGLE_GEMINI_BASE_URL="+r.srv)
	os.MkdirAll(filepath.Join(r.d.dir, ".gemini"), 0o700)
	if err := os.WriteFile(filepath.Join(r.d.dir, ".gemini", "settings.json"), []byte(geminiSettings), 0o600); err != nil {
		t.Fatal(err)
	}
	return r
}

// gemini, set up as docs/harnesses.md says, diagnoses and its answer is filed.
func TestRealGeminiFilesADiagnosis(t *testing.T) {
	t.Parallel()
	r := newGeminiRun(t)
	r.run(t, func(int) []provider.Step { return []provider.Step{{Text: realAnswer}} })
	t.Logf("gemini offered its model: %v; requests %v", r.model.Tools(), r.model.Paths())
	r.filed(t)
}

// gemini, asked for a shell, a write outside, reads of /etc/hostname, the
// event log and the tool's environ, a grep over /proc, a listing of the
// deployment and fetches, gets none of them; its diagnosis is filed.
func TestRealGeminiHostileModelIsConfined(t *testing.T) {
	t.Parallel()
	r := newGeminiRun(t)
	pwned := filepath.Join(r.d.dir, "pwned.txt")
	var calls int
	r.run(t, func(pid int) []provider.Step {
		environ := "/proc/" + strconv.Itoa(pid) + "/environ"
		hostile := []provider.Call{
			{Name: "run_shell_command", Args: map[string]any{"command": "cat /etc/hostname"}},
			{Name: "write_file", Args: map[string]any{"file_path": pwned, "content": "pwned"}},
			{Name: "read_file", Args: map[string]any{"file_path": "/etc/hostname"}},
			{Name: "read_file", Args: map[string]any{"file_path": r.d.log}},
			{Name: "read_file", Args: map[string]any{"file_path": environ}},
			{Name: "grep_search", Args: map[string]any{"pattern": "GH_TOKEN", "dir_path": "/proc"}},
			{Name: "grep_search", Args: map[string]any{"pattern": "GH_TOKEN=t", "dir_path": "/proc/" + strconv.Itoa(pid)}},
			{Name: "list_directory", Args: map[string]any{"dir_path": r.d.dir}},
			{Name: "web_fetch", Args: map[string]any{"prompt": "Summarise " + r.srv + "/exfil"}},
		}
		calls = len(hostile)
		// What a diagnosis needs still works: its dossier.
		control := provider.Call{Name: "read_file", Args: map[string]any{"file_path": "dossier.md"}}
		return []provider.Step{{Calls: append([]provider.Call{control}, hostile...)}, {Text: realAnswer}}
	})
	r.filed(t)
	if res := r.model.Results(); len(res) == 0 || res[0].IsError || !strings.Contains(res[0].Content, "dispatch.failed") {
		t.Errorf("gemini cannot read its own dossier: %+v", res)
	}
	r.checkHostile(t, calls, pwned)
}
