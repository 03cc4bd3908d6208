package eventlog

import "strings"

// Kinds of corrupt line. Each is unmistakably not a JSON object a reader
// should accept: invalid JSON, invalid UTF-8, a non-object, blank, NULs, or
// longer than a 1 MiB line cap. None would be a candidate if parsed leniently.
const (
	corruptBadJSON = iota
	corruptTruncated
	corruptInvalidUTF8
	corruptNonObject
	corruptBlank
	corruptNUL
	corruptKinds
)

var nonObjects = []string{`[1,2,3]`, `"log rotated"`, `42`, `null`, `true`, `[{"event":"queue.depth","level":"debug"}]`}

var blanks = []string{"", "   ", "\t", " \r"}

// invalidUTF8 are byte strings that are not UTF-8: latin-1 text, a stray
// continuation byte, a UTF-16 BOM, a truncated multi-byte sequence.
var invalidUTF8 = []string{"caf\xe9 cr\xe8me", "\x80 stray", "\xff\xfeu\x00t\x00f\x00", "half a snowman \xe2\x98"}

func (g *generator) writeCorrupt(i int) {
	g.corrupt++
	if !g.overlongDone && g.res.Lines >= overlongMinLines && i >= g.res.Lines/2 {
		g.overlongDone = true
		g.writeOverlong(i)
		return
	}
	l := &g.line
	switch g.r.intn(corruptKinds) {
	case corruptBadJSON:
		g.writeNoise(i)
		body := l.b[:len(l.b)-1] // without '\n'
		switch g.r.intn(3) {
		case 0: // a trailing comma, from a hand-edited or buggy writer
			body = append(body[:len(body)-1], ",}"...)
			l.b = append(body, '\n')
		case 1: // Python's repr of a dict, as a debugging print leaves it
			for j, c := range body {
				if c == '"' {
					body[j] = '\''
				}
			}
			l.b = append(body, '\n')
		default: // two writers interleaved: a line cut short runs into the next
			cut := g.r.between(12, len(body)-2)
			g.aux = append(g.aux[:0], body[:cut]...)
			g.writeNoise(i)
			g.aux = append(g.aux, l.b...)
			l.b = append(l.b[:0], g.aux...)
		}
	case corruptTruncated:
		g.writeNoise(i)
		l.b = append(l.b[:g.r.between(1, len(l.b)-3)], '\n')
	case corruptInvalidUTF8:
		g.newScene(false)
		l.begin(g.now, "agent.output", "debug")
		l.str("source", "queue")
		l.str("harness", g.r.pick(harnesses))
		l.start("snippet")
		l.b = append(l.b, "stdout: "...)
		l.b = append(l.b, g.r.pick(invalidUTF8)...)
		l.closeStr()
		l.str("version", g.version(i))
		l.end()
	case corruptNonObject:
		l.b = append(append(l.b[:0], g.r.pick(nonObjects)...), '\n')
	case corruptBlank:
		l.b = append(append(l.b[:0], g.r.pick(blanks)...), '\n')
	case corruptNUL:
		l.b = l.b[:0]
		for range g.r.between(16, 400) {
			l.b = append(l.b, 0)
		}
		l.b = append(l.b, '\n')
	}
}

// writeOverlong writes an agent transcript dumped into one event, longer than
// a 1 MiB line cap. It streams the filler: the line is never held in memory.
func (g *generator) writeOverlong(i int) {
	g.newScene(false)
	l := &g.line
	l.begin(g.now, "agent.output", "debug")
	l.str("source", "queue")
	l.str("harness", "claude")
	g.appendWorkItem()
	l.start("output")
	written := len(l.b)
	g.w.Write(l.b) //nolint:errcheck // bufio.Writer keeps the error; run returns it
	for written < overlongBytes {
		g.w.Write(overlongFiller) //nolint:errcheck // as above
		written += len(overlongFiller)
	}
	l.b = append(l.b[:0], '"')
	l.str("version", g.version(i))
	l.end()
}

// overlongFiller is npm-install chatter as it appears escaped inside a JSON
// string. It is written whole, so no escape sequence is ever cut in two.
var overlongFiller = []byte(strings.Repeat(`npm warn deprecated inflight@1.0.6: This module is not supported, and leaks memory. Do not use it.\n`, 40))
