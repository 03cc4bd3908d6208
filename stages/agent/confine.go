package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"github.com/the-loop/the-loop-diagnose/stages/agent/sandbox"
)

// The kernel's layer of the agent's confinement (DESIGN.md "The agent
// meets the kernel"): a known CLI (claude, cursor, codex, gemini) and all
// it starts reach, of the file system, only what confinePolicy lists: no
// other process's /proc entries, no file of ours.

// stateDirs are each CLI's own state under HOME (its login, settings,
// sessions, caches): read-write, as the CLI writes there on every run.
// They are created when missing: a rule needs a path that exists, and the
// CLI, confined, could not create them in HOME. claude's ~/.claude.json is
// a file beside its directory (stateFiles).
var stateDirs = map[string][]string{
	HarnessClaude: {".claude"},
	HarnessCursor: {".cursor", ".config/cursor"},
	HarnessCodex:  {".codex"},
	HarnessGemini: {".gemini"},
}

// Confined reports whether the kernel confines harness's agent
// (where it has Landlock): the known CLIs. An operator's command is
// theirs to restrict: what it needs is theirs to know.
func Confined(harness string) bool {
	_, ok := Binaries[harness]
	return ok
}

// stateFiles are state files under HOME, read-write when they exist.
var stateFiles = map[string][]string{
	HarnessClaude: {".claude.json"},
}

// stateEnv are the variables that move a CLI's state elsewhere.
var stateEnv = map[string]string{
	HarnessClaude: "CLAUDE_CONFIG_DIR",
	HarnessCodex:  "CODEX_HOME",
}

// confinePolicy is what the agent run in root (its directory, read-write)
// by path with env may reach, or nil for a harness the kernel does not
// confine.
func confinePolicy(cfg Config, path, root string, env []string) *sandbox.Policy {
	dirs, ok := stateDirs[cfg.Harness]
	if !ok {
		return nil
	}
	get := func(name string) string { v, _ := envLookup(env, name); return v }
	p := &sandbox.Policy{ReadWrite: append([]string{root}, sandbox.SystemReadWrite...)}
	var state []string
	if home := get("HOME"); filepath.IsAbs(home) {
		for _, d := range dirs {
			state = append(state, filepath.Join(home, d))
		}
		for _, f := range stateFiles[cfg.Harness] {
			p.ReadWrite = append(p.ReadWrite, filepath.Join(home, f))
		}
	}
	if v := get(stateEnv[cfg.Harness]); filepath.IsAbs(v) {
		state = append(state, v)
	}
	for _, d := range state {
		if err := os.MkdirAll(d, 0o700); err != nil {
			cfg.Log.Warn().Err(err).Str("dir", d).Msg("cannot create the agent's state directory; the agent cannot write there")
		}
	}
	p.ReadWrite = append(p.ReadWrite, state...)
	p.ReadWrite = append(p.ReadWrite, cfg.ReadWrite...)
	p.ReadOnly = append(slices.Clone(sandbox.SystemReadOnly), sandbox.Installation(path, get("PATH"))...)
	if cfg.SourcePath != "" {
		p.ReadOnly = append(p.ReadOnly, cfg.SourcePath)
	}
	return p
}

// confineEnv points the agent's temporary files into its own
// directory (root/tmp): the host's /tmp is out of its reach.
func confineEnv(env []string, root string) ([]string, error) {
	tmp := filepath.Join(root, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return nil, err
	}
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "TMPDIR=") })
	return append(out, "TMPDIR="+tmp), nil
}

// hardened makes the tool non-dumpable once, before its first agent
// runs, and says once, in the log, when the kernel has no Landlock and
// what still holds.
var hardened sync.Once

func harden(log zerolog.Logger) {
	hardened.Do(func() {
		if err := sandbox.Harden(); err != nil {
			log.Warn().Err(err).Msg("cannot mark the tool non-dumpable: an agent running as our user may read our /proc entries where the kernel has no Landlock")
		}
		if ok, detail := sandbox.Available(); !ok {
			log.Warn().Str("detail", detail).Msg("agent runs without the kernel's file-system confinement")
		}
	})
}
