package redact

import "strings"

// Fence wraps s in a markdown fenced code block that s cannot close: the
// fence is a run of backticks longer than the longest run of backticks or
// tildes inside s (at least three), so s appears verbatim between the fence
// lines whichever fence character a renderer pairs it with.
func Fence(s string) string {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' || s[i] == '~' {
			if run > 0 && s[i] != s[i-1] {
				run = 0
			}
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", max(3, longest+1))
	var b strings.Builder
	b.Grow(len(s) + 2*len(fence) + 3)
	b.WriteString(fence)
	b.WriteByte('\n')
	b.WriteString(s)
	if !strings.HasSuffix(s, "\n") {
		b.WriteByte('\n')
	}
	b.WriteString(fence)
	b.WriteByte('\n')
	return b.String()
}
