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
	inApp    bool
}

// normalizeTrace recognises Python tracebacks, Go panics and Java/Node
// stack traces. ok is false for other multi-line text.
func normalizeTrace(text string) (string, bool) {
	lines := strings.Split(text, "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], "\r")
	}
	if t, ok := pythonTrace(lines); ok {
		return t, true
	}
	if t, ok := goPanic(lines); ok {
		return t, true
	}
	if t, ok := atFrames(lines); ok {
		return t, true
	}
	return "", false
}

// render writes the normalized message lines and the chosen frame.
func render(message []string, frames []frame) string {
	var n normalizer
	for _, m := range message {
		if strings.TrimSpace(m) == "" {
			continue
		}
		if len(n.out) > 0 {
			n.out = append(n.out, '\n')
		}
		n.line(m)
	}
	if f, ok := topFrame(frames); ok {
		if len(n.out) > 0 {
			n.out = append(n.out, '\n')
		}
		n.out = append(n.out, "  at "...)
		n.out = append(n.out, f.function...)
		if f.file != "" {
			n.out = append(n.out, " ("...)
			n.out = append(n.out, f.file...)
			n.out = append(n.out, ')')
		}
	}
	return n.finish()
}

// topFrame is the innermost in-app frame, or the innermost frame when none
// is in-app. frames are ordered innermost first.
func topFrame(frames []frame) (frame, bool) {
	for _, f := range frames {
		if f.inApp {
			return f, true
		}
	}
	if len(frames) > 0 {
		return frames[0], true
	}
	return frame{}, false
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
func pythonTrace(lines []string) (string, bool) {
	start := -1
	for i, l := range lines {
		if _, ok := pyTraceStart(l); ok {
			start = i
		}
	}
	if start < 0 {
		return "", false
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
		return "", false
	}
	message = append(message, exception)
	// Innermost first.
	for a, b := 0, len(frames)-1; a < b; a, b = a+1, b-1 {
		frames[a], frames[b] = frames[b], frames[a]
	}
	return render(message, frames), true
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
	library := strings.Contains(lower, "site-packages") || strings.Contains(lower, "dist-packages") ||
		strings.Contains(lower, "/lib/python") || strings.Contains(lower, `\lib\`) ||
		strings.HasPrefix(path, "<")
	return frame{function: fn, file: baseName(path), inApp: !library}
}

// goPanic handles "panic: ..." / "fatal error: ..." followed by a
// "goroutine N [state]:" dump.
func goPanic(lines []string) (string, bool) {
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
		return "", false
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
		file := ""
		if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "\t") {
			loc := strings.TrimSpace(lines[i+1])
			if k := strings.IndexByte(loc, ' '); k > 0 {
				loc = loc[:k] // drop " +0x1d"
			}
			file = baseName(loc)
			i++
		}
		runtime := strings.HasPrefix(fn, "runtime.") || fn == "panic" || strings.HasPrefix(fn, "testing.") ||
			strings.HasPrefix(fn, "sync.") || strings.HasPrefix(fn, "reflect.")
		frames = append(frames, frame{function: fn, file: file, inApp: !runtime})
	}
	return render(message, frames), true
}

// atFrames handles Java/Kotlin/Scala ("\tat com.x.Y.m(Y.java:42)") and
// Node ("    at fn (/x/y.js:10:5)") traces: the lines before the first
// frame are the exception; "Caused by:" lines name the root cause.
func atFrames(lines []string) (string, bool) {
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
		return "", false
	}
	return render(message, frames), true
}

// libraryPrefixes are runtime and framework packages whose frames are not
// where an application bug is.
var libraryPrefixes = []string{
	"java.", "javax.", "jdk.", "sun.", "com.sun.", "kotlin.", "kotlinx.", "scala.",
	"org.junit.", "org.springframework.", "org.apache.", "io.netty.",
}

// atFrame parses the text after "at ".
func atFrame(t string) (frame, bool) {
	t = strings.TrimPrefix(t, "async ")
	fn, loc := "", t
	if strings.HasSuffix(t, ")") {
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
	inApp := !strings.Contains(loc, "node_modules") && !strings.HasPrefix(loc, "node:") &&
		!strings.HasPrefix(loc, "internal/") && loc != "native"
	for _, p := range libraryPrefixes {
		if strings.HasPrefix(fn, p) {
			inApp = false
			break
		}
	}
	if fn == "" {
		fn = "<anonymous>"
	}
	return frame{function: fn, file: baseName(loc), inApp: inApp}, true
}
