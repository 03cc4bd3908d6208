package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// configKeys is every dotted key the decoder accepts, from the lists
// checkKeys holds the file to (config_keys.go): the one list of keys.
func configKeys() []string {
	keys := []string{"routing.control.keywords"}
	for _, sec := range []struct {
		prefix string
		keys   []string
	}{
		{"state.", stateKeys},
		{"eventLog.", eventLogKeys},
		{"eventLog.mapping.", eventLogMappingKeys},
		{"selfDiagnosis.", selfDiagnosisKeys},
	} {
		for _, k := range sec.keys {
			keys = append(keys, sec.prefix+k)
		}
	}
	slices.Sort(keys)
	return keys
}

// keyMention is a text naming a config key, selfDiagnosis.<key> or
// eventLog.<key>; state.<x> is left out: "state.json" is a file.
var keyMention = regexp.MustCompile(`\b(?:selfDiagnosis|eventLog)(?:\.[A-Za-z]+)+`)

// TestConfigDocNamesEveryKey keeps docs/config.md, the reference of every
// key, in step with the decoder: each key it accepts has a row there, no
// row names a key it does not accept, and no page of the docs names one.
func TestConfigDocNamesEveryKey(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "config.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([A-Za-z]+(?:\\.[A-Za-z]+)+)` \\|").FindAllStringSubmatch(string(b), -1) {
		rows[m[1]] = true
	}
	keys := configKeys()
	for _, k := range keys {
		if !rows[k] {
			t.Errorf("the decoder reads %s but docs/config.md has no row for it: add one, with its default and meaning", k)
		}
	}
	for k := range rows {
		if !slices.Contains(keys, k) {
			t.Errorf("docs/config.md documents %s, which the decoder does not read (config_keys.go)", k)
		}
	}
	// Every other page names real keys too.
	for _, doc := range markdownDocs(t) {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, doc)
		for i, line := range strings.Split(string(b), "\n") {
			for _, k := range keyMention.FindAllString(line, -1) {
				if !slices.Contains(keys, k) {
					t.Errorf("%s:%d names %s, which is not a config key (config_keys.go)", rel, i+1, k)
				}
			}
		}
	}
}

// markdownDocs are README.md, DESIGN.md and every docs/**.md.
func markdownDocs(t *testing.T) []string {
	t.Helper()
	docs := []string{filepath.Join(repoRoot, "README.md"), filepath.Join(repoRoot, "DESIGN.md")}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			docs = append(docs, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// moduleGoFiles are the module's _test.go files (tests) or its other Go
// files (!tests), outside hidden directories (.git, .cache of the real
// CLIs), test data and node_modules: not the module's code.
func moduleGoFiles(t *testing.T, tests bool) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != repoRoot && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && strings.HasSuffix(path, "_test.go") == tests {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestTextsNameRealConfigKeys reads every string literal of the module's
// non-test Go files: a selfDiagnosis.<key> or eventLog.<key> one names (an error, a log line,
// a help text) must be a key the config accepts, or the user is sent
// looking for a setting that does not exist.
func TestTextsNameRealConfigKeys(t *testing.T) {
	keys := configKeys()
	fset := token.NewFileSet()
	files := moduleGoFiles(t, false)
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			for _, key := range keyMention.FindAllString(s, -1) {
				if slices.Contains(keys, key) {
					continue
				}
				pos := fset.Position(lit.Pos())
				rel, _ := filepath.Rel(repoRoot, pos.Filename)
				t.Errorf("%s:%d names %s, which is not a config key (config_keys.go)", rel, pos.Line, key)
			}
			return true
		})
	}
	// The walk must have read the module, not an empty directory.
	if len(files) < 50 {
		t.Fatalf("read %d Go files under %s: the walk missed the module", len(files), repoRoot)
	}
}

// mdLink is an inline markdown link's target: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocsLinksResolve follows every relative link of README.md, DESIGN.md
// and docs/**.md: the file must exist, and a #fragment into a markdown file
// must be one of its headings (GitHub's anchors).
func TestDocsLinksResolve(t *testing.T) {
	docs := markdownDocs(t)
	links := 0
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, doc)
		for i, line := range strings.Split(withoutCode(string(b)), "\n") {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				links++
				file, frag, _ := strings.Cut(target, "#")
				path := doc
				if file != "" {
					path = filepath.Join(filepath.Dir(doc), file)
				}
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s:%d links to %s, which does not exist", rel, i+1, target)
					continue
				}
				if frag != "" && strings.HasSuffix(path, ".md") && !slices.Contains(anchors(t, path), frag) {
					t.Errorf("%s:%d links to %s: no heading there has the anchor #%s", rel, i+1, target, frag)
				}
			}
		}
	}
	if links < 20 {
		t.Fatalf("found %d relative links in %d documents: the docs lost their links, or this test its reading", links, len(docs))
	}
}

// codeBlock is a fenced block: links inside are code, not links.
var codeBlock = regexp.MustCompile("(?ms)^```.*?^```")

// withoutCode blanks fenced code blocks, keeping the line count.
func withoutCode(s string) string {
	return codeBlock.ReplaceAllStringFunc(s, func(b string) string {
		return strings.Repeat("\n", strings.Count(b, "\n"))
	})
}

// anchors are the heading anchors GitHub gives a markdown file: the
// heading lower-cased, spaces to hyphens, punctuation but - and _ dropped.
func anchors(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(withoutCode(string(b)), "\n") {
		h := strings.TrimLeft(line, "#")
		if h == line || !strings.HasPrefix(h, " ") {
			continue
		}
		var a strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(h)) {
			switch {
			case r == ' ':
				a.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127 && !strings.ContainsRune("—–’“”…·", r):
				a.WriteRune(r)
			}
		}
		out = append(out, a.String())
	}
	return out
}

// TestDesignNamesRealTests holds the docs to the tests they cite as showing
// a guarantee: every Test…, Fuzz… or Benchmark… name in README.md,
// DESIGN.md and docs/**.md must be a test function of the module (or, as in
// a `go test -run` pattern the docs quote, the start of one).
func TestDesignNamesRealTests(t *testing.T) {
	funcs := map[string]bool{}
	fset := token.NewFileSet()
	for _, path := range moduleGoFiles(t, true) {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil {
				funcs[fn.Name.Name] = true
			}
		}
	}
	docs := markdownDocs(t)
	name := regexp.MustCompile(`\b(?:Test|Fuzz|Benchmark)[A-Z][A-Za-z0-9_]*`)
	cited := 0
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, doc)
		for i, line := range strings.Split(string(b), "\n") {
			for _, n := range name.FindAllString(line, -1) {
				cited++
				if funcs[n] {
					continue
				}
				prefix := false
				for f := range funcs {
					if strings.HasPrefix(f, n) {
						prefix = true
						break
					}
				}
				if !prefix {
					t.Errorf("%s:%d cites %s, which no _test.go of the module declares", rel, i+1, n)
				}
			}
		}
	}
	if cited < 30 {
		t.Fatalf("the docs cite %d tests: DESIGN.md's guarantees table lost its tests, or this test its reading", cited)
	}
}

// TestReadmeListsEveryCommand keeps the README's list of commands in step
// with the command table the usage is printed from (cli.go commands).
func TestReadmeListsEveryCommand(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	i := strings.Index(readme, "\n## Commands\n")
	if i < 0 {
		t.Fatal("README.md has no ## Commands section")
	}
	section := readme[i+1:]
	if j := strings.Index(section[1:], "\n## "); j >= 0 {
		section = section[:j+1]
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^the-loop-diagnose (\w+)`).FindAllStringSubmatch(section, -1) {
		listed[m[1]] = true
	}
	for _, c := range commands {
		if !listed[c.name] {
			t.Errorf("README.md's Commands section does not list %s (%s)", c.name, c.summary)
		}
		delete(listed, c.name)
	}
	for name := range listed {
		t.Errorf("README.md's Commands section lists %s, which is no command of cli.go", name)
	}
}
