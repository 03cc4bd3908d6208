package issue

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/the-loop/the-loop-diagnose/redact"

	"github.com/the-loop/the-loop-diagnose/stages/tracker"
)

func TestPostFitBodyLeavesSmallBodiesAlone(t *testing.T) {
	b := testBody("fp", "```\nx\n```\n")
	if got, cut := FitBody(b, []string{"fp"}, tracker.MaxBody); cut || got != b {
		t.Fatalf("changed a body that fits: cut=%v", cut)
	}
}

func TestPostFitBodyAddsMissingMarkers(t *testing.T) {
	got, _ := FitBody("just text", []string{"fp9"}, tracker.MaxBody)
	if !strings.HasSuffix(got, FingerprintMarker("fp9")+"\n"+SelfAuthoredMarker+"\n") {
		t.Fatalf("markers not appended last: %q", got)
	}
}

func TestPostFitBodyCutsTheDossierFirst(t *testing.T) {
	b := testBody("fp", "````\n"+strings.Repeat("a```b\n", 5000)+"````\n")
	got, cut := FitBody(b, []string{"fp"}, 4000)
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
	if got := FitTitle(strings.Repeat("é", 300)); utf8.RuneCountInString(got) != tracker.MaxTitle || !strings.HasSuffix(got, "…") {
		t.Fatalf("title %d chars", utf8.RuneCountInString(got))
	}
	if got := FitTitle(" a\nb\t "); got != "a b" {
		t.Fatalf("title %q", got)
	}
}

func FuzzPostFitBody(f *testing.F) {
	f.Add(testBody("fp", "```\nx\n```\n"), 300)
	f.Add(testBody("fp", strings.Repeat("```go\n", 100)), 500)
	f.Add("## Trigger\n"+strings.Repeat("é", 2000), 400)
	f.Add(strings.Repeat("x", 5000)+FingerprintMarker("fp"), 350)
	f.Add("```\nlog\n"+FingerprintMarker("fp")+"\n"+SelfAuthoredMarker+"\n", 5000)
	f.Add("text\n"+FingerprintMarker("other")+"\n"+FingerprintMarker("fp")+"\n"+SelfAuthoredMarker+"\n", 5000)
	f.Fuzz(func(t *testing.T, body string, limit int) {
		if !utf8.ValidString(body) {
			return
		}
		limit = 300 + postAbs(limit)%5000
		got, _ := FitBody(body, []string{"fp"}, limit)
		if n := utf8.RuneCountInString(got); n > limit {
			t.Fatalf("%d characters over a limit of %d", n, limit)
		}
		if !utf8.ValidString(got) {
			t.Fatal("invalid UTF-8")
		}
		if !strings.HasSuffix(got, SelfAuthoredMarker+"\n") || !slices.Equal(TrailingMarkers(got), []string{"fp"}) {
			// Whatever the body held (open fences, other markers), what is
			// filed is recognised as fp's issue and nothing else's.
			t.Fatalf("the body does not end with fp's marker block, outside any fence:\n%q", got)
		}
	})
}

func postAbs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func TestPostOccurrenceBodyTotalsEveryDeployment(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2025, 6, d, 0, 0, 0, 0, time.UTC) }
	var tally Tally
	tally.Set("a1", TallyEntry{Count: 4, First: day(3), Last: day(5), Versions: []string{"v1"}})
	tally.Set("b2", TallyEntry{Count: 2, First: day(1), Last: day(4), Versions: []string{"v1", "v2|rc <b>"}})
	body := OccurrenceBody("fp", tally, "1.0.0")
	for _, want := range []string{"| Occurrences | 6 |", "| Deployments reporting | 2 |", "| First seen | 2025-06-01T00:00:00Z |",
		"| Last seen | 2025-06-05T00:00:00Z |", "| Versions seen since filing | v1, v2\\|rc <" + redact.Joiner + "b> |"} {
		if !strings.Contains(body, want) {
			t.Fatalf("lacks %q:\n%s", want, body)
		}
	}
	if got := ParseTally(body); !reflect.DeepEqual(got, tally) {
		t.Fatalf("tally does not read back:\n got %+v\nwant %+v", got, tally)
	}
	// Ours replaces only our entry.
	tally.Set("a1", TallyEntry{Count: 5, First: day(3), Last: day(6), Versions: []string{"v1"}})
	if tot := tally.Totals(); tot.Count != 7 || tot.Deployments != 2 || !tot.Last.Equal(day(6)) {
		t.Fatalf("after a1's update: %+v", tot)
	}
}

func TestPostTallyFoldsAFleetTooLargeForOneCommentWithoutLosingCount(t *testing.T) {
	var tally Tally
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	long := []string{}
	for v := range 12 {
		long = append(long, fmt.Sprintf("v%d.0.0-%s", v, strings.Repeat("x", 60)))
	}
	for i := range 3 * tallyMaxDeployments {
		tally.Set(fmt.Sprintf("%032x", i), TallyEntry{Count: 2, First: base, Last: base.Add(time.Duration(i) * time.Hour), Versions: long})
	}
	tally.Set("ours", TallyEntry{Count: 1, First: base, Last: base}) // seen least recently, yet never folded
	tot := tally.Totals()
	if tot.Count != 6*tallyMaxDeployments+1 || tot.Deployments != 3*tallyMaxDeployments+1 {
		t.Fatalf("totals %d from %d deployments, want %d from %d", tot.Count, tot.Deployments, 6*tallyMaxDeployments+1, 3*tallyMaxDeployments+1)
	}
	if len(tally.Deployments) != tallyMaxDeployments || tally.Deployments["ours"].Count != 1 || tally.Deployments[tallyOthers].Count == 0 {
		t.Fatalf("%d entries kept; ours %+v", len(tally.Deployments), tally.Deployments["ours"])
	}
	body := OccurrenceBody("fp", tally, "1.0.0")
	if n := utf8.RuneCountInString(body); n > tracker.MaxBody {
		t.Fatalf("comment is %d characters, over GitHub's limit", n)
	}
	if got := ParseTally(body).Totals(); got.Count != tot.Count || got.Deployments != tot.Deployments {
		t.Fatalf("read back %+v, want %+v", got, tot)
	}
}

// FuzzPostParseTally: whatever a human leaves in the comment, parsing never
// fails or panics, and what is written back reads back identically and fits.
func FuzzPostParseTally(f *testing.F) {
	var seed Tally
	seed.Set("0123456789abcdef0123456789abcdef", TallyEntry{Count: 3, First: time.Unix(1700000000, 0).UTC(), Versions: []string{"v1"}})
	f.Add(OccurrenceBody("fp", seed, "1.0.0"))
	f.Add(`<!-- the-loop-diagnose tally:{"deployments":{"a":{"count":1e308,"folded":1e9},"b":{"count":2,"last":"2025-01-01T00:00:00Z","first":"2026-01-01T00:00:00Z"}}} -->`)
	f.Add(`<!-- the-loop-diagnose tally:{"deployments":{"a":{"count":2,"versions":["-->","<!--","` + strings.Repeat("é", 50) + `"]}}} -->`)
	f.Add(`<!-- the-loop-diagnose tally:{"deployments":null} --> <!-- the-loop-diagnose tally:{"deployments":{"x":{"count":1}}} -->`)
	f.Add("<!-- the-loop-diagnose tally:{\"deployments\":{\"a\":{\"count\":\"3\"}}")
	f.Fuzz(func(t *testing.T, body string) {
		tally := ParseTally(body)
		tally.Set("ours", TallyEntry{Count: 1})
		out := OccurrenceBody("fp", tally, "1.0.0")
		again := ParseTally(out)
		if !reflect.DeepEqual(again, tally) {
			t.Fatalf("written tally reads back differently:\n got %+v\nwant %+v", again, tally)
		}
		if tot := again.Totals(); tot.Count < 1 || tot.Deployments < 1 {
			t.Fatalf("totals %+v lost our own sighting", tot)
		}
		if utf8.RuneCountInString(out) > tracker.MaxBody {
			t.Fatalf("comment is %d characters", utf8.RuneCountInString(out))
		}
	})
}

// testBody renders a body shaped like compose's, with trigger as the dossier.
func testBody(fp, trigger string) string {
	return "## Summary\n\nThe widget frobnicator panics.\n\n## Trigger\n\n" + trigger +
		"\n## Environment\n\nlinux/amd64\n---\n_Filed automatically._\n\n" +
		FingerprintMarker(fp) + "\n" + SelfAuthoredMarker + "\n"
}
