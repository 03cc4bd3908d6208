package source

import "testing"

// The source finder's parsers of error text take whatever a log holds:
// they never panic.
func FuzzSourceParsers(f *testing.F) {
	f.Add("Traceback (most recent call last):\n  File \"app/x.py\", line 3, in f\n    at com.acme.W.run(W.java:12)\n main.go:7 +0x1")
	f.Fuzz(func(t *testing.T, text string) {
		_ = sourceFrames(text)
		_ = sourceNeedles(text)
	})
}
