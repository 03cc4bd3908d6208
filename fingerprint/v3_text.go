package fingerprint

import (
	"regexp"
	"sort"
	"strings"
)

// NormalizeV3's text pass: what varies across environments (hosts, users,
// OS paths, clusters, CI runners, thread pools) and across library
// versions (message forms that were reworded). canonV3 rewrites a message
// into one canonical form before the word normalizer; every rewrite is
// guarded by a substring test, so a message without its trigger pays a
// scan and nothing else. Optional context lines (test tallies, a SQL
// driver's echo) are found here too. Each rule's comment states its
// principle.

// canonV3 rewrites the message forms that differ by environment or version.
func canonV3(s string) string {
	if strings.Contains(s, "Cannot ") && strings.Contains(s, " property ") {
		s = nodePropertyOld.ReplaceAllStringFunc(s, nodeProperty)
	}
	if strings.Contains(s, "ImportError: No module named ") {
		s = pyImportOld.ReplaceAllString(s, "ModuleNotFoundError: No module named '$1'")
	}
	if strings.Contains(s, "'__getitem__'") {
		s = pyGetitemOld.ReplaceAllString(s, "'$1' object is not subscriptable")
	}
	if strings.Contains(s, "Did you ") {
		s = pySuggestion.ReplaceAllString(s, "")
	}
	if strings.Contains(s, "Unexpected token") {
		s = jsonTokenOld.ReplaceAllString(s, "Unexpected token '$1' in JSON")
		s = jsonTokenNew.ReplaceAllString(s, "Unexpected token '$1' in JSON")
	}
	if strings.Contains(s, "Exception in thread \"") {
		s = javaPreamble.ReplaceAllString(s, "$1")
	}
	if strings.Contains(s, "[Source: ") {
		s = stripJacksonLocation(s)
	}
	if strings.Contains(s, "sh:") || strings.Contains(s, ": line ") {
		s = canonShell(s)
	}
	if strings.Contains(s, "nodes are available: ") {
		s = canonNodeTally(s)
	}
	if strings.Contains(s, "lookup ") && strings.Contains(s, " on ") {
		s = resolverServer.ReplaceAllString(s, "$1:")
	}
	return s
}

// Node.js (V8) reworded property access on a missing object in v16.9:
// "Cannot read property 'x' of undefined" became "Cannot read properties of
// undefined (reading 'x')", the same for null and for "set". One defect
// under two runtimes is one template: the old form is rewritten to the new.
var nodePropertyOld = regexp.MustCompile(`Cannot (read|set) property '([^'\n]*)' of (undefined|null)`)

func nodeProperty(m string) string {
	sub := nodePropertyOld.FindStringSubmatch(m)
	return "Cannot " + sub[1] + " properties of " + sub[3] + " (" + sub[1] + gerundSuffix(sub[1]) + " '" + sub[2] + "')"
}

func gerundSuffix(verb string) string {
	if verb == "set" {
		return "ting"
	}
	return "ing"
}

// Python renamed and reworded errors across versions: Python 2 and 3.0–3.5
// raise "ImportError: No module named x" (3.3–3.5 quote the name) where 3.6+
// raise "ModuleNotFoundError: No module named 'x'"; Python 2 reports
// subscripting an object that does not support it as "'T' object has no
// attribute '__getitem__'", Python 3 as "'T' object is not subscriptable".
// The old forms are rewritten to the new.
var (
	pyImportOld  = regexp.MustCompile(`ImportError: No module named '?([A-Za-z_][\w.]*)'?`)
	pyGetitemOld = regexp.MustCompile(`'([A-Za-z_][\w.]*)' object has no attribute '__getitem__'`)
)

// Python 3.10+ appends a suggestion to NameError, AttributeError and
// ImportError (". Did you mean: 'print'?", 3.12: "Did you forget to import
// 'sys'?"): the hint depends on the interpreter's version and on the names
// nearby, not on the defect, so it is dropped.
var pySuggestion = regexp.MustCompile(`\.? Did you (?:mean:? |forget to import )'[^'\n]{0,200}'\?`)

// V8 reworded JSON.parse's syntax error in Node 19/20: "Unexpected token o
// in JSON at position 1" became "Unexpected token 'o', "oops" is not valid
// JSON". Both become "Unexpected token 'o' in JSON" (the position and the
// echoed input are data).
var (
	jsonTokenOld = regexp.MustCompile(`Unexpected token (\S) in JSON at position \d+`)
	jsonTokenNew = regexp.MustCompile(`Unexpected token '(.)', ".*?"(?:\.\.\.)? is not valid JSON`)
)

// Go's pure resolver names the DNS server it asked ("lookup db on
// 127.0.0.11:53: no such host"); the cgo resolver does not ("lookup db: no
// such host"). The server is the environment's, so it is dropped.
var resolverServer = regexp.MustCompile(`(lookup \S+) on \S+:\d+:`)

// The JVM's uncaught-exception handler prefixes what escaped a thread with
// 'Exception in thread "main" '; a logger or a framework prints the same
// exception without it. Who printed it is not the defect: the preamble is
// dropped (the thread's name is masked anywhere else).
var javaPreamble = regexp.MustCompile(`Exception in thread "[^"\n]*" ([\w$]+\.[\w.$]+)`)

// stripJacksonLocation: Jackson ends a parse error with where in the input
// it failed — " at [Source: (String)"{...}"; line: 1, column: 243]" (or
// "[Source: REDACTED (...)"): the echoed input and its position are data,
// and whether the source is echoed is a configuration
// (INCLUDE_SOURCE_IN_LOCATION), so the location is dropped.
func stripJacksonLocation(s string) string {
	for from := 0; ; {
		i := strings.Index(s[from:], "[Source: ")
		if i < 0 {
			return s
		}
		i += from
		col := strings.Index(s[i:], "column: ")
		if col < 0 {
			return s
		}
		end := strings.IndexByte(s[i+col:], ']')
		if end < 0 {
			return s
		}
		end += i + col + 1
		start := i
		if strings.HasSuffix(s[:start], " at ") {
			start -= len(" at ")
			if start > 0 && s[start-1] == '\n' {
				start--
			}
		}
		s = s[:start] + s[end:]
		from = start
	}
}

// A shell reports a failing command after where it ran: its own name or the
// script's path and a line number ("/__w/_temp/2f1c.sh: line 21: ", "bash:
// line 22: ", dash's "sh: 1: ", zsh's "zsh:1: "). Where is not what: the
// prefix becomes "sh: ". dash's "foo: not found" and zsh's "command not
// found: foo" are bash's "foo: command not found".
var (
	shellLine     = regexp.MustCompile(`: line \d+: `)
	shellWhere    = regexp.MustCompile(`(^|[\s'"(])(?:ba|z|k|da)?sh(?:: -c)?: ?\d+: `)
	shellName     = regexp.MustCompile(`(^|[\s'"(])(?:ba|z|k|da)sh: `)
	shellNotFound = regexp.MustCompile(`\bsh: ([^\s:]+): not found`)
	zshNotFound   = regexp.MustCompile(`\bsh: command not found: (\S+)`)
)

func canonShell(s string) string {
	if strings.Contains(s, ": line ") {
		var b strings.Builder
		at := 0
		for _, m := range shellLine.FindAllStringIndex(s, -1) {
			// The script: back to the line's start or the last ": ".
			from := strings.LastIndexByte(s[:m[0]], '\n') + 1
			if c := strings.LastIndex(s[from:m[0]], ": "); c >= 0 {
				from += c + 2
			}
			if from < at || !isScriptName(s[from:m[0]]) {
				continue
			}
			b.WriteString(s[at:from])
			b.WriteString("sh: ")
			at = m[1]
		}
		if at > 0 {
			b.WriteString(s[at:])
			s = b.String()
		}
	}
	s = shellWhere.ReplaceAllString(s, "${1}sh: ")
	if strings.Contains(s, "sh: ") {
		s = shellName.ReplaceAllString(s, "${1}sh: ")
		s = shellNotFound.ReplaceAllString(s, "sh: $1: command not found")
		s = zshNotFound.ReplaceAllString(s, "sh: $1: command not found")
	}
	return s
}

// isScriptName: a shell's name, or a script's name or path (spaces allowed).
func isScriptName(s string) bool {
	s = strings.TrimSpace(s)
	switch s {
	case "sh", "bash", "zsh", "ksh", "dash", "/bin/sh", "/bin/bash", "/usr/bin/bash", "bash: -c", "sh: -c":
		return true
	}
	return s != "" && (strings.HasSuffix(s, ".sh") || strings.HasSuffix(s, ".bash") || isPath(s))
}

// The Kubernetes scheduler's "0/5 nodes are available: 4 node(s) had
// untolerated taint {...}, 1 Insufficient memory." tallies each reason a
// node was ruled out. Which nodes a cluster has (tainted control planes,
// cordoned nodes, other node pools) is the cluster's, not the pod's: the
// counts are dropped, a clause that rules a node out by topology (taints,
// unschedulable, node affinity/selector) is dropped when another reason
// remains, and the rest are sorted. The "preemption: ..." sentence newer
// schedulers append is dropped.
func canonNodeTally(s string) string {
	const head = "nodes are available: "
	if p := strings.Index(s, " preemption: "); p >= 0 {
		e := sentenceEnd(s, p+len(" preemption: "))
		s = s[:p] + s[e:]
	}
	i := strings.Index(s, head)
	if i < 0 {
		return s
	}
	start := i + len(head)
	end := sentenceEnd(s, start)
	body := s[start:end]
	body = strings.TrimSuffix(body, ".")
	var clauses []string
	depth, from := 0, 0
	for k := 0; k < len(body); k++ {
		switch body[k] {
		case '{', '[', '(':
			depth++
		case '}', ']', ')':
			depth--
		case ',':
			// ", that the pod didn't tolerate" continues the clause.
			if depth == 0 && !strings.HasPrefix(body[k+1:], " that ") {
				clauses = append(clauses, body[from:k])
				from = k + 1
			}
		}
	}
	clauses = append(clauses, body[from:])
	var kept, topology []string
	for _, c := range clauses {
		c = strings.TrimSpace(c)
		c = strings.TrimLeft(c, "0123456789")
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		if strings.Contains(c, "taint") || strings.Contains(c, "unschedulable") || strings.Contains(c, "affinity/selector") || strings.Contains(c, "node selector") {
			topology = append(topology, c)
		} else {
			kept = append(kept, c)
		}
	}
	if len(kept) == 0 {
		kept = topology
	}
	sort.Strings(kept)
	kept = compactStrings(kept)
	tail := s[end:]
	if strings.HasSuffix(s[start:end], ".") {
		tail = "." + tail
	}
	return s[:start] + strings.Join(kept, ", ") + tail
}

// sentenceEnd is the index just past the sentence starting at i: its '.'
// followed by a space, a quote or the end of the line (brackets skipped).
func sentenceEnd(s string, i int) int {
	depth := 0
	for ; i < len(s); i++ {
		switch c := s[i]; c {
		case '{', '[', '(':
			depth++
		case '}', ']', ')':
			depth--
		case '\n':
			return i
		case '.':
			if depth <= 0 && (i+1 == len(s) || isSpace(s[i+1]) || s[i+1] == '"' || s[i+1] == '\'') {
				return i + 1
			}
		}
	}
	return i
}

func compactStrings(s []string) []string {
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// Optional context lines: a test runner's tally ("=== 1 failed, 3 passed in
// 2.1s ===", "Tests: 1 failed, 12 passed, 13 total", "FAILED
// (failures=1)"), a SQL driver's echo of the statement ("LINE 1: SELECT
// ...", "STATEMENT: ...") and the caret under it are there or not depending
// on the runner, driver and how the log was cut, and none names a defect:
// they are dropped when the text has another line.

// optionalLines reports whether text has an optional line and a line that
// is not optional.
func optionalLines(lines []string) (optional, required bool) {
	for _, l := range lines {
		optional, required = noteLine(l, optional, required)
	}
	return optional, required
}

// hasRequiredLine: the text has an optional line and another that is not.
func hasRequiredLine(text string) bool {
	optional, required := false, false
	for len(text) > 0 && !(optional && required) {
		var line string
		line, text, _ = strings.Cut(text, "\n")
		optional, required = noteLine(line, optional, required)
	}
	return optional && required
}

// noteLine adds line to what optionalLines has seen: a blank line is
// neither optional nor required.
func noteLine(line string, optional, required bool) (bool, bool) {
	switch t := strings.TrimSpace(line); {
	case t == "":
	case isOptionalLine(t):
		optional = true
	default:
		required = true
	}
	return optional, required
}

// isOptionalLine: t (trimmed, non-empty) is a caret line, a SQL statement
// echo or a test runner's tally.
func isOptionalLine(t string) bool {
	switch c := t[0]; {
	case c == '^' || c == '~':
		return strings.Trim(t, "^~ \t") == ""
	case c == 'L' && strings.HasPrefix(t, "LINE "):
		k := len("LINE ")
		for k < len(t) && isDigit(t[k]) {
			k++
		}
		return k > len("LINE ") && k < len(t) && t[k] == ':'
	case c == 'S' && strings.HasPrefix(t, "STATEMENT: "):
		return true
	}
	return isTally(t)
}

// isTally: every word of t is a test runner's tally word and t counts
// something (a number), or it is jest's "Ran all test suites".
func isTally(t string) bool {
	digits, countWords := false, false
	for i := 0; i < len(t); {
		c := t[i]
		switch {
		case isDigit(c):
			digits = true
			i++
		case isASCIILetter(c):
			j := i
			for j < len(t) && isASCIILetter(t[j]) {
				j++
			}
			var buf [16]byte
			w := string(lowerInto(buf[:0], t[i:j]))
			kind, ok := tallyWords[w]
			if !ok {
				return false
			}
			countWords = countWords || kind
			i = j
		case c >= 0x80:
			return false
		default:
			i++
		}
	}
	return countWords && (digits || strings.HasPrefix(t, "Ran all test suites"))
}

// tallyWords are the words of test runners' summaries; true marks the ones
// that count outcomes (a line needs one).
var tallyWords = map[string]bool{
	"failed": true, "passed": true, "skipped": true, "error": true, "errors": true,
	"failure": true, "failures": true, "failing": true, "passing": true, "pending": true,
	"total": true, "tests": true, "test": true, "examples": true, "example": true,
	"assertions": true, "assertion": true, "deselected": true, "xfailed": true, "xpassed": true,
	"ignored": true, "measured": true, "filtered": true, "incomplete": true, "risky": true,
	"warnings": true, "warning": true, "rerun": true, "todo": true, "suites": true, "suite": true,
	"snapshots": true, "snapshot": true, "time": true,
	"in": false, "s": false, "ms": false, "sec": false, "secs": false, "seconds": false, "m": false,
	"min": false, "h": false, "ran": false, "all": false, "ok": false, "fail": false,
	"pass": false, "of": false, "and": false, "finished": false, "took": false, "to": false,
	"load": false, "files": false, "file": false, "result": false, "out": false,
}
