// Package source reads the service's own source for the diagnosis: Finder
// writes the dossier's Source section (the lines the evidence points at),
// and Checkout asks a git clone of the target repository whether a fix for
// an issue already shipped in a release the deployment does not run yet.
// Neither is a stage: the dossier and triage stages call them.
package source

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/redact"
	"github.com/the-loop/the-loop-diagnose/stages/agent"
)

// The dossier's Source section (selfDiagnosis.sourcePath): the lines of the
// service's own source that the evidence points at, its stack frames' files
// and lines and the places its message's text is written. Only files under
// the source tree are read (no "..", no symlink out of it), and only paths
// relative to it are shown.

// Heading opens the dossier's Source section: the agent's prompt
// looks for it, so it is declared there.
const Heading = agent.SourceHeading

// Source section limits.
const (
	SectionBytes       = 8 << 10  // the whole section
	sourceFileMax      = 1 << 20  // a larger file is not read
	sourceTotalMax     = 64 << 20 // bytes read per dossier
	sourceBudget       = 2 * time.Second
	sourceMaxFrames    = 6
	sourceMaxHits      = 8
	sourceMaxNeedles   = 3
	sourceMinNeedle    = 12
	sourceContext      = 2
	sourceMaxLineChars = 240
)

// sourceSkipDirs are never walked: another project's code, or git's objects.
var sourceSkipDirs = map[string]bool{".git": true, "node_modules": true, "vendor": true, ".hg": true, ".svn": true, "__pycache__": true}

// Finder reads a source tree for the Source section.
type Finder struct {
	root string // absolute, symlinks resolved
	// Limits; the zero value of each is its default above.
	FileMax, TotalMax, MaxHits, MaxBytes int
	Budget                               time.Duration
	read                                 int // bytes read by the current section
	deadline                             time.Time
}

// NewFinder checks that dir is a directory and resolves it.
func NewFinder(dir string) (*Finder, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	return &Finder{root: real}, nil
}

// Root is the source tree's absolute path, symlinks resolved.
func (sf *Finder) Root() string { return sf.root }

func orInt(v, d int) int {
	if v > 0 {
		return v
	}
	return d
}

// sourceFrame is one stack frame's file and line as the trace gives them.
type sourceFrame struct {
	file string
	line int
}

var (
	sourcePyFrame   = regexp.MustCompile(`File "([^"\n]+)", line (\d+)`)
	sourceGoFrame   = regexp.MustCompile(`([^\s()'"=]+\.go):(\d+)`)
	sourceJavaFrame = regexp.MustCompile(`([A-Za-z_$][\w$.]*)\(([\w$-]+\.(?:java|kt|scala|groovy)):(\d+)\)`)
	sourceNodeFrame = regexp.MustCompile(`([^\s()'"=]+\.(?:js|mjs|cjs|ts|mts|cts|jsx|tsx)):(\d+):\d+`)
)

// sourceFrames extracts the stack frames of text, in order, once each:
// Python `File "x.py", line N`, Go `/path/x.go:N`, Java `(X.java:N)` (its
// package made a path), Node `(file.js:N:M)`.
func sourceFrames(text string) []sourceFrame {
	type at struct {
		pos int
		f   sourceFrame
	}
	var found []at
	add := func(pos int, file, line string) {
		n, err := strconv.Atoi(line)
		if err != nil || n <= 0 {
			return
		}
		found = append(found, at{pos, sourceFrame{strings.TrimPrefix(file, "file://"), n}})
	}
	for _, m := range sourcePyFrame.FindAllStringSubmatchIndex(text, -1) {
		add(m[0], text[m[2]:m[3]], text[m[4]:m[5]])
	}
	for _, m := range sourceGoFrame.FindAllStringSubmatchIndex(text, -1) {
		add(m[0], text[m[2]:m[3]], text[m[4]:m[5]])
	}
	for _, m := range sourceNodeFrame.FindAllStringSubmatchIndex(text, -1) {
		add(m[0], text[m[2]:m[3]], text[m[4]:m[5]])
	}
	for _, m := range sourceJavaFrame.FindAllStringSubmatchIndex(text, -1) {
		// com.x.Y.m(Y.java:42) is com/x/Y.java: the qualified name less
		// its class and method.
		file := text[m[4]:m[5]]
		parts := strings.Split(text[m[2]:m[3]], ".")
		if len(parts) > 2 {
			file = strings.Join(parts[:len(parts)-2], "/") + "/" + file
		}
		add(m[0], file, text[m[6]:m[7]])
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].pos < found[j].pos })
	var out []sourceFrame
	for _, a := range found {
		if !slices.Contains(out, a.f) {
			out = append(out, a.f)
		}
	}
	return out
}

// within reports whether the real path p is the root or under it.
func (sf *Finder) within(p string) bool {
	rel, err := filepath.Rel(sf.root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// resolve finds the file a frame names under the root: the longest suffix
// of its path that exists there. No suffix holds "..", and a symlink that
// leads out of the tree is refused. It returns the path relative to the
// root and the real path, or "" when none is found.
func (sf *Finder) resolve(file string) (rel, real string) {
	parts := strings.FieldsFunc(filepath.ToSlash(strings.ReplaceAll(file, `\`, "/")), func(r rune) bool { return r == '/' })
	start := 0
	for i, p := range parts {
		if p == ".." {
			start = i + 1
		}
	}
	for i := start; i < len(parts); i++ {
		suffix := slices.DeleteFunc(slices.Clone(parts[i:]), func(p string) bool { return p == "." })
		if len(suffix) == 0 || strings.Contains(suffix[0], ":") { // a drive letter
			continue
		}
		cand := filepath.Join(append([]string{sf.root}, suffix...)...)
		r, err := filepath.EvalSymlinks(cand)
		if err != nil || !sf.within(r) {
			continue
		}
		fi, err := os.Stat(r)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		relPath, err := filepath.Rel(sf.root, r)
		if err != nil {
			continue
		}
		return filepath.ToSlash(relPath), r
	}
	return "", ""
}

// readFile reads a regular file under the root within the limits; nil when
// it is too large, binary, over the byte budget or unreadable.
func (sf *Finder) readFile(real string) []byte {
	fileMax := orInt(sf.FileMax, sourceFileMax)
	f, err := os.Open(real)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > int64(fileMax) {
		return nil
	}
	if sf.read+int(fi.Size()) > orInt(sf.TotalMax, sourceTotalMax) {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(fileMax)+1))
	sf.read += len(b)
	if err != nil || len(b) > fileMax || bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0 {
		return nil
	}
	return b
}

// sourceNeedles are the template's longest literal runs: the text between
// its masks, cut again at quotes, brackets and words that look like values
// (holding a digit, "-", "/", "=" or "."), which a format string writes as
// verbs, and after ": "; at least sourceMinNeedle characters, the longest few.
func sourceNeedles(template string) []string {
	var out []string
	add := func(s string) {
		s = strings.Trim(s, " \t:;,.")
		if len(s) >= sourceMinNeedle && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, line := range strings.Split(template, "\n") {
		for _, run := range strings.Split(line, "<*>") {
			add(run)
			for _, piece := range strings.FieldsFunc(run, func(r rune) bool { return strings.ContainsRune("\"'`()[]{}<>", r) }) {
				add(piece)
				var words []string
				for _, w := range strings.Fields(piece) {
					if strings.ContainsAny(w, "0123456789-/=.") {
						add(strings.Join(words, " "))
						words = words[:0]
						continue
					}
					words = append(words, w)
				}
				add(strings.Join(words, " "))
				// "ValueError: text", "wrapper: text": the part after a
				// prefix the runtime or a caller adds.
				for _, part := range strings.Split(piece, ": ") {
					add(part)
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out[:min(len(out), sourceMaxNeedles)]
}

// sourceHit is one line of a file to show with its context.
type sourceHit struct {
	rel  string
	line int
}

// search walks the tree for lines holding a needle, within the limits.
func (sf *Finder) search(needles []string, seen map[sourceHit]bool, take func(sourceHit, []byte) bool) {
	if len(needles) == 0 {
		return
	}
	bneedles := make([][]byte, len(needles))
	for i, n := range needles {
		bneedles[i] = []byte(n)
	}
	stop := errors.New("stop")
	_ = filepath.WalkDir(sf.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if time.Now().After(sf.deadline) {
			return stop
		}
		if d.IsDir() {
			if p != sf.root && sourceSkipDirs[d.Name()] {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() { // a symlink is not followed
			return nil
		}
		b := sf.readFile(p)
		if b == nil {
			return nil
		}
		rel, err := filepath.Rel(sf.root, p)
		if err != nil {
			return nil
		}
		rel = filepath.ToSlash(rel)
		for _, n := range bneedles {
			for off := 0; ; {
				i := bytes.Index(b[off:], n)
				if i < 0 {
					break
				}
				pos := off + i
				h := sourceHit{rel, 1 + bytes.Count(b[:pos], []byte{'\n'})}
				if !seen[h] {
					seen[h] = true
					if !take(h, b) {
						return stop
					}
				}
				nl := bytes.IndexByte(b[pos:], '\n')
				if nl < 0 {
					break
				}
				off = pos + nl + 1
			}
		}
		return nil
	})
}

// excerpt renders a file's line n with its context, numbered, the line
// itself marked; "" when the file has no such line.
func sourceExcerpt(b []byte, n int) string {
	lines := strings.Split(string(b), "\n")
	if n > len(lines) || (n == len(lines) && lines[n-1] == "") {
		return ""
	}
	var out strings.Builder
	for i := max(1, n-sourceContext); i <= min(len(lines), n+sourceContext); i++ {
		mark := "  "
		if i == n {
			mark = "> "
		}
		l := strings.TrimRight(lines[i-1], "\r")
		if r := []rune(l); len(r) > sourceMaxLineChars {
			l = string(r[:sourceMaxLineChars]) + " …"
		}
		fmt.Fprintf(&out, "%s%d: %s\n", mark, i, l)
	}
	return out.String()
}

// Section renders the Source section of a group's dossier, "" when the
// evidence points at nothing in the tree. Source text is scrubbed like the
// rest of the dossier.
func (shared *Finder) Section(g pipeline.Group, s *redact.Redactor) string {
	if shared == nil {
		return ""
	}
	// A copy per dossier: dossiers are built in parallel.
	sf := *shared
	sf.read = 0
	sf.deadline = time.Now().Add(sf.Budget)
	if sf.Budget <= 0 {
		sf.deadline = time.Now().Add(sourceBudget)
	}
	maxBytes := orInt(sf.MaxBytes, SectionBytes)
	maxHits := orInt(sf.MaxHits, sourceMaxHits)
	var b strings.Builder
	used, shown := 0, 0
	omitted := 0
	seen := map[sourceHit]bool{}
	emit := func(h sourceHit, content []byte) bool {
		if shown >= maxHits {
			omitted++
			return false
		}
		ex := sourceExcerpt(content, h.line)
		if ex == "" {
			return true
		}
		block := fmt.Sprintf("`%s:%d`\n\n%s\n\n", h.rel, h.line, redact.Fence(strings.TrimRight(s.Scrub(ex), "\n")))
		if used+len(block) > maxBytes {
			omitted++
			return false
		}
		b.WriteString(block)
		used += len(block)
		shown++
		return true
	}

	// Frames, newest sample first, as the dossier lists the records.
	var frames []sourceFrame
	for i := len(g.Samples) - 1; i >= 0; i-- {
		for _, f := range sourceFrames(g.Samples[i].Record.Str("error")) {
			if !slices.Contains(frames, f) {
				frames = append(frames, f)
			}
		}
	}
	if len(frames) > 0 {
		start := b.Len()
		b.WriteString("Stack frames:\n\n")
		n := 0
		for _, f := range frames {
			if n >= sourceMaxFrames || shown >= maxHits {
				break
			}
			rel, real := sf.resolve(f.file)
			if rel == "" {
				continue
			}
			h := sourceHit{rel, f.line}
			if seen[h] {
				continue
			}
			content := sf.readFile(real)
			if content == nil {
				continue
			}
			seen[h] = true
			before := shown
			if !emit(h, content) {
				break
			}
			if shown > before {
				n++
			}
		}
		if n == 0 {
			rest := b.String()[:start]
			b.Reset()
			b.WriteString(rest)
		}
	}

	if needles := sourceNeedles(g.Template); len(needles) > 0 && shown < maxHits {
		mark := b.Len()
		b.WriteString("Where the message's text is written:\n\n")
		before := shown
		(&sf).search(needles, seen, emit)
		if shown == before {
			rest := b.String()[:mark]
			b.Reset()
			b.WriteString(rest)
		}
	}
	if shown == 0 {
		return ""
	}
	out := Heading + "\n\n" + b.String()
	if omitted > 0 {
		out += "... more places omitted to fit the size cap\n"
	}
	return out
}
