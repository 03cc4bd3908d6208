package test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The codex and gemini harnesses, end to end: the-loop-diagnose finds the
// CLI on PATH by its name (here the fake agent linked as codex and
// gemini, printing that CLI's own output shapes).

// cliOnPath links the fake agent as name in a directory put first on PATH.
func cliOnPath(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(fakeAgent, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
	return "PATH=" + dir + string(os.PathListSeparator) + os.Getenv("PATH")
}

// confinedRecord is where the fake, run as cli, records its runs: in the
// CLI's own state directory under HOME (the deployment's directory), the
// one place outside its run directory the kernel lets a confined CLI write.
func confinedRecord(d *deployment, cli string) string {
	record := filepath.Join(d.dir, "."+cli, "runs.jsonl")
	d.env = append(d.env, "FAKE_AGENT_RECORD="+record)
	return record
}

type cliRun struct {
	Argv       []string `json:"argv"`
	Cwd        string   `json:"cwd"`
	Files      []string `json:"files"`
	CLI        string   `json:"cli"`
	Model      string   `json:"model"`
	SchemaFile string   `json:"schema_file"`
	Schema     string   `json:"schema"`
}

func cliRuns(t *testing.T, record string) []cliRun {
	t.Helper()
	b, err := os.ReadFile(record)
	if err != nil {
		t.Fatalf("the agent never ran: %v", err)
	}
	var out []cliRun
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r cliRun
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// argAfter is the value following flag in argv, or "".
func argAfter(argv []string, flag string) string {
	if i := slices.Index(argv, flag); i >= 0 && i+1 < len(argv) {
		return argv[i+1]
	}
	return ""
}

// Each CLI files the defect from its answer, run read-only with the
// configured model: codex exec in its read-only sandbox with the answer's
// schema beside (not in) its directory, gemini in approval mode default;
// neither gets a flag that runs tools unasked. What the run used (tokens)
// is kept as its cost.
func TestCodexAndGeminiFileAnIssueReadOnly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ cli, tokens string }{
		{cli: "codex", tokens: "24763 tokens in, 122 out"},
		{cli: "gemini", tokens: "8123 tokens in, 1012 out"},
	} {
		t.Run(tc.cli, func(t *testing.T) {
			t.Parallel()
			gh := newGitHub(t)
			d := newDeployment(t, gh, deployOpts{harness: tc.cli, agentMode: "valid",
				env: []string{cliOnPath(t, tc.cli)}, extra: "  model: m-1\n"})
			record := confinedRecord(d, tc.cli)
			d.appendLog(failure(t0, "dispatch.failed", "handler panicked: nil map write"))
			at := t0.Add(time.Hour)
			res := d.run("run", "--now", at.Format(time.RFC3339))
			if res.code != 0 || gh.CountCreates() != 1 {
				t.Fatalf("exit %d, %d issues, want the defect filed\n%s", res.code, gh.CountCreates(), res.stderr)
			}
			if is := gh.Issues(); !strings.Contains(is[0].Body, "The config loader returns nil") {
				t.Errorf("the issue does not carry the %s answer:\n%s", tc.cli, is[0].Body)
			}
			runs := cliRuns(t, record)
			if len(runs) != 1 || runs[0].CLI != tc.cli {
				t.Fatalf("runs %+v, want one as %s", runs, tc.cli)
			}
			r := runs[0]
			if !slices.Equal(r.Files, []string{"dossier.md"}) || strings.HasPrefix(r.Cwd, d.dir) || r.Model != "m-1" {
				t.Errorf("ran in %s holding %q with model %q", r.Cwd, r.Files, r.Model)
			}
			for _, bad := range []string{"--full-auto", "--dangerously-bypass-approvals-and-sandbox", "workspace-write", "danger-full-access", "--yolo", "-y", "yolo", "auto_edit", "--allowed-tools"} {
				if slices.Contains(r.Argv, bad) {
					t.Errorf("argv carries %q: %q", bad, r.Argv)
				}
			}
			switch tc.cli {
			case "codex":
				if r.Argv[1] != "exec" || argAfter(r.Argv, "--sandbox") != "read-only" || argAfter(r.Argv, "-C") != r.Cwd || !slices.Contains(r.Argv, "--json") {
					t.Errorf("codex argv %q", r.Argv)
				}
				if filepath.Dir(r.SchemaFile) != filepath.Dir(r.Cwd) || !strings.Contains(r.Schema, `"suggested_fix"`) {
					t.Errorf("schema %s (%q), want beside %s", r.SchemaFile, r.Schema, r.Cwd)
				}
			case "gemini":
				if argAfter(r.Argv, "--approval-mode") != "default" || argAfter(r.Argv, "--output-format") != "json" {
					t.Errorf("gemini argv %q", r.Argv)
				}
			}
			if st := d.run("status", "--now", at.Add(time.Minute).Format(time.RFC3339)); !strings.Contains(st.stdout, tc.tokens) {
				t.Errorf("status does not show the run's tokens (%s):\n%s", tc.tokens, st.stdout)
			}
		})
	}
}

// A login the CLI rejects, in its own shape (codex: an error event and
// turn.failed; gemini: {"error": ...} on stderr), is the agent's outage:
// the scan says so and exits 1, the defect waits with the CLI's reason,
// nothing is charged or abandoned; once the login works it is filed.
func TestCodexAndGeminiAuthErrorsLeaveTheDefectWaiting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ cli, reason string }{
		{cli: "codex", reason: "401 Unauthorized"},
		{cli: "gemini", reason: "Please set an Auth method"},
	} {
		t.Run(tc.cli, func(t *testing.T) {
			t.Parallel()
			gh := newGitHub(t)
			d := newDeployment(t, gh, deployOpts{harness: tc.cli, agentMode: "error",
				env: []string{cliOnPath(t, tc.cli)}})
			record := confinedRecord(d, tc.cli)
			d.appendLog(killDefects()[:2]...)
			at := t0.Add(time.Hour)
			for scan := 1; scan <= 2; scan++ {
				res := d.run("run", "--now", at.Format(time.RFC3339))
				if res.code != 1 || !strings.Contains(res.stderr, "waiting for the agent") || !strings.Contains(res.stderr, tc.reason) {
					t.Fatalf("scan %d: exit %d, want 1 saying it waits for the agent (%s)\n%s", scan, res.code, tc.reason, res.stderr)
				}
				nothingCharged(t, d, scan)
				if w := d.stateMap("deferred"); len(w) != 2 || !strings.Contains(string(d.readState()["deferred"]), tc.reason) {
					t.Fatalf("scan %d: deferred %s, want both defects waiting with the reason", scan, d.readState()["deferred"])
				}
				// The first failure stops the scan's agent runs.
				if n := agentRuns(t, record); n != scan {
					t.Fatalf("scan %d: %d agent runs in all, want one per scan", scan, n)
				}
				at = at.Add(time.Hour)
			}
			if gh.CountCreates() != 0 {
				t.Fatalf("%d issues filed from a failing login", gh.CountCreates())
			}
			d.env = append(d.env, "FAKE_AGENT_MODE=valid") // logged in again
			if res := d.run("run", "--now", at.Format(time.RFC3339)); res.code != 0 || gh.CountCreates() != 2 {
				t.Fatalf("after the login: exit %d, %d issues, want 2\n%s", res.code, gh.CountCreates(), res.stderr)
			}
		})
	}
}

// An answer the CLI returned that is not a diagnosis (prose in codex's
// agent message, gemini's response) is the dossier's failure, charged to
// it as a retry: the agent itself worked.
func TestCodexAndGeminiUnusableAnswersAreTheDossiers(t *testing.T) {
	t.Parallel()
	for _, cli := range []string{"codex", "gemini"} {
		t.Run(cli, func(t *testing.T) {
			t.Parallel()
			gh := newGitHub(t)
			d := newDeployment(t, gh, deployOpts{harness: cli, agentMode: "garbage", env: []string{cliOnPath(t, cli)}})
			d.appendLog(failure(t0, "dispatch.failed", "handler panicked: nil map write"))
			d.run("run", "--now", t0.Add(time.Hour).Format(time.RFC3339))
			if a := d.stateMap("attempts"); len(a) != 1 {
				t.Fatalf("attempts %s, want the unusable answer counted against the defect\n", d.readState()["attempts"])
			}
			if w := string(d.readState()["deferred"]); strings.Contains(w, "waiting for the agent") {
				t.Fatalf("an unusable answer was taken for an agent outage: %s", w)
			}
		})
	}
}
