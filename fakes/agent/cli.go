package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The shapes codex and gemini print, as their CLIs print them: what the
// tool is tested against. The facts are from their documentation and
// source (codex exec --json events; gemini's JsonFormatter and
// handleError), not from a run of either.

// cliFromName tells the CLI the fake was invoked as, from argv.
func cliFromName(argv []string) string {
	switch strings.TrimSuffix(filepath.Base(argv[0]), ".exe") {
	case "codex":
		return "codex"
	case "gemini":
		return "gemini"
	}
	if len(argv) > 1 && argv[1] == "exec" {
		return "codex"
	}
	return ""
}

// parseCodexArgs reads `codex exec [OPTIONS] [--] PROMPT`.
func parseCodexArgs(args []string) invocation {
	inv := invocation{cli: "codex"}
	valued := map[string]*string{
		"--output-schema": &inv.schemaFile, "--output-last-message": &inv.lastMessageFile, "-o": &inv.lastMessageFile,
		"-m": &inv.model, "--model": &inv.model, "-C": &inv.workDir, "--cd": &inv.workDir, "--fake-mode": &inv.mode,
	}
	// Options codex takes a value for that the fake does not use.
	skip := map[string]bool{"-s": true, "--sandbox": true, "--color": true, "-c": true, "--config": true,
		"-p": true, "--profile": true, "-i": true, "--image": true, "--fake-cli": true}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "exec" && i == 0:
		case a == "--":
			if i+1 < len(args) {
				inv.prompt = args[i+1]
			}
			i = len(args)
		case valued[a] != nil:
			if i+1 < len(args) {
				i++
				*valued[a] = args[i]
			}
		case skip[a]:
			i++
		case strings.HasPrefix(a, "-"):
		default:
			inv.prompt = a
		}
	}
	if inv.mode == "" {
		inv.mode = os.Getenv("FAKE_AGENT_MODE")
	}
	return inv
}

func readOr(path string) string {
	if path == "" {
		return ""
	}
	b, _ := os.ReadFile(path)
	return string(b)
}

// codexUsage is what a short codex turn reports.
var codexUsage = map[string]any{"input_tokens": 24763, "cached_input_tokens": 24448, "output_tokens": 122}

// behaveCodex answers as `codex exec --json` does: JSONL events on
// stdout, the final message also written to --output-last-message; a
// failed turn is an error event and turn.failed, then exit status 1.
func behaveCodex(inv invocation, dossier string) error {
	if inv.schemaFile != "" {
		var schema map[string]any
		b, err := os.ReadFile(inv.schemaFile)
		if err == nil {
			err = json.Unmarshal(b, &schema)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "Error: failed to load output schema file %s: %v\n", inv.schemaFile, err)
			os.Exit(1)
		}
	}
	events := []map[string]any{
		{"type": "thread.started", "thread_id": "0199a213-81c0-7800-8aa1-bbab2a035a53"},
		{"type": "turn.started"},
	}
	fail := func(message string) error {
		events = append(events,
			map[string]any{"type": "error", "message": message},
			map[string]any{"type": "turn.failed", "error": map[string]any{"message": message}})
		if err := writeLines(events); err != nil {
			return err
		}
		os.Exit(1)
		return nil
	}
	var text string
	switch inv.mode {
	case "valid":
		text = string(mustJSON(validFinding))
	case "garbage":
		text = "I looked at the dossier. The worker seems to crash because its config is empty; I would add a check."
	case "error":
		return fail(`unexpected status 401 Unauthorized: {"error":{"message":"Incorrect API key provided: sk-proj-********************abcd. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","code":"invalid_api_key"}}`)
	case "quota":
		return fail("Quota exceeded. Check your plan and billing details.")
	default:
		return behave(inv, dossier)
	}
	events = append(events,
		map[string]any{"type": "item.completed", "item": map[string]any{"id": "item_0", "type": "reasoning", "text": "**Reading the dossier**"}},
		map[string]any{"type": "item.completed", "item": map[string]any{"id": "item_1", "type": "agent_message", "text": text}},
		map[string]any{"type": "turn.completed", "usage": codexUsage})
	if inv.lastMessageFile != "" {
		if err := os.WriteFile(inv.lastMessageFile, []byte(text), 0o600); err != nil {
			return err
		}
	}
	return writeLines(events)
}

func writeLines(events []map[string]any) error {
	var b strings.Builder
	for _, ev := range events {
		b.Write(mustJSON(ev))
		b.WriteByte('\n')
	}
	_, err := os.Stdout.WriteString(b.String())
	return err
}

// geminiStats is gemini's session metrics for a short run.
func geminiStats(model string) map[string]any {
	if model == "" {
		model = "gemini-2.5-pro"
	}
	return map[string]any{
		"models": map[string]any{model: map[string]any{
			"api":    map[string]any{"totalRequests": 1, "totalErrors": 0, "totalLatencyMs": 5123},
			"tokens": map[string]any{"input": 8123, "prompt": 8123, "candidates": 412, "total": 9135, "cached": 0, "thoughts": 600, "tool": 0},
		}},
		"tools": map[string]any{"totalCalls": 0, "totalSuccess": 0, "totalFail": 0, "totalDurationMs": 0,
			"totalDecisions": map[string]any{"accept": 0, "reject": 0, "modify": 0, "auto_accept": 0}, "byName": map[string]any{}},
		"files": map[string]any{"totalLinesAdded": 0, "totalLinesRemoved": 0},
	}
}

// behaveGemini answers as `gemini -p ... --output-format json` does: one
// indented JSON object on stdout; a failure is {"error": {type, message,
// code}} on stderr and a non-zero exit.
func behaveGemini(inv invocation, dossier string) error {
	fail := func(typ, message string, code, exit int) error {
		fmt.Fprintln(os.Stderr, "Loaded cached credentials.")
		b, _ := json.MarshalIndent(map[string]any{"error": map[string]any{"type": typ, "message": message, "code": code}}, "", "  ")
		fmt.Fprintln(os.Stderr, string(b))
		os.Exit(exit)
		return nil
	}
	var text string
	switch inv.mode {
	case "valid":
		text = "```json\n" + string(mustJSON(validFinding)) + "\n```"
	case "garbage":
		text = "I looked at the dossier. The worker seems to crash because its config is empty; I would add a check."
	case "error":
		return fail("Error", "Please set an Auth method in your "+filepath.Join(os.Getenv("HOME"), ".gemini", "settings.json")+
			" or specify one of the following environment variables before running: GEMINI_API_KEY, GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_GENAI_USE_GCA", 1, 1)
	case "quota":
		// gemini exits with the HTTP status, which the kernel truncates (429 → 173).
		return fail("TerminalQuotaError", "You have exhausted your capacity on this model. Your quota will reset after 2h13m.", 429, 429)
	default:
		return behave(inv, dossier)
	}
	b, _ := json.MarshalIndent(map[string]any{
		"session_id": "5f0c6f4e-3f5e-4f59-9d51-6b3c1a0e2b7d",
		"response":   text,
		"stats":      geminiStats(inv.model),
	}, "", "  ")
	_, err := fmt.Println(string(b))
	return err
}
