package agent

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/the-loop/the-loop-diagnose/stages/agent/sandbox"
)

// BenchmarkAgentExecConfinement is what the kernel's confinement adds to
// one agent run: the fake agent answering at once, started by the
// supervisor directly and through the confining helper (one more exec of
// this binary and a Landlock ruleset). A real CLI's run takes seconds.
func BenchmarkAgentExecConfinement(b *testing.B) {
	root := b.TempDir()
	work := filepath.Join(root, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		b.Fatal(err)
	}
	os.WriteFile(filepath.Join(work, dossierFile), []byte("d"), 0o600)
	env := append(allowedEnv(os.Environ(), nil), "FAKE_AGENT_MODE=raw")
	argv := []string{fakeBinary}
	cfg := Config{Harness: HarnessClaude}
	for _, bc := range []struct {
		name     string
		confined bool
	}{{"unconfined", false}, {"confined", true}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				var policy func(path string) *sandbox.Policy
				if bc.confined {
					policy = func(path string) *sandbox.Policy { return confinePolicy(cfg, path, root, env) }
				}
				res := execute(context.Background(), time.Minute, root, work, argv, env, policy, nil)
				if res.failure != "" {
					b.Fatal(res.failure)
				}
			}
		})
	}
}
