package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/rs/zerolog"

	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/redact"
	"github.com/the-loop/the-loop-diagnose/stages"
	"github.com/the-loop/the-loop-diagnose/stages/agent"
	"github.com/the-loop/the-loop-diagnose/stages/agent/sandbox"
	"github.com/the-loop/the-loop-diagnose/stages/tracker"
	"github.com/the-loop/the-loop-diagnose/store"
)

// cmdDoctor checks a setup end to end and files nothing: the config, the
// event log and where diagnosis.* events go, the store, GitHub (token,
// repository, the right to create issues, the label) and the agent (its
// binary, its confinement, and a one-line probe unless --no-agent). One
// line per check, with what to do when it fails; exit 0 only when every
// check passes, 1 when one fails, 2 for a usage or config error.
func cmdDoctor(ctx context.Context, args []string, io stdio) error {
	fs := newFlagSet("doctor", io)
	var c commonFlags
	c.registerConfig(fs)
	asJSON := fs.Bool("json", false, "print the checks as JSON")
	noAgent := fs.Bool("no-agent", false, "skip the agent probe (one agent run, which may cost money)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, _, err := c.resolve()
	if err != nil {
		return err
	}
	log, err := c.logger(io.err)
	if err != nil {
		return err
	}
	checks := []pipeline.SetupCheck{{Name: "config", OK: true, Detail: orFlags(cfg.File) + " is valid"}}
	checks = append(checks, doctorEventLog(cfg)...)
	checks = append(checks, doctorStore(ctx, cfg))
	checks = append(checks, doctorGitHub(ctx, cfg)...)
	checks = append(checks, doctorAgent(ctx, cfg, log, *noAgent)...)
	failed := 0
	for _, ch := range checks {
		if !ch.OK && !ch.Skipped {
			failed++
		}
	}
	if *asJSON {
		enc := json.NewEncoder(io.out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"ok": failed == 0, "failed": failed, "checks": checks}); err != nil {
			return err
		}
	} else {
		for _, ch := range checks {
			mark := "ok  "
			switch {
			case ch.Skipped:
				mark = "skip"
			case !ch.OK:
				mark = "FAIL"
			}
			line := fmt.Sprintf("%s  %-14s %s", mark, ch.Name, ch.Detail)
			if ch.Fix != "" {
				line += "\n      fix: " + ch.Fix
			}
			fmt.Fprintln(io.out, line)
		}
		if failed == 0 {
			fmt.Fprintf(io.out, "\nevery check passed; nothing was filed\n")
		} else {
			fmt.Fprintf(io.out, "\n%d of %d checks failed; nothing was filed\n", failed, len(checks))
		}
	}
	if failed > 0 {
		return &exitError{code: exitFailed}
	}
	return nil
}

// doctorEventLog: the event log is readable, and diagnosis.* events have
// somewhere to go (eventsTargetFor, the scan's own rule).
func doctorEventLog(cfg Config) []pipeline.SetupCheck {
	read := pipeline.SetupCheck{Name: "event log"}
	if f, err := os.Open(cfg.EventLog); err != nil {
		read.Detail = err.Error()
		read.Fix = "let this user read " + cfg.EventLog
		if errors.Is(err, fs.ErrNotExist) {
			read.Fix = "point eventLog.path (or state.root) at the log the service writes; run doctor again once it has written one"
		}
	} else {
		_, err := f.Read(make([]byte, 1))
		info, serr := f.Stat()
		f.Close()
		switch {
		case serr != nil:
			read.Detail, read.Fix = "reading "+cfg.EventLog+": "+serr.Error(), "let this user read "+cfg.EventLog
		case info.IsDir():
			read.Detail, read.Fix = cfg.EventLog+" is a directory", "point eventLog.path at the log file"
		case err != nil && info.Size() > 0:
			read.Detail, read.Fix = "reading "+cfg.EventLog+": "+err.Error(), "let this user read "+cfg.EventLog
		default:
			read.OK, read.Detail = true, fmt.Sprintf("%s is readable (%d bytes)", cfg.EventLog, info.Size())
		}
	}
	events := pipeline.SetupCheck{Name: "events", OK: true}
	switch target := eventsTargetFor(cfg.EventLog, cfg.EventsPath); {
	case !cfg.EventLogEnabled:
		events.Detail = "diagnosis.* events are not written (eventLog.enabled is false)"
	case target == "":
		events.OK = false
		events.Detail = "this user may not append to " + cfg.EventLog + ", and selfDiagnosis.eventsPath is unset: diagnosis.* events would go nowhere"
		events.Fix = "set selfDiagnosis.eventsPath to a file this user may append to, or let it append to the event log"
	case target == cfg.EventsPath && !appendable(target):
		events.OK = false
		events.Detail = "diagnosis.* events go to selfDiagnosis.eventsPath " + target + ", which this user may not append to"
		events.Fix = "let this user write " + target + " (or its directory), or point selfDiagnosis.eventsPath elsewhere"
	default:
		events.Detail = "diagnosis.* events are appended to " + target
	}
	return []pipeline.SetupCheck{read, events}
}

// appendable reports whether this user may append to path (or create it in
// its directory), creating nothing.
func appendable(path string) bool {
	if f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0); err == nil {
		f.Close()
		return true
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	info, err := os.Stat(filepath.Dir(path))
	return err == nil && info.IsDir() && info.Mode().Perm()&0o222 != 0
}

// doctorStore: the store opens and this user may write it (a write rolled
// back), with its schema version.
func doctorStore(ctx context.Context, cfg Config) pipeline.SetupCheck {
	c := pipeline.SetupCheck{Name: "store"}
	st, err := store.OpenDSN(cfg.StatePath, cfg.Store, false)
	if errors.Is(err, store.ErrLocked) {
		c.OK, c.Detail = true, "the state of "+cfg.StatePath+" is in use by a running scan (it holds "+cfg.StatePath+".lock), which writes it"
		return c
	}
	if err != nil {
		c.Detail, c.Fix = err.Error(), "selfDiagnosis.statePath and selfDiagnosis.store ($"+StoreEnv+") name the store: fix what the message says"
		return c
	}
	defer st.Close()
	schema, err := st.Check(ctx)
	if err != nil {
		c.Detail, c.Fix = err.Error(), "let this user write "+st.Name()+" (a PostgreSQL role needs INSERT, UPDATE and DELETE on its tables)"
		return c
	}
	c.OK, c.Detail = true, fmt.Sprintf("%s %s opens and is writable (schema version %d)", st.DB().Dialect, st.Name(), schema)
	return c
}

// doctorGitHub: the token, the repository, the right to create issues,
// the label (tracker.CheckSetup).
func doctorGitHub(ctx context.Context, cfg Config) []pipeline.SetupCheck {
	client, err := tracker.NewClient(os.Getenv, cfg.APIURL, nil)
	if err != nil {
		out := []pipeline.SetupCheck{{Name: "token", Detail: err.Error(),
			Fix: "set GH_TOKEN or GITHUB_TOKEN (GH_ENTERPRISE_TOKEN on an Enterprise host) to a token that may create issues in " + cfg.Repo}}
		for _, name := range tracker.SetupChecks[1:] {
			out = append(out, pipeline.SetupCheck{Name: name, Skipped: true, Detail: "not checked: no token"})
		}
		return out
	}
	return tracker.CheckSetup(ctx, client, cfg.Repo, cfg.Label)
}

// doctorAgent: the harness's binary is found, the agent can be confined,
// and a one-line probe answers valid JSON within the timeout.
func doctorAgent(ctx context.Context, cfg Config, log zerolog.Logger, noProbe bool) []pipeline.SetupCheck {
	bin := pipeline.SetupCheck{Name: "agent binary", OK: true}
	source := resolveAgentSource(cfg) // once: it may ask the-loop's python
	name := agent.Binaries[cfg.Harness]
	if cfg.Harness == agent.HarnessCommand && len(cfg.Command) > 0 {
		name = cfg.Command[0]
	}
	if name == "" {
		bin.Detail = "harness " + cfg.Harness + " runs no binary"
	} else if path, err := exec.LookPath(name); err != nil {
		bin.OK, bin.Detail = false, fmt.Sprintf("harness %s: %s is not found (%v)", cfg.Harness, name, err)
		bin.Fix = "install " + name + " for this user, or put it on PATH; PATH is " + os.Getenv("PATH")
		if cfg.Harness == agent.HarnessCommand {
			bin.Fix = "check selfDiagnosis.command's first element: " + name
		}
	} else {
		bin.Detail = fmt.Sprintf("harness %s: %s", cfg.Harness, path)
	}
	box := pipeline.SetupCheck{Name: "agent sandbox", OK: true, Detail: "harness " + cfg.Harness + " runs no process: nothing to confine"}
	if name != "" {
		box.OK, box.Detail = agentConfinement(cfg.Harness)
		if !box.OK {
			box.Fix = "run the-loop-diagnose where /proc is mounted"
		}
	}
	probe := pipeline.SetupCheck{Name: "agent probe"}
	switch {
	case noProbe:
		probe.Skipped, probe.Detail = true, "not run (--no-agent)"
	case !bin.OK:
		probe.Skipped, probe.Detail = true, "not run: no agent binary"
	default:
		probe = doctorProbe(ctx, cfg, source, log)
	}
	// The source is advice, not a failure: without one the agent still
	// diagnoses from the dossier alone, as the-loop does when it has none.
	src := pipeline.SetupCheck{Name: "agent source", OK: true, Detail: source.String()}
	return []pipeline.SetupCheck{bin, box, src, probe}
}

// agentConfinement says whether the agent can be confined here: on Linux a
// supervisor that kills whatever the agent leaves behind (it needs /proc),
// and the kernel's Landlock (stages/agent/sandbox) for the CLIs the tool
// knows. A kernel without Landlock is said, not failed: the CLI's own rules
// and the supervisor still hold, and no operator setting can add it.
func agentConfinement(harness string) (ok bool, detail string) {
	if runtime.GOOS == "linux" {
		for _, p := range []string{"/proc/self/exe", "/proc/self/stat"} {
			if _, err := os.Stat(p); err != nil {
				return false, "no " + p + ": the supervisor that kills whatever the agent leaves behind cannot run"
			}
		}
	}
	if !agent.Confined(harness) {
		return true, "harness " + harness + " is the operator's own command: its own environment and directory, not confined by the kernel (its needs cannot be known)"
	}
	_, kernel := sandbox.Available()
	return true, kernel
}

// doctorProbe runs the agent once on a dossier of one line, as a scan
// would (same harness, flags, environment and timeout), and wants a valid
// answer back.
func doctorProbe(ctx context.Context, cfg Config, src AgentSource, log zerolog.Logger) pipeline.SetupCheck {
	c := pipeline.SetupCheck{Name: "agent probe"}
	agent, err := stages.NewAgent(agentConfig(cfg, src, log, redact.FromEnvironment(cfg.StateRoot).Scrub))
	if err != nil {
		c.Detail, c.Fix = err.Error(), "fix the agent's config keys the message names"
		return c
	}
	d := pipeline.Dossier{
		Group: pipeline.Group{Fingerprint: "doctor:probe", Event: "doctor.probe", Template: "doctor probe", Count: 1,
			Verdict: pipeline.VerdictNew},
		Markdown: "This is `the-loop-diagnose doctor` checking that the agent answers; there is no defect: answer with the JSON asked for, titled \"doctor probe\".\n",
	}
	start := time.Now()
	out, err := pipeline.Collect(ctx, agent, d)
	took := time.Since(start).Round(time.Millisecond)
	switch {
	case err != nil:
		c.Detail, c.Fix = err.Error(), "run doctor again"
	case len(out) != 1 || out[0].Failure != "" || out[0].Answer == nil:
		why := "no answer"
		if len(out) == 1 && out[0].Failure != "" {
			why = out[0].Failure
		}
		c.Detail = fmt.Sprintf("harness %s did not return a valid JSON answer in %s: %s", cfg.Harness, took, why)
		c.Fix = "run the harness by hand as this user: check its login or API key (selfDiagnosis.agentEnv passes it), its own config (codex: the base URL in ~/.codex/config.toml), and selfDiagnosis.timeoutSeconds"
	default:
		cost := "cost not reported by the harness"
		if k := out[0].Cost; k != nil {
			cost = fmt.Sprintf("cost $%.4f, %d tokens in, %d out", k.USD, k.InputTokens, k.OutputTokens)
		}
		c.OK, c.Detail = true, fmt.Sprintf("harness %s answered valid JSON in %s (%s)", cfg.Harness, took, cost)
	}
	return c
}
