package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The interpreter is read from each shebang form an installer writes: a
// plain path (pip, uv), `env python3` looked up on PATH, and pip's
// trampoline for a path too long for a shebang; anything that is not a
// python names none.
func TestScriptInterpreterReadsEveryInstallersShebang(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "a very long venv path", "bin")
	py := filepath.Join(bin, "python3.12")
	write := func(name, text string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write(filepath.Join("a very long venv path", "bin", "python3.12"), "#!/bin/sh\n", 0o755)
	write(filepath.Join("pathbin", "python3"), "#!/bin/sh\n", 0o755)
	envPy := filepath.Join(dir, "pathbin", "python3")
	for _, tc := range []struct{ name, script, want string }{
		{"plain", "#!/opt/venv/bin/python3\nimport sys\n", "/opt/venv/bin/python3"},
		{"env", "#!/usr/bin/env python3\nimport sys\n", envPy},
		{"pip trampoline", "#!/bin/sh\n'''exec' '" + py + "' \"$0\" \"$@\"\n' '''\nimport sys\n", py},
		{"pip trampoline, no spaces", "#!/bin/sh\n'''exec' /opt/v/bin/python \"$0\" \"$@\"\n' '''\n", "/opt/v/bin/python"},
		{"not python", "#!/bin/bash\necho hi\n", ""},
		{"no shebang", "import sys\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := write(strings.ReplaceAll(tc.name, " ", "-"), tc.script, 0o755)
			if got := scriptInterpreter(p, filepath.Join(dir, "pathbin")); got != tc.want {
				t.Errorf("scriptInterpreter = %q, want %q", got, tc.want)
			}
		})
	}
}

// sourcePath wins over an installed the-loop, and names its version.
func TestSourcePathOverridesTheInstalledPackage(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "__init__.py"), []byte("__version__ = '11.2.0'\n"), 0o644)
	src := resolveAgentSource(Config{SourcePath: dir})
	if src.From != "selfDiagnosis.sourcePath" || src.Version != "11.2.0" || !filepath.IsAbs(src.Path) {
		t.Errorf("resolveAgentSource = %+v", src)
	}
	if s := src.String(); !strings.Contains(s, "(the-loop 11.2.0, selfDiagnosis.sourcePath)") {
		t.Errorf("String = %q", s)
	}
}
