package agent

import (
	"slices"
	"testing"
)

// The setup an OpenAI user already has reaches codex 0.171 the way it
// reads it: OPENAI_BASE_URL as -c openai_base_url (a TOML string),
// OPENAI_API_KEY as CODEX_API_KEY unless one is set.
func TestCodexGetsTheUsersOpenAISetup(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", `http://gw.internal:8080/v1?a="b"`)
	argv, err := buildArgv(Config{Harness: HarnessCodex}, "p", "/r/prompt.md", "/r/work")
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.Index(argv, `openai_base_url="http://gw.internal:8080/v1?a=\"b\""`); i < 1 || argv[i-1] != "-c" || slices.Index(argv, "--") < i {
		t.Errorf("codex argv does not set openai_base_url before the prompt: %q", argv)
	}
	t.Setenv("OPENAI_BASE_URL", "")
	if argv, _ := buildArgv(Config{Harness: HarnessCodex}, "p", "/r/prompt.md", "/r/work"); slices.ContainsFunc(argv, func(a string) bool { return len(a) > 15 && a[:15] == "openai_base_url" }) {
		t.Errorf("openai_base_url set without OPENAI_BASE_URL: %q", argv)
	}

	env := harnessAdaptEnv(HarnessCodex, []string{"PATH=/bin", "OPENAI_API_KEY=sk-user"})
	if !slices.Contains(env, "CODEX_API_KEY=sk-user") {
		t.Errorf("OPENAI_API_KEY did not reach codex as CODEX_API_KEY: %q", env)
	}
	env = harnessAdaptEnv(HarnessCodex, []string{"OPENAI_API_KEY=sk-user", "CODEX_API_KEY=ck-own"})
	if slices.Contains(env, "CODEX_API_KEY=sk-user") {
		t.Errorf("a CODEX_API_KEY of the user's own was overridden: %q", env)
	}
	if env := harnessAdaptEnv(HarnessGemini, []string{"OPENAI_API_KEY=sk-user"}); len(env) != 1 {
		t.Errorf("another CLI got codex's translation: %q", env)
	}
}
