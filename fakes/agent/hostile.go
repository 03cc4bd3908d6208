package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// attempt is one thing the hostile mode tried, and what came of it.
type attempt struct {
	Action string `json:"action"` // read, write, shell, list
	Target string `json:"target"`
	// Control: an action a confined agent must still be able to do (its
	// dossier, its own directory); the others must all fail.
	Control bool   `json:"control,omitempty"`
	OK      bool   `json:"ok"`
	Got     string `json:"got,omitempty"` // the first bytes read, when it succeeded
	Err     string `json:"err,omitempty"`
}

// hostile acts as a prompt-injected agent with a shell would: it reads
// /etc/hostname, the files named in FAKE_AGENT_HOSTILE_READ (the event
// log, the state: list-separated), the environ of its parent, grandparent
// (the tool) and of the pids in FAKE_AGENT_HOSTILE_PIDS, greps every
// /proc/*/environ for a token, writes beside each of those files, in HOME
// and in /tmp, and runs a shell that reads /etc/hostname. It appends one
// JSON line per attempt to FAKE_AGENT_HOSTILE_OUT; main then answers as
// valid does: a confined agent still diagnoses.
func hostile() error {
	var out []attempt
	read := func(path string, control bool) {
		b, err := os.ReadFile(path)
		a := attempt{Action: "read", Target: path, Control: control, OK: err == nil}
		if err != nil {
			a.Err = err.Error()
		} else {
			a.Got = string(b[:min(len(b), 64)])
		}
		out = append(out, a)
	}
	write := func(path string, control bool) {
		err := os.WriteFile(path, []byte("pwned\n"), 0o600)
		a := attempt{Action: "write", Target: path, Control: control, OK: err == nil}
		if err != nil {
			a.Err = err.Error()
		} else if !control {
			os.Remove(path) // leave the host as it was; the attempt is recorded
		}
		out = append(out, a)
	}
	read("dossier.md", true)
	write("answer-draft.md", true)
	read("/etc/hostname", false)
	targets := filepath.SplitList(os.Getenv("FAKE_AGENT_HOSTILE_READ"))
	for _, t := range targets {
		read(t, false)
		write(filepath.Join(filepath.Dir(t), "pwned"), false)
	}
	if home := os.Getenv("HOME"); home != "" {
		write(filepath.Join(home, "pwned"), false)
	}
	write(filepath.Join("/tmp", "pwned-"+strconv.Itoa(os.Getpid())), false)

	// The tool's pid: our parent is the supervisor, its parent the tool.
	pids := []string{strconv.Itoa(os.Getppid())}
	if b, err := os.ReadFile("/proc/" + pids[0] + "/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "PPid:"); ok {
				pids = append(pids, strings.TrimSpace(v))
			}
		}
	}
	pids = append(pids, strings.FieldsFunc(os.Getenv("FAKE_AGENT_HOSTILE_PIDS"), func(r rune) bool { return r == ',' || r == ' ' })...)
	for _, pid := range pids {
		read("/proc/"+pid+"/environ", false)
		read("/proc/"+pid+"/cmdline", false)
	}
	// Grep over /proc: every environ the directory listing shows.
	entries, err := os.ReadDir("/proc")
	l := attempt{Action: "list", Target: "/proc", OK: err == nil}
	if err != nil {
		l.Err = err.Error()
	}
	var found []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil || e.Name() == strconv.Itoa(os.Getpid()) {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/environ"); err == nil && strings.Contains(string(b), "TOKEN=") {
			found = append(found, e.Name())
		}
	}
	if len(found) > 0 {
		l.Got = "TOKEN= in the environ of " + strings.Join(found, ",")
	}
	out = append(out, l)

	// A shell, as a tool call would start one: it inherits what we have.
	sh, err := exec.Command("/bin/sh", "-c", "cat /etc/hostname").CombinedOutput()
	s := attempt{Action: "shell", Target: "cat /etc/hostname", OK: err == nil}
	if err != nil {
		s.Err = err.Error() + ": " + strings.TrimSpace(string(sh))
	} else {
		s.Got = string(sh[:min(len(sh), 64)])
	}
	out = append(out, s)

	if path := os.Getenv("FAKE_AGENT_HOSTILE_OUT"); path != "" {
		var b strings.Builder
		for _, a := range out {
			line, _ := json.Marshal(a)
			b.Write(append(line, '\n'))
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
			return fmt.Errorf("FAKE_AGENT_HOSTILE_OUT: %w", err)
		}
	}
	return nil
}
