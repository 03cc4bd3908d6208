package fingerprint

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// TestTokenTable checks the catalogue of kept and masked tokens
// (testdata/tokens.tsv), the package's promise of what is identity and what
// is data, row by row and version by version.
func TestTokenTable(t *testing.T) {
	const path = "testdata/tokens.tsv"
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	versions := []struct {
		name      string
		normalize func(string) string
	}{{"v2", Normalize}, {"v3", NormalizeV3}, {"v4", NormalizeV4}}
	rows, kept, masked := 0, 0, 0
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		if sc.Text() == "" || strings.HasPrefix(sc.Text(), "#") {
			continue
		}
		col := strings.Split(sc.Text(), "\t")
		if len(col) != 6 {
			t.Fatalf("%s:%d: %d columns, want 6 (class, token, v2, v3, v4, message)", path, line, len(col))
		}
		class, token, message := col[0], col[1], col[5]
		if !strings.Contains(message, token) {
			t.Fatalf("%s:%d: the message %q does not hold the token %q", path, line, message, token)
		}
		for i, v := range versions {
			want := col[2+i]
			if want != "kept" && want != "masked" {
				t.Fatalf("%s:%d: %s column %q, want kept or masked", path, line, v.name, want)
			}
			tmpl := v.normalize(message)
			got := "masked"
			if strings.Contains(tmpl, token) {
				got = "kept"
			}
			if got != want {
				t.Errorf("%s:%d: %s (%s): %s %s %q, want %s; template %q", path, line, class, v.name, got, token, message, want, tmpl)
			}
			if want == "kept" {
				kept++
			} else {
				masked++
			}
		}
		rows++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if rows < 50 || kept == 0 || masked == 0 {
		t.Fatalf("%s: %d rows (%d kept, %d masked): the catalogue is missing", path, rows, kept, masked)
	}
}
