package main

import (
	"bytes"
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// The packaging files live at the repository's root, two levels up.
const repoRoot = "../.."

// decoderKeys lists every key the config decoder reads, derived from this
// package's source rather than a list kept by hand, so that a key added to
// the decoder and not to examples/config.yaml fails TestExampleConfig
// instead of drifting silently. Three shapes of config.go are read:
//
//   - the string labels of a switch on `key` (the selfDiagnosis loop):
//     selfDiagnosis.<label>;
//   - the top-level sections, the string indices of `top[...]`, and in the
//     body of an `if x, ok := top["S"]` the string indices of its maps:
//     S.<index> (state.root, eventLog.path, eventLog.enabled);
//   - every string literal that is a dotted key under a section, as the
//     errors name them (routing.control.keywords, selfDiagnosis.repo, ...).
//
// A decoder restructured past these shapes finds fewer keys: the minimum
// below then fails the test, saying so, rather than passing vacuously.
func decoderKeys(t *testing.T) (keys, sections []string) {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	secs := map[string]bool{}
	str := func(e ast.Expr) (string, bool) {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(lit.Value)
		return s, err == nil
	}
	isIdent := func(e ast.Expr, name string) bool {
		id, ok := e.(*ast.Ident)
		return ok && id.Name == name
	}
	var literals []string
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.SwitchStmt:
					if isIdent(n.Tag, "key") {
						for _, c := range n.Body.List {
							for _, e := range c.(*ast.CaseClause).List {
								if s, ok := str(e); ok {
									set["selfDiagnosis."+s] = true
								}
							}
						}
					}
				case *ast.IndexExpr:
					if s, ok := str(n.Index); ok && isIdent(n.X, "top") {
						secs[s] = true
					}
				case *ast.IfStmt:
					as, ok := n.Init.(*ast.AssignStmt)
					if !ok || len(as.Rhs) != 1 {
						break
					}
					ix, ok := as.Rhs[0].(*ast.IndexExpr)
					if !ok || !isIdent(ix.X, "top") {
						break
					}
					sec, ok := str(ix.Index)
					if !ok {
						break
					}
					ast.Inspect(n.Body, func(m ast.Node) bool {
						if ix, ok := m.(*ast.IndexExpr); ok && !isIdent(ix.X, "top") {
							if s, ok := str(ix.Index); ok {
								set[sec+"."+s] = true
							}
						}
						return true
					})
				case *ast.BasicLit:
					if s, ok := str(n); ok {
						literals = append(literals, s)
					}
				}
				return true
			})
		}
	}
	for s := range secs {
		sections = append(sections, s)
	}
	slices.Sort(sections)
	dotted := regexp.MustCompile(`^(` + strings.Join(sections, "|") + `)(\.[A-Za-z][A-Za-z0-9]*)+$`)
	for _, s := range literals {
		if dotted.MatchString(s) {
			set[s] = true
		}
	}
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	// 4 sections and 40-odd keys when this test was written.
	if len(sections) < 4 || len(keys) < 40 {
		t.Fatalf("found %d sections %v and %d keys %v in the decoder: its shape changed past what decoderKeys reads; teach it the new shape", len(sections), sections, len(keys), keys)
	}
	return keys, sections
}

// examplePaths is every mapping key of the YAML file, as dotted paths; the
// value of a decoder key's leaf is not walked into (routing.control.keywords holds
// the deployment's commands, not keys).
func examplePaths(t *testing.T, file string, leaf map[string]bool) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		t.Fatal(err)
	}
	var paths []string
	var walk func(prefix string, n *yaml.Node)
	walk = func(prefix string, n *yaml.Node) {
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := n.Content[i].Value
			if prefix != "" {
				p = prefix + "." + p
			}
			paths = append(paths, p)
			if !leaf[p] {
				walk(p, n.Content[i+1])
			}
		}
	}
	walk("", root.Content[0])
	return paths
}

// TestExampleConfig keeps examples/config.yaml in step with the decoder:
// it loads, it holds every key the decoder reads and no other, and its
// values are the defaults it says they are.
func TestExampleConfig(t *testing.T) {
	file := filepath.Join(repoRoot, "examples", "config.yaml")
	keys, _ := decoderKeys(t)
	known, leaf := map[string]bool{}, map[string]bool{}
	for _, k := range keys {
		known[k] = true
		leaf[k] = !slices.ContainsFunc(keys, func(o string) bool { return strings.HasPrefix(o, k+".") })
	}
	paths := examplePaths(t, file, leaf)
	inExample := map[string]bool{}
	for _, p := range paths {
		inExample[p] = true
		if known[p] {
			continue
		}
		prefix := false
		for _, k := range keys {
			prefix = prefix || strings.HasPrefix(k, p+".")
		}
		if !prefix {
			t.Errorf("examples/config.yaml has %s, which the decoder does not read (a typo, or a key removed from config.go)", p)
		}
	}
	for _, k := range keys {
		if !inExample[k] {
			t.Errorf("the decoder reads %s but examples/config.yaml does not document it: add it, with its default", k)
		}
	}

	got, err := LoadConfig(file)
	if err != nil {
		t.Fatalf("examples/config.yaml does not load: %v", err)
	}
	// Its values are the defaults: it loads as an empty file does.
	empty := filepath.Join(t.TempDir(), "empty.yaml")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	want, err := LoadConfig(empty)
	if err != nil {
		t.Fatal(err)
	}
	want.File = got.File
	// A path the example leaves "" is the default's, derived from state.root
	// (itself .the-loop when blank).
	for _, c := range []*Config{&got, &want} {
		c.resolvePaths()
		if strings.TrimSpace(c.StateRoot) == "" {
			c.StateRoot = DefaultStateRoot
		}
	}
	if g, w := comparable(t, got), comparable(t, want); !reflect.DeepEqual(g, w) {
		for k := range w {
			if !reflect.DeepEqual(g[k], w[k]) {
				t.Errorf("examples/config.yaml gives %s = %v; the default is %v: the example must show the default", k, g[k], w[k])
			}
		}
	}
}

// comparable is the config as JSON values, an empty list the same as none
// (the example writes [] where the default is nil).
func comparable(t *testing.T, c Config) map[string]any {
	t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var norm func(v any) any
	norm = func(v any) any {
		switch v := v.(type) {
		case []any:
			if len(v) == 0 {
				return nil
			}
		case map[string]any:
			for k, x := range v {
				v[k] = norm(x)
			}
		}
		return v
	}
	norm(m)
	return m
}

// TestSystemdUnitsVerify runs systemd-analyze verify over contrib/systemd,
// with the ExecStart binary pointed at one that exists (verify checks it).
func TestSystemdUnitsVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed: contrib/systemd units not verified")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	units, err := filepath.Glob(filepath.Join(repoRoot, "contrib", "systemd", "*"))
	if err != nil || len(units) < 3 {
		t.Fatalf("contrib/systemd: %v %v", units, err)
	}
	dir := t.TempDir()
	var args []string
	for _, u := range units {
		b, err := os.ReadFile(u)
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.ReplaceAll(b, []byte("/usr/local/bin/the-loop-diagnose"), []byte(self))
		dst := filepath.Join(dir, filepath.Base(u))
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, dst)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, analyze, append([]string{"verify"}, args...)...)
	cmd.Env = append(os.Environ(), "SYSTEMD_LOG_LEVEL=warning")
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestDockerImage builds the Dockerfile and runs the image's version
// command, where a working docker (a daemon answering) is there.
func TestDockerImage(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the Docker image is not built")
	}
	docker, err := exec.LookPath("docker")
	if err != nil {
		t.Skip("docker not installed: the Dockerfile is not built")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, docker, "version", "--format", "{{.Server.Version}}").CombinedOutput(); err != nil {
		t.Skipf("docker does not work here (no daemon?): the Dockerfile is not built: %v: %s", err, bytes.TrimSpace(out))
	}
	ctx, cancel = context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	tag := "the-loop-diagnose-test:" + strconv.Itoa(os.Getpid())
	build := exec.CommandContext(ctx, docker, "build", "--build-arg", "VERSION=packaging-test", "-t", tag, repoRoot)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
	defer exec.Command(docker, "rmi", "-f", tag).Run()
	out, err := exec.CommandContext(ctx, docker, "run", "--rm", tag, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "packaging-test") {
		t.Fatalf("docker run %s version: %v\n%s", tag, err, out)
	}
}
