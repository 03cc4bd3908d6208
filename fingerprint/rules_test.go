package fingerprint

import (
	"fmt"
	"testing"
)

// The template memo changes nothing but speed: a remembered template is the
// one Template computes, and the memo never holds more than memoSize texts.
func TestTemplateMemoIsTransparentAndBounded(t *testing.T) {
	f, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2*memoSize+10; i++ {
		in := Input{Event: "dispatch.failed", Error: fmt.Sprintf("claude exited %d after %dms: pid %d", i%7, i, 1000+i)}
		first, again := f.Compute(in), f.Compute(in)
		if want := Template(in); first.Template != want || again.Template != want || first.Fingerprint != again.Fingerprint {
			t.Fatalf("%q: templates %q, %q; want %q", in.Error, first.Template, again.Template, want)
		}
		if want := versionedFingerprint(Version, in.Event, first.Template); first.Fingerprint != want || again.Fingerprint != want {
			t.Fatalf("%q: fingerprints %s, %s; want %s", in.Error, first.Fingerprint, again.Fingerprint, want)
		}
		if n, m := len(f.templates.templates.m), len(f.templates.fps.m); n > memoSize || m > memoSize {
			t.Fatalf("the memo holds %d texts and %d fingerprints, more than %d", n, m, memoSize)
		}
	}
	fields := Input{Event: "queue.stalled", Fields: MapFields{"exit_code": 137.0}}
	if got, want := f.Compute(fields).Template, Template(fields); got != want {
		t.Fatalf("a record without error text: %q, want %q", got, want)
	}
}
