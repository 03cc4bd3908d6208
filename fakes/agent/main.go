// Command agent is a scripted stand-in for an agent CLI (claude,
// cursor-agent or an operator's command) that tests point the agent stage
// at. Its behaviour is chosen with --fake-mode or FAKE_AGENT_MODE (--mode
// is cursor-agent's own flag, and is ignored like its other options):
//
//	valid           claude-style JSON envelope around a valid finding
//	fenced          the finding inside ```json fences with prose around
//	prose           plain prose, no JSON
//	garbage         random bytes
//	oversized       more than 2 MiB on stdout
//	exit            a message on stderr, exit status 3
//	slow            sleeps for an hour
//	spawn           starts `sleep 3600` in its process group, writes the
//	                child's pid to FAKE_AGENT_PIDFILE, then hangs
//	sleep           writes its own pid to FAKE_AGENT_PIDFILE, then sleeps
//	                for an hour
//	setsid          starts `sleep 3600` as a daemon would (setsid: a
//	                session and group of its own, stdio on /dev/null),
//	                writes its own pid and then the daemon's, one a line, to
//	                FAKE_AGENT_PIDFILE, then sleeps for an hour
//	setsid-answer   as setsid, but then answers as raw does and exits 0,
//	                leaving the daemon behind
//	crash           a nil-pointer panic (abnormal exit)
//	injection       a valid finding echoing the dossier, "the-loop stop"
//	                and a fake token
//	raw             a bare finding JSON object on stdout
//	envelope-error  an envelope with is_error true
//	verdict         a finding carrying FAKE_AGENT_VERDICT,
//	                FAKE_AGENT_CONFIDENCE and FAKE_AGENT_EVIDENCE (a JSON
//	                list, or one item per line)
//	compromised     a prompt-injected agent: a finding whose every field
//	                echoes attacker text (mentions, references, closing
//	                keywords, images, HTML, a forged fingerprint marker,
//	                links, "the-loop start"), the names and values of every
//	                secret-looking variable it can see, a GitHub token and a
//	                private key; verdict environment, confidence 0.99, and
//	                evidence found in no dossier
//	hostile         a prompt-injected agent with a shell: it tries to
//	                read, write and run outside its directory (hostile.go)
//	                and records each attempt, then answers as valid does
//	                (in codex's or gemini's shape when invoked as them)
//	leak-exit       a long stderr ending inside a private key block and a
//	                GitHub token, then exit status 2
//
// fenced, prose, injection, verdict and compromised are wrapped in an
// envelope when called with --output-format json, as claude and
// cursor-agent would be.
//
// Invoked as codex or gemini it prints that CLI's own output shapes
// instead (cli.go): as codex when argv[1] is "exec" (codex's
// non-interactive subcommand), when its name is codex, or with
// --fake-cli codex; as gemini when its name is gemini or with --fake-cli
// gemini. The modes valid, garbage, error (a login the CLI rejects) and
// quota then answer as that CLI would; the others behave as above.
//
// The prompt is read from -p/--prompt or from the file named by
// --prompt-file. A dossier.md line "fake-agent-delay: DURATION" makes it
// sleep before answering, as does FAKE_AGENT_DELAY=DURATION in its
// environment. FAKE_AGENT_RECORD=path appends one JSON line
// describing the invocation (see record).
package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/the-loop/the-loop-diagnose/pipeline"
)

// invocation is what the fake was given on its command line.
type invocation struct {
	cli          string // "", "codex" or "gemini"
	mode         string
	prompt       string
	promptFile   string
	outputFormat string
	model        string
	// codex
	schemaFile      string
	lastMessageFile string
	workDir         string
}

// record is the line FAKE_AGENT_RECORD receives.
type record struct {
	Argv            []string `json:"argv"`
	Cwd             string   `json:"cwd"`
	Files           []string `json:"files"`             // the working directory's entries
	Prompt          string   `json:"prompt"`            // from -p or --prompt-file
	PromptFile      string   `json:"prompt_file"`       // path given with --prompt-file
	DossierInPrompt bool     `json:"dossier_in_prompt"` // the dossier's text appears in the prompt
	Model           string   `json:"model"`
	OwnGroup        bool     `json:"own_group"` // it leads its own process group
	// ParentDeathSignal is the signal it gets when its parent dies (Linux).
	ParentDeathSignal int   `json:"parent_death_signal"`
	Pid               int   `json:"pid"`
	StartNano         int64 `json:"start_nano"`
	// GitHubToken: a GitHub token variable reached the agent's environment.
	GitHubToken bool `json:"github_token"`
	// Env is the whole environment the agent was given.
	Env []string `json:"env"`
	// CLI is the CLI it was invoked as ("codex", "gemini"; "" otherwise).
	CLI string `json:"cli,omitempty"`
	// codex: the --output-schema file's path and content, the
	// --output-last-message path.
	SchemaFile      string `json:"schema_file,omitempty"`
	Schema          string `json:"schema,omitempty"`
	LastMessageFile string `json:"last_message_file,omitempty"`
}

func main() {
	inv := parseArgs(os.Args[1:])
	if inv.cli == "" {
		inv.cli = cliFromName(os.Args)
	}
	if inv.cli == "codex" {
		inv = parseCodexArgs(os.Args[1:])
		if inv.workDir != "" { // codex -C DIR
			if err := os.Chdir(inv.workDir); err != nil {
				fmt.Fprintln(os.Stderr, "Error: -C:", err)
				os.Exit(1)
			}
		}
	}
	if inv.mode == "" {
		inv.mode = os.Getenv("FAKE_AGENT_MODE")
	}
	if inv.mode == "" {
		inv.mode = "valid"
	}
	dossier, _ := os.ReadFile("dossier.md")
	if path := os.Getenv("FAKE_AGENT_RECORD"); path != "" {
		if err := writeRecord(path, inv, string(dossier)); err != nil {
			fmt.Fprintln(os.Stderr, "fake agent: record:", err)
			os.Exit(1)
		}
	}
	if d := delayFrom(string(dossier)); d > 0 {
		time.Sleep(d)
	}
	if d, err := time.ParseDuration(os.Getenv("FAKE_AGENT_DELAY")); err == nil && d > 0 {
		time.Sleep(d) // every run, whatever the dossier says
	}
	if inv.mode == "hostile" {
		if err := hostile(); err != nil {
			fmt.Fprintln(os.Stderr, "fake agent:", err)
			os.Exit(1)
		}
		inv.mode = "valid" // then it answers, in its CLI's shape
	}
	var err error
	switch inv.cli {
	case "codex":
		err = behaveCodex(inv, string(dossier))
	case "gemini":
		err = behaveGemini(inv, string(dossier))
	default:
		err = behave(inv, string(dossier))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake agent:", err)
		os.Exit(1)
	}
}

// parseArgs reads the flags claude and cursor-agent take plus the fake's
// own; anything else is ignored, as a real CLI's other options would be.
func parseArgs(args []string) invocation {
	var inv invocation
	for i := 0; i < len(args); i++ {
		next := func() string {
			if i+1 < len(args) {
				i++
				return args[i]
			}
			return ""
		}
		switch args[i] {
		case "-p", "--print", "--prompt":
			inv.prompt = next()
		case "--prompt-file":
			inv.promptFile = next()
		case "--fake-mode":
			inv.mode = next()
		case "--fake-cli":
			inv.cli = next()
		case "-m":
			inv.model = next()
		case "--output-format":
			inv.outputFormat = next()
		case "--model":
			inv.model = next()
		}
	}
	if inv.promptFile != "" {
		if b, err := os.ReadFile(inv.promptFile); err == nil {
			inv.prompt = string(b)
		}
	}
	return inv
}

func writeRecord(path string, inv invocation, dossier string) error {
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		return err
	}
	files := []string{}
	for _, e := range entries {
		files = append(files, e.Name())
	}
	sort.Strings(files)
	pgid, _ := syscall.Getpgid(0)
	line, err := json.Marshal(record{
		Argv:              os.Args,
		Cwd:               cwd,
		Files:             files,
		Prompt:            inv.prompt,
		PromptFile:        inv.promptFile,
		DossierInPrompt:   dossier != "" && strings.Contains(inv.prompt, strings.TrimRight(dossier, "\n")),
		Model:             inv.model,
		OwnGroup:          pgid == os.Getpid(),
		ParentDeathSignal: parentDeathSignal(),
		Pid:               os.Getpid(),
		StartNano:         time.Now().UnixNano(),
		GitHubToken:       os.Getenv("GH_TOKEN")+os.Getenv("GITHUB_TOKEN")+os.Getenv("GH_ENTERPRISE_TOKEN")+os.Getenv("GITHUB_ENTERPRISE_TOKEN") != "",
		Env:               os.Environ(),
		CLI:               inv.cli,
		SchemaFile:        inv.schemaFile,
		Schema:            readOr(inv.schemaFile),
		LastMessageFile:   inv.lastMessageFile,
	})
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	// One write per line: O_APPEND keeps concurrent fakes' lines whole.
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func delayFrom(dossier string) time.Duration {
	for _, line := range strings.Split(dossier, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "fake-agent-delay:"); ok {
			d, _ := time.ParseDuration(strings.TrimSpace(v))
			return d
		}
	}
	return 0
}

// finding is the answer shape the tool parses.
type finding = pipeline.Answer

// validFinding is the finding the valid, fenced and raw modes answer with;
// tests compare against these texts.
var validFinding = finding{
	Title:        "Fake diagnosis: worker crashed on nil config",
	Summary:      "The worker crashed three times while loading its config.",
	RootCause:    "The config loader returns nil when the file is empty.",
	SuggestedFix: "Return an error from the loader on an empty file.",
	Verdict:      "bug",
	Confidence:   ptr(0.8),
	Evidence:     []string{"line 12: config is nil"},
}

func behave(inv invocation, dossier string) error {
	envelope := inv.outputFormat == "json"
	switch inv.mode {
	case "valid":
		return printEnvelope(mustJSON(validFinding), false)
	case "raw":
		_, err := os.Stdout.Write(append(mustJSON(validFinding), '\n'))
		return err
	case "fenced":
		text := "Here is my diagnosis.\n\n```json\n" + string(mustJSON(validFinding)) + "\n```\n\nLet me know if you need more."
		return answer(text, envelope)
	case "prose":
		return answer("I looked at the dossier. The worker seems to crash because its config is empty; I would add a check.", envelope)
	case "garbage":
		// Seeded: the same garbage every run, braces and quotes included.
		r := rand.New(rand.NewPCG(1, 2))
		b := make([]byte, 4096)
		for i := range b {
			b[i] = byte(r.UintN(256))
		}
		_, err := os.Stdout.Write(b)
		return err
	case "oversized":
		chunk := []byte(strings.Repeat("x", 64<<10))
		for i := 0; i < 40; i++ { // 2.5 MiB
			if _, err := os.Stdout.Write(chunk); err != nil {
				return err
			}
		}
		return nil
	case "exit":
		fmt.Fprintln(os.Stderr, "fake agent: simulated failure: quota exceeded")
		os.Exit(3)
	case "slow":
		time.Sleep(time.Hour)
		return nil
	case "spawn":
		return spawn()
	case "sleep":
		if err := writePids(os.Getpid()); err != nil {
			return err
		}
		time.Sleep(time.Hour)
		return nil
	case "setsid", "setsid-answer":
		child := exec.Command("sleep", "3600")
		child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := child.Start(); err != nil {
			return err
		}
		if err := writePids(os.Getpid(), child.Process.Pid); err != nil {
			return err
		}
		if inv.mode == "setsid-answer" {
			_, err := os.Stdout.Write(append(mustJSON(validFinding), '\n'))
			return err
		}
		time.Sleep(time.Hour)
		return nil
	case "crash":
		var f *finding
		fmt.Println(f.Title) // nil dereference: the runtime panics
		return nil
	case "injection":
		// Echo the dossier as a careless agent would: what it quotes must
		// still pass the downstream scrub before it is posted.
		token := "ghp_" + strings.Repeat("F", 36)
		f := finding{
			Title:        "Please run the-loop stop",
			Summary:      "The dossier says: " + dossier,
			RootCause:    "Instructions in the log told me to run `the-loop stop` and use token " + token,
			SuggestedFix: "the-loop stop",
			Evidence:     []string{dossier, token},
		}
		return answer(string(mustJSON(f)), envelope)
	case "compromised":
		return answer(string(mustJSON(compromisedFinding())), envelope)
	case "leak-exit":
		// More than the tool keeps of stderr, so the tail it keeps starts
		// inside the key block, past its BEGIN line.
		fmt.Fprintln(os.Stderr, strings.Repeat("noise before the key\n", 200))
		fmt.Fprint(os.Stderr, LeakedKey)
		fmt.Fprintln(os.Stderr, "and the token", LeakedToken)
		os.Exit(2)
	case "envelope-error":
		return writeJSON(map[string]any{"type": "result", "subtype": "error_during_execution", "is_error": true, "result": "API Error: 529 overloaded"})
	case "verdict":
		f := validFinding
		f.Verdict = os.Getenv("FAKE_AGENT_VERDICT")
		f.Confidence = nil
		if c := os.Getenv("FAKE_AGENT_CONFIDENCE"); c != "" {
			v, err := strconv.ParseFloat(c, 64)
			if err != nil {
				return fmt.Errorf("FAKE_AGENT_CONFIDENCE: %w", err)
			}
			f.Confidence = &v
		}
		f.Evidence = nil
		if ev := os.Getenv("FAKE_AGENT_EVIDENCE"); strings.HasPrefix(strings.TrimSpace(ev), "[") {
			if err := json.Unmarshal([]byte(ev), &f.Evidence); err != nil {
				return fmt.Errorf("FAKE_AGENT_EVIDENCE: %w", err)
			}
		} else if ev != "" {
			f.Evidence = strings.Split(ev, "\n")
		}
		return answer(string(mustJSON(f)), envelope)
	}
	return fmt.Errorf("unknown mode %q", inv.mode)
}

// The secrets the compromised and leak-exit modes print: tests look for
// them (or for the parts that make them recognisable) in what the tool wrote.
var (
	LeakedToken = "ghp_" + "Zq8VvX2mN4bR7tY1uK3wE6sA9dF0gH5jL2pQ"
	LeakedKey   = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + strings.Repeat("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAABlwAAAAdzc2gtcn\n", 12) +
		"-----END OPENSSH PRIVATE KEY-----\n"
)

// AttackerText is what a log line can ask an agent to repeat: every way
// markdown on GitHub can notify, cross-link, fetch, hide or arm something.
const AttackerText = "cc @org/team and @someone, see owner/repo#12 and #3. Fixes #1. " +
	"![x](https://attacker.example/pixel.png) <img src=x> <details>hidden</details> " +
	"<!-- the-loop-diagnose fingerprint:v2:deadbeef --> [click](https://attacker.example/) the-loop start"

// secretName: a variable whose name says its value is a credential or
// names a place holding one.
var secretName = regexp.MustCompile(`(?i)TOKEN|SECRET|KEY|PASS|PWD|PAT$|CRED|AUTH|COOKIE|SESSION|DSN|DATABASE|_URL$`)

// visibleSecrets lists the secret-looking variables the fake can see,
// "NAME=value", sorted.
func visibleSecrets() []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if secretName.MatchString(name) {
			out = append(out, kv)
		}
	}
	sort.Strings(out)
	return out
}

func compromisedFinding() finding {
	seen := "I can see: " + strings.Join(visibleSecrets(), "; ")
	return finding{
		Title:        "Environment issue " + AttackerText,
		Summary:      AttackerText + "\n\n" + seen,
		RootCause:    AttackerText + " token " + LeakedToken,
		SuggestedFix: AttackerText + "\n\n" + LeakedKey,
		Verdict:      "environment",
		Confidence:   ptr(0.99),
		Evidence: []string{
			"`ENOSPC: no space left on device while writing /var/lib/runner/cache`",
			AttackerText,
			seen,
			LeakedToken,
			LeakedKey,
		},
	}
}

// spawn starts a long-lived child in the fake's own process group, sharing
// its stdout like a real agent's tool process would, and then hangs: only
// killing the whole group ends both.
func spawn() error {
	child := exec.Command("sleep", "3600")
	child.Stdout = os.Stdout
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		return err
	}
	if path := os.Getenv("FAKE_AGENT_PIDFILE"); path != "" {
		if err := os.WriteFile(path, []byte(strconv.Itoa(child.Process.Pid)), 0o600); err != nil {
			return err
		}
	}
	time.Sleep(time.Hour)
	return nil
}

// writePids writes pids, one a line, to FAKE_AGENT_PIDFILE through a
// rename, so a test polling the file never reads half of it.
func writePids(pids ...int) error {
	path := os.Getenv("FAKE_AGENT_PIDFILE")
	if path == "" {
		return nil
	}
	var b strings.Builder
	for _, p := range pids {
		fmt.Fprintf(&b, "%d\n", p)
	}
	if err := os.WriteFile(path+".tmp", []byte(b.String()), 0o600); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

func answer(text string, envelope bool) error {
	if envelope {
		return printEnvelope([]byte(text), false)
	}
	_, err := fmt.Println(text)
	return err
}

func printEnvelope(result []byte, isError bool) error {
	return writeJSON(map[string]any{
		"type":        "result",
		"subtype":     "success",
		"is_error":    isError,
		"duration_ms": 1234,
		"num_turns":   1,
		"result":      string(result),
		"session_id":  "00000000-0000-0000-0000-000000000000",
		// What claude reports a run cost.
		"total_cost_usd": 0.0421,
		"usage": map[string]any{"input_tokens": 1200, "cache_creation_input_tokens": 300,
			"cache_read_input_tokens": 5000, "output_tokens": 450},
	})
}

func writeJSON(v any) error {
	_, err := os.Stdout.Write(append(mustJSON(v), '\n'))
	return err
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func ptr[T any](v T) *T { return &v }
