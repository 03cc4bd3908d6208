package store

import (
	"path/filepath"
	"testing"
	"time"
)

// A watcher keeps its state between scans (Cache) and reads it again only
// when another writer changed the store: what a cron run, `retry` or
// `forget` wrote is seen by its next scan, its own commits are not read
// back, and a scan that ends with a change in memory no commit wrote
// leaves nothing kept (the next reads what is committed). On PostgreSQL
// every scan reads the state: the generation does not move there.
func TestAWatchersKeptStateSeesEveryOtherWriter(t *testing.T) {
	dialects(t, func(t *testing.T, dsn string) {
		path := filepath.Join(t.TempDir(), "self-diagnosis.json")
		cache := &Cache{DSN: dsn}
		t.Cleanup(func() { cache.Close() })
		const fp = "v3:0123456789abcdef"
		seen := func(s *Store) int { return stateOf(s).Deferred[fp].Count }
		open := func() *Store {
			t.Helper()
			s, err := cache.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		setCount := func(s *Store, n int) {
			t.Helper()
			if err := s.Update(func(st *State) error {
				st.Deferred[fp] = Deferred{Since: time.Now().UTC().Truncate(time.Millisecond), Count: n}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}

		s := open()
		setCount(s, 1)
		first := stateOf(s)
		s.Close()

		s = open()
		if got := seen(s); got != 1 {
			t.Fatalf("the next scan sees count %d; want its own 1", got)
		}
		if kept := stateOf(s) == first; kept != (dsnDialect(dsn) == DialectSQLite) {
			t.Fatalf("state kept between scans: %v on %s", kept, dsnDialect(dsn))
		}
		s.Close()

		other := openAt(t, path, dsn) // a cron run or `forget`, its own process
		setCount(other, 2)
		other.Close()

		s = open()
		if got := seen(s); got != 2 {
			t.Fatalf("after another writer the watcher's scan sees count %d; want 2", got)
		}
		s.Mutate(func(st *State) { // changed, never committed (a scan that failed)
			d := st.Deferred[fp]
			d.Count = 3
			st.Deferred[fp] = d
		})
		s.Close()

		s = open()
		if got := seen(s); got != 2 {
			t.Fatalf("after a scan left a change uncommitted the next sees count %d; want the committed 2", got)
		}
		s.Close()
	})
}

func dsnDialect(dsn string) string {
	if IsPostgresURL(dsn) {
		return DialectPostgres
	}
	return DialectSQLite
}
