package fingerprint

import "strings"

// A stack trace fingerprints on its exception and its top in-app frame:
// the frames below it are the call path (volatile: the same bug is reached
// from many places), line numbers shift with every edit, and goroutine
// dumps carry ids. Library and runtime frames are skipped so a bug in the
// caller is not grouped with every other bug that reaches the same library.

// frame is one parsed stack frame.
type frame struct {
	function string // e.g. "main.run", "com.acme.Store.save", "load_config"
	file     string // base name only, e.g. "store.go"
	origin   origin
}

// origin ranks whose code a frame is in, best first: the application's own
// frames name the bug; a third-party library frame is the next best clue
// (its caller was not in the trace); the language runtime's frames (fs,
// asyncio, java.lang, runtime.gopanic) are shared by every bug.
type origin int

const (
	inApp origin = iota
	inLibrary
	inRuntime
)

// trace is a stack trace as parsed: its message lines and its frames,
// innermost first. Each version renders it (render, renderV2).
type trace struct {
	message []string
	frames  []frame
}

// parseTrace recognises Python tracebacks, Go panics, Rust backtraces and
// Java/.NET/Node stack traces. ok is false for other multi-line text.
func parseTrace(text string) (trace, bool) {
	lines := strings.Split(text, "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], "\r")
	}
	for _, parse := range []func([]string) (trace, bool){pythonTrace, goPanic, rustBacktrace, atFrames} {
		if t, ok := parse(lines); ok {
			return t, true
		}
	}
	return trace{}, false
}

// topFrame is the innermost in-app frame; without one, the innermost
// library frame, then the innermost frame. frames are ordered innermost
// first.
func topFrame(frames []frame) (frame, bool) {
	best := -1
	for i, f := range frames {
		if best < 0 || f.origin < frames[best].origin {
			best = i
			if f.origin == inApp {
				break
			}
		}
	}
	if best < 0 {
		return frame{}, false
	}
	return frames[best], true
}

// baseName strips directories (checkout roots, venvs, GOPATHs vary per
// machine) and a ":line:col" suffix.
func baseName(loc string) string {
	if k := strings.LastIndexAny(loc, `/\`); k >= 0 {
		loc = loc[k+1:]
	}
	if k := strings.IndexByte(loc, ':'); k >= 0 {
		loc = loc[:k]
	}
	return loc
}

const pyTraceHeader = "Traceback (most recent call last):"

// pyTraceStart reports whether a line opens a Python traceback, and the text
// before the header on that line: a wrapper often prints the traceback right
// after its own message ("aider exited 1: Traceback ...").
func pyTraceStart(l string) (prefix string, ok bool) {
	t := strings.TrimSpace(l)
	if !strings.HasSuffix(t, pyTraceHeader) {
		return "", false
	}
	return strings.TrimSpace(t[:len(t)-len(pyTraceHeader)]), true
}

// pythonTrace handles "Traceback (most recent call last):" blocks. With
// chained exceptions the last traceback is the one that escaped.
func pythonTrace(lines []string) (trace, bool) {
	start := -1
	for i, l := range lines {
		if _, ok := pyTraceStart(l); ok {
			start = i
		}
	}
	if start < 0 {
		return trace{}, false
	}
	var message []string
	// Lines before the first traceback are the log message that wrapped it.
	for _, l := range lines {
		if prefix, ok := pyTraceStart(l); ok {
			if prefix != "" {
				message = append(message, prefix)
			}
			break
		}
		message = append(message, l)
	}
	var frames []frame // outermost first while collecting
	i := start + 1
	exception := ""
	for ; i < len(lines); i++ {
		l := lines[i]
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "File \"") {
			frames = append(frames, pythonFrame(t))
			continue
		}
		if t == "" || (len(l) > 0 && (l[0] == ' ' || l[0] == '\t')) {
			continue // source lines, carets, "..." elisions
		}
		exception = l
		break
	}
	if exception == "" {
		return trace{}, false
	}
	message = append(message, exception)
	// Innermost first.
	for a, b := 0, len(frames)-1; a < b; a, b = a+1, b-1 {
		frames[a], frames[b] = frames[b], frames[a]
	}
	return trace{message, frames}, true
}

// pythonFrame parses `File "/x/y.py", line 12, in func`.
func pythonFrame(t string) frame {
	rest := t[len(`File "`):]
	path := rest
	if k := strings.IndexByte(rest, '"'); k >= 0 {
		path, rest = rest[:k], rest[k+1:]
	}
	fn := ""
	if k := strings.LastIndex(rest, ", in "); k >= 0 {
		fn = strings.TrimSpace(rest[k+len(", in "):])
	}
	lower := strings.ToLower(path)
	o := inApp
	switch {
	case strings.Contains(lower, "site-packages") || strings.Contains(lower, "dist-packages"):
		o = inLibrary
	case strings.Contains(lower, "/lib/python") || strings.Contains(lower, `\lib\`) || strings.HasPrefix(path, "<"):
		o = inRuntime // the standard library, <frozen ...>, <string>
	}
	return frame{function: fn, file: baseName(path), origin: o}
}

// goPanic handles "panic: ..." / "fatal error: ..." followed by a
// "goroutine N [state]:" dump.
func goPanic(lines []string) (trace, bool) {
	first, dump := -1, -1
	for i, l := range lines {
		if first < 0 && (strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ")) {
			first = i
		}
		if first >= 0 && strings.HasPrefix(l, "goroutine ") && strings.HasSuffix(l, ":") && strings.IndexByte(l, '[') > 0 {
			dump = i
			break
		}
	}
	if first < 0 || dump < 0 {
		return trace{}, false
	}
	message := append([]string(nil), lines[:dump]...)
	var frames []frame
	for i := dump + 1; i < len(lines); i++ {
		l := lines[i]
		if l == "" || strings.HasPrefix(l, "goroutine ") {
			break // only the panicking goroutine
		}
		if l[0] == '\t' || strings.HasPrefix(l, "created by ") {
			continue
		}
		fn := l
		if k := strings.LastIndexByte(fn, '('); k > 0 && strings.HasSuffix(fn, ")") {
			fn = fn[:k]
		}
		file, loc := "", ""
		if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "\t") {
			loc = strings.TrimSpace(lines[i+1])
			if k := strings.IndexByte(loc, ' '); k > 0 {
				loc = loc[:k] // drop " +0x1d"
			}
			file = baseName(loc)
			i++
		}
		frames = append(frames, frame{function: fn, file: file, origin: goOrigin(fn, loc)})
	}
	return trace{message, frames}, true
}

// goOrigin: runtime and standard-library internals that every panic passes
// through (runtime.gopanic, internal/runtime/maps.fatal, sync, reflect), and
// third-party modules, found under the module cache or vendor/.
func goOrigin(fn, loc string) origin {
	switch {
	case fn == "panic", strings.HasPrefix(fn, "runtime."), strings.HasPrefix(fn, "internal/"),
		strings.HasPrefix(fn, "testing."), strings.HasPrefix(fn, "sync."), strings.HasPrefix(fn, "reflect."):
		return inRuntime
	case strings.Contains(loc, "/pkg/mod/"), strings.Contains(loc, "/vendor/"):
		return inLibrary
	}
	return inApp
}

// rustBacktrace handles a Rust panic's "stack backtrace:" block, whose
// frames are numbered lines ("  2: app::store::Store::load") each followed
// by an indented "at src/store.rs:41:9".
func rustBacktrace(lines []string) (trace, bool) {
	bt := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == "stack backtrace:" {
			bt = i
			break
		}
	}
	if bt < 0 {
		return trace{}, false
	}
	var frames []frame
	for i := bt + 1; i < len(lines) && len(frames) < 64; i++ {
		t := strings.TrimSpace(lines[i])
		k := strings.IndexByte(t, ':')
		if k <= 0 || strings.Trim(t[:k], "0123456789") != "" {
			continue // "at" lines already taken, notes
		}
		fn := strings.TrimSpace(t[k+1:])
		if j := strings.Index(fn, " - "); j > 0 && strings.HasPrefix(fn, "0x") {
			fn = fn[j+3:] // "0x55d1c3a2 - app::main" (full backtraces)
		}
		if j := strings.LastIndex(fn, "::h"); j > 0 && len(fn)-j-3 == 16 {
			fn = fn[:j] // the symbol hash differs per build
		}
		loc := ""
		if i+1 < len(lines) {
			if next := strings.TrimSpace(lines[i+1]); strings.HasPrefix(next, "at ") {
				loc = next[3:]
				i++
			}
		}
		frames = append(frames, frame{function: fn, file: baseName(loc), origin: rustOrigin(fn, loc)})
	}
	if len(frames) == 0 {
		return trace{}, false
	}
	return trace{lines[:bt], frames}, true
}

func rustOrigin(fn, loc string) origin {
	switch {
	case strings.Contains(loc, "/rustc/"), hasPrefixIn(strings.TrimPrefix(fn, "<"), rustRuntime):
		return inRuntime
	case strings.Contains(loc, "/.cargo/registry/"), strings.Contains(loc, "/.cargo/git/"):
		return inLibrary
	}
	return inApp
}

var rustRuntime = []string{"std::", "core::", "alloc::", "rust_begin_unwind", "__rust", "rust_panic"}

// atFrames handles Java/Kotlin/Scala ("\tat com.x.Y.m(Y.java:42)") and
// Node ("    at fn (/x/y.js:10:5)") traces: the lines before the first
// frame are the exception; "Caused by:" lines name the root cause.
func atFrames(lines []string) (trace, bool) {
	var message []string
	var frames []frame
	seenFrame := false
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "at ") && len(l) > len(t) {
			seenFrame = true
			if f, ok := atFrame(t[3:]); ok && len(frames) < 64 {
				frames = append(frames, f)
			}
			continue
		}
		if !seenFrame {
			message = append(message, l)
		} else if strings.HasPrefix(t, "Caused by: ") {
			message = append(message, t)
		}
	}
	if !seenFrame || len(frames) == 0 {
		return trace{}, false
	}
	return trace{message, frames}, true
}

// runtimePrefixes are the language runtimes' packages (JVM, .NET);
// libraryPrefixes are common frameworks. Neither is where an application
// bug is.
var (
	runtimePrefixes = []string{
		"java.", "javax.", "jdk.", "sun.", "com.sun.", "kotlin.", "kotlinx.", "scala.",
		"System.", "Microsoft.",
	}
	libraryPrefixes = []string{
		"org.junit.", "org.springframework.", "org.apache.", "io.netty.", "org.eclipse.",
		"com.fasterxml.", "com.google.", "io.grpc.", "okhttp3.", "reactor.", "org.hibernate.",
	}
)

// atFrame parses the text after "at ".
func atFrame(t string) (frame, bool) {
	t = strings.TrimPrefix(t, "async ")
	// Node prints an error's own properties after its last frame: "... {".
	t = strings.TrimSuffix(t, " {")
	fn, loc := "", t
	if k := strings.LastIndex(t, ") in "); k > 0 {
		// .NET: "Ns.Type.Method(Arg a) in C:\src\Type.cs:line 42".
		fn, loc = t[:k+1], t[k+len(") in "):]
		if p := strings.IndexByte(fn, '('); p > 0 {
			fn = fn[:p]
		}
	} else if strings.HasSuffix(t, ")") {
		if k := strings.LastIndex(t, "("); k > 0 {
			fn, loc = strings.TrimSpace(t[:k]), t[k+1:len(t)-1]
		}
	}
	// Java 9+ module prefix: "java.base/java.lang.Thread.run".
	if k := strings.IndexByte(fn, '/'); k >= 0 {
		fn = fn[k+1:]
	}
	if fn == "" && loc == "" {
		return frame{}, false
	}
	o := inApp
	switch {
	case strings.HasPrefix(loc, "node:") || strings.HasPrefix(loc, "internal/") || loc == "native" || hasPrefixIn(fn, runtimePrefixes):
		o = inRuntime
	case strings.Contains(loc, "node_modules") || hasPrefixIn(fn, libraryPrefixes):
		o = inLibrary
	}
	if fn == "" {
		fn = "<anonymous>"
	}
	return frame{function: fn, file: baseName(loc), origin: o}, true
}

func hasPrefixIn(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
