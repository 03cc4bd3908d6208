package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// The source the agent reads. the-loop's prompt names its own installed
// package (Path(__file__).resolve().parent.parent: the the_loop directory)
// and its version, and tells the agent to read it; a deployment switching
// over keeps that without a config change. The package is found as
// `the-loop` itself runs: the interpreter its entry script's shebang names
// (pip, pipx and uv write it), then that interpreter's site-packages, or,
// when the layout does not show it (an editable install, a distribution's
// python), the interpreter asked where the_loop is. selfDiagnosis.sourcePath
// overrides it.

// AgentSource is the source tree the agent is pointed at and how it was
// found: status and doctor say it.
type AgentSource struct {
	Path    string `json:"path"`    // absolute; "" when none was found
	Version string `json:"version"` // the package's __version__, when read
	From    string `json:"from"`    // how it was found, or why none was
}

// theLoopEntry is the name of the-loop's console script.
const theLoopEntry = "the-loop"

// agentSourceAsk bounds asking the interpreter where the_loop is.
const agentSourceAsk = 10 * time.Second

// agentSourceScript prints the_loop's directory and version, as the-loop's
// own code would see them.
const agentSourceScript = `import os, the_loop; print(os.path.dirname(os.path.realpath(the_loop.__file__))); print(getattr(the_loop, "__version__", ""))`

// resolveAgentSource is the source the agent reads under cfg: sourcePath
// when set, else the installed the-loop on PATH, else none.
func resolveAgentSource(cfg Config) AgentSource {
	if cfg.SourcePath != "" {
		p := cfg.SourcePath
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		return AgentSource{Path: p, Version: packageVersion(p), From: "selfDiagnosis.sourcePath"}
	}
	return installedTheLoop(os.Getenv("PATH"))
}

// installedTheLoop finds the-loop's installed package from the entry script
// on path (a PATH list).
func installedTheLoop(path string) AgentSource {
	none := func(why string) AgentSource {
		return AgentSource{From: why + ": set selfDiagnosis.sourcePath to its package (python -c 'import the_loop, os; print(os.path.dirname(the_loop.__file__))')"}
	}
	script := lookPathIn(theLoopEntry, path)
	if script == "" {
		return none("no " + theLoopEntry + " on PATH")
	}
	interp := scriptInterpreter(script, path)
	if interp == "" {
		return none(script + " names no python interpreter")
	}
	from := "installed the-loop: " + script + " runs " + interp
	if dir := sitePackagesTheLoop(interp); dir != "" {
		return AgentSource{Path: dir, Version: packageVersion(dir), From: from}
	}
	ctx, cancel := context.WithTimeout(context.Background(), agentSourceAsk)
	defer cancel()
	out, err := exec.CommandContext(ctx, interp, "-c", agentSourceScript).Output()
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if err != nil || len(lines) == 0 || !filepath.IsAbs(lines[0]) || !isDir(lines[0]) {
		return none(interp + " (from " + script + ") cannot import the_loop")
	}
	src := AgentSource{Path: lines[0], From: from}
	if len(lines) > 1 {
		src.Version = strings.TrimSpace(lines[1])
	}
	if src.Version == "" {
		src.Version = packageVersion(src.Path)
	}
	return src
}

// lookPathIn is exec.LookPath over the PATH list path.
func lookPathIn(name, path string) string {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// pipLongShebang is pip's trampoline for an interpreter path too long for a
// shebang or holding a space: "#!/bin/sh", then a line running exec on the
// interpreter, quoted.
var pipLongShebang = regexp.MustCompile(`^'''exec' (?:'([^']+)'|"([^"]+)"|(\S+)) "\$0" "\$@"`)

// scriptInterpreter is the python an entry script runs: its shebang's
// program, `env`'s argument looked up on path, or pip's trampoline's.
func scriptInterpreter(script, path string) string {
	f, err := os.Open(script)
	if err != nil {
		return ""
	}
	defer f.Close()
	r := bufio.NewScanner(f)
	r.Buffer(make([]byte, 4096), 4096)
	if !r.Scan() || !strings.HasPrefix(r.Text(), "#!") {
		return ""
	}
	fields := strings.Fields(strings.TrimPrefix(r.Text(), "#!"))
	if len(fields) == 0 {
		return ""
	}
	prog := fields[0]
	switch {
	case filepath.Base(prog) == "env" && len(fields) > 1:
		prog = lookPathIn(fields[len(fields)-1], path)
	case filepath.Base(prog) == "sh" && r.Scan():
		m := pipLongShebang.FindStringSubmatch(r.Text())
		if m == nil {
			return ""
		}
		prog = m[1] + m[2] + m[3] // the one that matched
	}
	if !strings.HasPrefix(filepath.Base(prog), "python") || !filepath.IsAbs(prog) {
		return ""
	}
	return prog
}

// sitePackagesTheLoop is the_loop's directory in the environment whose
// bin/ holds interp (a venv, pipx's, uv's, or a prefix), when exactly one
// of its site-packages holds it.
func sitePackagesTheLoop(interp string) string {
	root := filepath.Dir(filepath.Dir(interp)) // not resolved: a venv's python links out of it
	var found []string
	for _, pattern := range []string{"lib/python3*/site-packages/the_loop", "lib64/python3*/site-packages/the_loop", "lib/python3/dist-packages/the_loop"} {
		m, _ := filepath.Glob(filepath.Join(root, pattern))
		for _, dir := range m {
			if real, err := filepath.EvalSymlinks(dir); err == nil && isFile(filepath.Join(real, "__init__.py")) && !slices.Contains(found, real) {
				found = append(found, real)
			}
		}
	}
	if len(found) != 1 {
		return ""
	}
	return found[0]
}

// packageVersionRE is a literal __version__ in a package's __init__.py.
var packageVersionRE = regexp.MustCompile(`(?m)^__version__\s*=\s*['"]([^'"\n]{1,40})['"]`)

// packageVersion is the literal __version__ of the package at dir, or "".
func packageVersion(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "__init__.py"))
	if err != nil || len(b) > 1<<20 {
		return ""
	}
	if m := packageVersionRE.FindSubmatch(b); m != nil {
		return string(bytes.TrimSpace(m[1]))
	}
	return ""
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// String says which source the agent sees, for status and doctor.
func (a AgentSource) String() string {
	if a.Path == "" {
		return "none (" + a.From + ")"
	}
	v := ""
	if a.Version != "" {
		v = "the-loop " + a.Version + ", "
	}
	return a.Path + " (" + v + a.From + ")"
}
