package stages

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPostFitBodyLeavesSmallBodiesAlone(t *testing.T) {
	b := postBody("fp", "```\nx\n```\n")
	if got, cut := postFitBody(b, "fp", PostMaxBody); cut || got != b {
		t.Fatalf("changed a body that fits: cut=%v", cut)
	}
}

func TestPostFitBodyAddsMissingMarkers(t *testing.T) {
	got, _ := postFitBody("just text", "fp9", PostMaxBody)
	if !strings.HasSuffix(got, FingerprintMarker("fp9")+"\n"+SelfAuthoredMarker+"\n") {
		t.Fatalf("markers not appended last: %q", got)
	}
}

func TestPostFitBodyCutsTheDossierFirst(t *testing.T) {
	b := postBody("fp", "````\n"+strings.Repeat("a```b\n", 5000)+"````\n")
	got, cut := postFitBody(b, "fp", 4000)
	if !cut || utf8.RuneCountInString(got) > 4000 {
		t.Fatalf("cut=%v len=%d", cut, utf8.RuneCountInString(got))
	}
	if !strings.Contains(got, "The widget frobnicator panics.") || !strings.Contains(got, "## Environment\n\nlinux/amd64") {
		t.Fatal("cut outside the dossier while the dossier could give way")
	}
	if !strings.Contains(got, "this dossier was cut") || !strings.Contains(got, "\n````\n\n> **Note:**") {
		t.Fatalf("note or fence close missing:\n%s", got[len(got)-400:])
	}
}

func TestPostFitTitle(t *testing.T) {
	if got := postFitTitle(strings.Repeat("é", 300)); utf8.RuneCountInString(got) != PostMaxTitle || !strings.HasSuffix(got, "…") {
		t.Fatalf("title %d chars", utf8.RuneCountInString(got))
	}
	if got := postFitTitle(" a\nb\t "); got != "a b" {
		t.Fatalf("title %q", got)
	}
}

func FuzzPostFitBody(f *testing.F) {
	f.Add(postBody("fp", "```\nx\n```\n"), 300)
	f.Add(postBody("fp", strings.Repeat("```go\n", 100)), 500)
	f.Add("## Trigger\n"+strings.Repeat("é", 2000), 400)
	f.Add(strings.Repeat("x", 5000)+FingerprintMarker("fp"), 350)
	f.Fuzz(func(t *testing.T, body string, limit int) {
		if !utf8.ValidString(body) {
			return
		}
		limit = 300 + postAbs(limit)%5000
		got, _ := postFitBody(body, "fp", limit)
		if n := utf8.RuneCountInString(got); n > limit {
			t.Fatalf("%d characters over a limit of %d", n, limit)
		}
		if !utf8.ValidString(got) {
			t.Fatal("invalid UTF-8")
		}
		if !strings.Contains(got, FingerprintMarker("fp")) || !strings.HasSuffix(got, SelfAuthoredMarker+"\n") {
			t.Fatal("a marker was lost")
		}
	})
}

func postAbs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
