package agent

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// fakeAs links the fake agent under a CLI's own name, as a PATH
// lookup of that CLI would find it.
func fakeAs(t *testing.T, name string) string {
	t.Helper()
	link := filepath.Join(t.TempDir(), name)
	if err := os.Symlink(fakeBinary, link); err != nil {
		t.Fatal(err)
	}
	return link
}

// Flags that would let codex or gemini run commands unasked, write, or
// leave its sandbox.
var unsafeFlags = []string{"--full-auto", "--dangerously-bypass-approvals-and-sandbox", "workspace-write",
	"danger-full-access", "--yolo", "-y", "yolo", "auto_edit", "--allowed-tools", "--search", "--add-dir", "--include-directories"}

func noUnsafeFlag(t *testing.T, argv []string) {
	t.Helper()
	for _, bad := range unsafeFlags {
		if slices.Contains(argv, bad) {
			t.Errorf("argv carries %q: %q", bad, argv)
		}
	}
}

func TestAgentCodexArgvIsReadOnlyExec(t *testing.T) {
	cfg := Config{Harness: HarnessCodex, Model: "gpt-5-codex"}
	argv, err := buildArgv(cfg, "-the prompt", "/r/prompt.md", "/r/work")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"codex", "exec", "--json", "--sandbox", "read-only", "--skip-git-repo-check", "--color", "never",
		"-C", "/r/work", "-c", "mcp_servers={}", "--output-schema", "/r/answer-schema.json",
		"--output-last-message", "/r/last-message.txt", "-m", "gpt-5-codex", "--", "-the prompt"}
	if !slices.Equal(argv, want) {
		t.Errorf("argv\n %q\nwant\n %q", argv, want)
	}
	noUnsafeFlag(t, argv)
	if argv, _ := buildArgv(Config{Harness: HarnessCodex, Binary: "/opt/codex"}, "p", "/r/prompt.md", "/r/work"); argv[0] != "/opt/codex" || slices.Contains(argv, "-m") {
		t.Errorf("binary override / no model: %q", argv)
	}
}

func TestAgentGeminiArgvIsReadOnlyHeadless(t *testing.T) {
	argv, err := buildArgv(Config{Harness: HarnessGemini, Model: "gemini-2.5-pro"}, "the prompt", "/r/prompt.md", "/r/work")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"gemini", "-p", "the prompt", "--output-format", "json", "--approval-mode", "default",
		"--extensions", "none", "-m", "gemini-2.5-pro"}
	if !slices.Equal(argv, want) {
		t.Errorf("argv\n %q\nwant\n %q", argv, want)
	}
	noUnsafeFlag(t, argv)
}

// The schema codex is asked to answer in is the answer ParseAnswer reads,
// in the shape OpenAI's strict structured outputs accept.
func TestAgentCodexSchemaIsStrict(t *testing.T) {
	s := string(codexSchema())
	for _, want := range []string{`"additionalProperties": false`, `"root_cause"`, `"suggested_fix"`, `"evidence"`, `"inconclusive"`} {
		if !strings.Contains(s, want) {
			t.Errorf("schema lacks %s:\n%s", want, s)
		}
	}
}

const codexValidText = `{"title":"T","summary":"S","root_cause":"R","suggested_fix":"F","verdict":"bug","confidence":0.7,"evidence":["e"]}`

func codexStream(lines ...string) []byte {
	return []byte(strings.Join(append([]string{`{"type":"thread.started","thread_id":"t1"}`, `{"type":"turn.started"}`}, lines...), "\n") + "\n")
}

func codexMessage(text string) string {
	return `{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":` + string(mustJSONString(text)) + `}}`
}

func mustJSONString(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

const codexUsage = `{"type":"turn.completed","usage":{"input_tokens":24763,"cached_input_tokens":24448,"output_tokens":122}}`

func TestAgentCodexAnswer(t *testing.T) {
	cases := []struct {
		name       string
		stdout     []byte
		last       string
		wantTitle  string
		wantErr    string
		reported   bool
		wantTokens [2]int64 // in, out; zero: no cost
	}{
		{name: "the stream's last agent message", stdout: codexStream(codexMessage("thinking aloud"), codexMessage(codexValidText), codexUsage),
			wantTitle: "T", wantTokens: [2]int64{24763, 122}},
		{name: "the last-message file is preferred", stdout: codexStream(codexMessage("no JSON here"), codexUsage), last: codexValidText,
			wantTitle: "T", wantTokens: [2]int64{24763, 122}},
		{name: "an empty last-message file falls back to the stream", stdout: codexStream(codexMessage(codexValidText), codexUsage), last: "\n",
			wantTitle: "T", wantTokens: [2]int64{24763, 122}},
		{name: "codex before 0.46 (item_type)", stdout: codexStream(`{"type":"item.completed","item":{"id":"item_0","item_type":"assistant_message","text":` + string(mustJSONString(codexValidText)) + `}}`),
			wantTitle: "T"},
		{name: "a retry notice before a completed turn", stdout: codexStream(`{"type":"error","message":"Reconnecting... 1/5"}`, codexMessage(codexValidText), codexUsage),
			wantTitle: "T", wantTokens: [2]int64{24763, 122}},
		{name: "a failed turn is the CLI's error", stdout: codexStream(`{"type":"error","message":"unexpected status 401 Unauthorized"}`, `{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized"}}`),
			wantErr: "agent reported an error (codex turn.failed): \"unexpected status 401 Unauthorized\"", reported: true},
		{name: "an error and no turn", stdout: codexStream(`{"type":"error","message":"Quota exceeded. Check your plan and billing details."}`),
			wantErr: "(codex error): \"Quota exceeded", reported: true},
		{name: "prose is the dossier's", stdout: codexStream(codexMessage("I think the config is empty."), codexUsage),
			wantErr: "agent answer is not JSON", wantTokens: [2]int64{24763, 122}},
		{name: "no final message", stdout: codexStream(codexUsage), wantErr: "agent returned no final message", wantTokens: [2]int64{24763, 122}},
		{name: "not codex's events", stdout: []byte("Reading prompt from stdin...\nhello"), wantErr: "agent output is not codex's JSON events"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, cost, err := codexAnswer(tc.stdout, []byte(tc.last))
			checkAnswer(t, a, cost, err, tc.wantTitle, tc.wantErr, tc.reported, tc.wantTokens)
		})
	}
}

func checkAnswer(t *testing.T, a *pipeline.Answer, cost *pipeline.Cost, err error, wantTitle, wantErr string, reported bool, tokens [2]int64) {
	t.Helper()
	if wantTitle != "" {
		if err != nil || a == nil || a.Title != wantTitle {
			t.Fatalf("answer %+v, err %v; want title %q", a, err, wantTitle)
		}
	} else {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("err %v, want one containing %q", err, wantErr)
		}
		var r *reportedError
		if errors.As(err, &r) != reported {
			t.Errorf("reported by the CLI = %v, want %v (%v)", !reported, reported, err)
		}
	}
	switch {
	case tokens == [2]int64{} && cost != nil:
		t.Errorf("cost %+v, want none", cost)
	case tokens != [2]int64{} && (cost == nil || cost.InputTokens != tokens[0] || cost.OutputTokens != tokens[1] || cost.USD != 0):
		t.Errorf("cost %+v, want %v tokens and USD 0", cost, tokens)
	}
}

const geminiStatsJSON = `"stats":{"models":{"gemini-2.5-pro":{"api":{"totalRequests":1},"tokens":{"input":8123,"prompt":8123,"candidates":412,"total":9135,"cached":0,"thoughts":600,"tool":0}},` +
	`"gemini-2.5-flash-lite":{"tokens":{"prompt":100,"candidates":10,"total":110}}},"tools":{"totalCalls":0},"files":{}}`

func TestAgentGeminiAnswer(t *testing.T) {
	cases := []struct {
		name       string
		stdout     string
		wantTitle  string
		wantErr    string
		reported   bool
		wantTokens [2]int64
	}{
		{name: "response fenced, stats summed over models", stdout: "{\n  \"session_id\": \"s\",\n  \"response\": " + string(mustJSONString("```json\n"+codexValidText+"\n```")) + ",\n  " + geminiStatsJSON + "\n}\n",
			wantTitle: "T", wantTokens: [2]int64{8223, 1022}},
		{name: "a warning line before the object", stdout: "[WARN] skipping unreadable directory\n{\"response\": " + string(mustJSONString(codexValidText)) + "}",
			wantTitle: "T"},
		{name: "an error object is the CLI's", stdout: `{"error":{"type":"FatalAuthenticationError","message":"API key not valid. Please pass a valid API key.","code":41}}`,
			wantErr: "agent reported an error (gemini FatalAuthenticationError, code 41): \"API key not valid", reported: true},
		{name: "prose is the dossier's", stdout: `{"response":"The config is empty, I think.",` + geminiStatsJSON + `}`,
			wantErr: "agent answer is not JSON", wantTokens: [2]int64{8223, 1022}},
		{name: "an empty response", stdout: `{"response":"  "}`, wantErr: "agent returned an empty response"},
		{name: "not gemini's output", stdout: "The config is empty.", wantErr: "agent output is not gemini's JSON output"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, cost, err := geminiAnswer([]byte(tc.stdout))
			checkAnswer(t, a, cost, err, tc.wantTitle, tc.wantErr, tc.reported, tc.wantTokens)
		})
	}
	// What gemini prints to stderr as it exits non-zero.
	stderr := "Loaded cached credentials.\n{\n  \"error\": {\n    \"type\": \"TerminalQuotaError\",\n    \"message\": \"You have exhausted your capacity on this model.\",\n    \"code\": 429\n  }\n}\n"
	if err := geminiFailure(nil, []byte(stderr)); err == nil || err.Error() != `agent reported an error (gemini TerminalQuotaError, code 429): "You have exhausted your capacity on this model."` {
		t.Errorf("stderr error = %v", err)
	}
	if err := geminiFailure(nil, []byte("Segmentation fault\n")); err != nil {
		t.Errorf("plain stderr read as gemini's error: %v", err)
	}
}

// Through the fake, invoked as each CLI: a valid run is an answer with its
// tokens; an unusable answer is the dossier's (Unusable); a login the CLI
// rejects and a spent quota are the agent's own failure, quoting the
// CLI's reason. The CLI runs in the dossier-only directory with its
// read-only flags, the schema and last-message files beside it, outside.
func TestAgentCodexAndGeminiThroughTheFake(t *testing.T) {
	for _, tc := range []struct {
		cli, mode  string
		wantTitle  string
		unusable   bool
		wantFail   []string
		wantTokens [2]int64
	}{
		{cli: "codex", mode: "valid", wantTitle: fakeTitle, wantTokens: [2]int64{24763, 122}},
		{cli: "codex", mode: "garbage", unusable: true, wantFail: []string{"agent answer is not JSON"}, wantTokens: [2]int64{24763, 122}},
		{cli: "codex", mode: "error", wantFail: []string{"agent exited with exit status 1: agent reported an error (codex turn.failed)", "401 Unauthorized", "Incorrect API key provided"}},
		{cli: "codex", mode: "quota", wantFail: []string{"exit status 1", "Quota exceeded. Check your plan and billing details."}},
		{cli: "gemini", mode: "valid", wantTitle: fakeTitle, wantTokens: [2]int64{8123, 1012}},
		{cli: "gemini", mode: "garbage", unusable: true, wantFail: []string{"agent answer is not JSON"}, wantTokens: [2]int64{8123, 1012}},
		{cli: "gemini", mode: "error", wantFail: []string{"agent exited with exit status 1: agent reported an error (gemini Error, code 1)", "Please set an Auth method"}},
		{cli: "gemini", mode: "quota", wantFail: []string{"exit status 173", "(gemini TerminalQuotaError, code 429)", "exhausted your capacity"}},
	} {
		t.Run(tc.cli+" "+tc.mode, func(t *testing.T) {
			record := useFake(t, tc.mode)
			t.Setenv("GEMINI_API_KEY", "gk-test")
			t.Setenv("OPENAI_API_KEY", "sk-test")
			t.Setenv("CODEX_API_KEY", "ck-test")
			t.Setenv("GEMINI_CLI_TRUST_WORKSPACE", "")
			f := runAgent(t, Config{Harness: tc.cli, Binary: fakeAs(t, tc.cli), Model: "m-1"}, testDossier("fp", "worker 7 crashed\n"))[0]
			if tc.wantTitle != "" {
				if f.Failure != "" || f.Answer == nil || f.Answer.Title != tc.wantTitle {
					t.Fatalf("want an answer, got %+v failure %q", f.Answer, f.Failure)
				}
			} else {
				if f.Answer != nil {
					t.Fatalf("want a failure, got %+v", f.Answer)
				}
				for _, w := range tc.wantFail {
					if !strings.Contains(f.Failure, w) {
						t.Errorf("failure %q lacks %q", f.Failure, w)
					}
				}
				if f.Unusable != tc.unusable {
					t.Errorf("Unusable = %v, want %v (%s)", f.Unusable, tc.unusable, f.Failure)
				}
			}
			if tc.wantTokens != [2]int64{} && (f.Cost == nil || f.Cost.InputTokens != tc.wantTokens[0] || f.Cost.OutputTokens != tc.wantTokens[1]) {
				t.Errorf("cost %+v, want tokens %v", f.Cost, tc.wantTokens)
			}
			rec := oneRecord(t, record)
			var files struct {
				SchemaFile      string `json:"schema_file"`
				Schema          string `json:"schema"`
				LastMessageFile string `json:"last_message_file"`
			}
			if b, err := os.ReadFile(record); err != nil || json.Unmarshal(b, &files) != nil {
				t.Fatalf("record: %v", err)
			}
			if !slices.Equal(rec.Files, []string{"dossier.md"}) {
				t.Errorf("the %s's directory holds %q", tc.cli, rec.Files)
			}
			noUnsafeFlag(t, rec.Argv)
			env := strings.Join(rec.Env, "\n")
			switch tc.cli {
			case "codex":
				want, _ := buildArgv(Config{Harness: "codex", Binary: rec.Argv[0], Model: "m-1"}, Prompt(testDossier("fp", "worker 7 crashed\n")), filepath.Join(filepath.Dir(rec.Cwd), "prompt.md"), rec.Cwd)
				if !slices.Equal(rec.Argv, want) {
					t.Errorf("argv\n %q\nwant\n %q", rec.Argv, want)
				}
				if !strings.Contains(files.Schema, `"root_cause"`) || strings.HasPrefix(files.SchemaFile, rec.Cwd) || strings.HasPrefix(files.LastMessageFile, rec.Cwd) ||
					filepath.Dir(files.SchemaFile) != filepath.Dir(rec.Cwd) {
					t.Errorf("schema %q at %s, last message at %s: want both beside %s, not in it", files.Schema, files.SchemaFile, files.LastMessageFile, rec.Cwd)
				}
				if !strings.Contains(env, "OPENAI_API_KEY=sk-test") || !strings.Contains(env, "CODEX_API_KEY=ck-test") || strings.Contains(env, "GEMINI_API_KEY") {
					t.Errorf("codex's env: %q", rec.Env)
				}
			case "gemini":
				if rec.Model != "m-1" || !slices.Contains(rec.Argv, "--approval-mode") || rec.Argv[slices.Index(rec.Argv, "--approval-mode")+1] != "default" {
					t.Errorf("argv %q", rec.Argv)
				}
				if !strings.Contains(env, "GEMINI_API_KEY=gk-test") || !strings.Contains(env, "GEMINI_CLI_TRUST_WORKSPACE=true") || strings.Contains(env, "OPENAI_API_KEY") {
					t.Errorf("gemini's env: %q", rec.Env)
				}
			}
		})
	}
}

// An upgrade that adds no allowedEnv keeps codex's and gemini's own
// credentials flowing to them, and to them only.
func TestCodexAndGeminiCredentialsNeedNoListing(t *testing.T) {
	parent := []string{"PATH=/bin", "OPENAI_API_KEY=a", "CODEX_HOME=/h/.codex", "GEMINI_API_KEY=b", "GOOGLE_CLOUD_PROJECT=p", "ANTHROPIC_API_KEY=c"}
	for harness, want := range map[string][]string{
		HarnessCodex:  {"PATH=/bin", "OPENAI_API_KEY=a", "CODEX_HOME=/h/.codex"},
		HarnessGemini: {"PATH=/bin", "GEMINI_API_KEY=b", "GOOGLE_CLOUD_PROJECT=p"},
	} {
		if got := allowedEnv(parent, harnessEnv[harness]); !slices.Equal(got, want) {
			t.Errorf("%s: env %q, want %q", harness, got, want)
		}
	}
}
