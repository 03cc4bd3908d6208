package store

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var dollarRE, qDigitRE = regexp.MustCompile(`\$[0-9]+`), regexp.MustCompile(`\?[0-9]`)

// Rebind changes nothing but the ? placeholders outside quotes, numbering
// them $1, $2, … in order; a query with its quotes balanced comes back
// whole when the placeholders are turned back.
func FuzzRebind(f *testing.F) {
	for _, s := range []string{
		"SELECT 1", "INSERT INTO t VALUES (?, ?)", `SELECT '?', "a?b", ? FROM t`,
		"UPDATE t SET a = 'it''s ?' WHERE b = ?", "?", "'unterminated ?", `"x`,
	} {
		f.Add(s)
	}
	pg := &DB{Dialect: DialectPostgres}
	f.Fuzz(func(t *testing.T, q string) {
		if strings.Contains(q, "$") || qDigitRE.MatchString(q) {
			return // a literal $n, or ?1 become $11, would not tell ours apart
		}
		out := pg.Rebind(q)
		n := 0
		back := dollarRE.ReplaceAllStringFunc(out, func(m string) string {
			n++
			if m != "$"+strconv.Itoa(n) {
				t.Fatalf("placeholder %s where $%d was due in %q", m, n, out)
			}
			return "?"
		})
		if back != q {
			t.Fatalf("Rebind(%q) = %q: more changed than the placeholders", q, out)
		}
		if (&DB{Dialect: DialectSQLite}).Rebind(q) != q {
			t.Fatalf("SQLite's Rebind changed %q", q)
		}
	})
}
