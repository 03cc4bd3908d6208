package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/the-loop/the-loop-diagnose/store/pgtest"
)

// The store package's tests share one throwaway PostgreSQL cluster.
func TestMain(m *testing.M) {
	if os.Getenv("STORE_TEST_OPEN_DSN") != "" {
		os.Exit(openHelper())
	}
	if os.Getenv("STORE_TEST_FLEET_DSN") != "" {
		os.Exit(fleetHelper())
	}
	os.Exit(pgtest.Main(m))
}

// openHelper is a child process of TestOpenDBProcessesRace: it opens the
// database named in its environment once, as a deployment starting would.
func openHelper() int {
	db, err := OpenDB(context.Background(), os.Getenv("STORE_TEST_OPEN_DSN"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	db.Close()
	return 0
}

// dialects runs fn against a fresh SQLite file and a fresh PostgreSQL
// database.
func dialects(t *testing.T, fn func(t *testing.T, dsn string)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, filepath.Join(t.TempDir(), "state", "the-loop-diagnose.db")) })
	t.Run("postgres", func(t *testing.T) { fn(t, pgtest.Start(t)) })
}

func mustOpen(t *testing.T, dsn string) *DB {
	t.Helper()
	db, err := OpenDB(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// migrationVersions are the versions the binary embeds.
func migrationVersions(t *testing.T) []int64 {
	t.Helper()
	ents, err := migrationFiles.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	var vs []int64
	for _, e := range ents {
		var v int64
		if _, err := fmt.Sscanf(e.Name(), "%d_", &v); err != nil {
			t.Fatalf("migration %s: name does not start with its version", e.Name())
		}
		vs = append(vs, v)
	}
	return vs
}

// appliedOnce asserts every embedded migration is recorded exactly once.
func appliedOnce(t *testing.T, db *DB) {
	t.Helper()
	for _, v := range migrationVersions(t) {
		var n int
		if err := db.SQL.QueryRow(db.Rebind("SELECT count(*) FROM goose_db_version WHERE version_id = ? AND is_applied"), v).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("migration %d recorded %d times, want once", v, n)
		}
	}
}

func TestOpenDBMigratesAndReopens(t *testing.T) {
	dialects(t, func(t *testing.T, dsn string) {
		db := mustOpen(t, dsn)
		// The fleet tables are there and usable through Rebind.
		if _, err := db.SQL.Exec(db.Rebind("INSERT INTO claims (fingerprint, holder, deployment, claimed_ms, expires_ms) VALUES (?, ?, ?, ?, ?)"), "fp1", "h", "d", 1, 2); err != nil {
			t.Fatal(err)
		}
		db.Close()
		db = mustOpen(t, dsn) // a second open migrates nothing and keeps the rows
		var n int
		if err := db.SQL.QueryRow("SELECT count(*) FROM claims").Scan(&n); err != nil || n != 1 {
			t.Fatalf("after reopen: %d claims, %v", n, err)
		}
		appliedOnce(t, db)
	})
}

func TestOpenDBSQLiteSettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nested", "dir", "s.db")
	db := mustOpen(t, "sqlite://"+path)
	for pragma, want := range map[string]string{"journal_mode": "wal", "synchronous": "2", "foreign_keys": "1", "busy_timeout": "10000"} {
		var got string
		if err := db.SQL.QueryRow("PRAGMA " + pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("PRAGMA %s = %s, want %s", pragma, got, want)
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("database file mode %v, want 0600 (it holds log excerpts)", fi.Mode().Perm())
	}
	if db.Name() != path {
		t.Errorf("Name() = %q, want the file %q", db.Name(), path)
	}
}

// Eight deployments starting at once on a fresh database: every open
// succeeds and each migration runs once.
func TestOpenDBGoroutinesRace(t *testing.T) {
	dialects(t, func(t *testing.T, dsn string) {
		var wg sync.WaitGroup
		errs := make([]error, 8)
		dbs := make([]*DB, 8)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				dbs[i], errs[i] = OpenDB(context.Background(), dsn)
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("open %d: %v", i, err)
			}
			defer dbs[i].Close()
		}
		appliedOnce(t, dbs[0])
	})
}

func TestOpenDBProcessesRace(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 8 processes")
	}
	dialects(t, func(t *testing.T, dsn string) {
		cmds := make([]*exec.Cmd, 8)
		outs := make([]*strings.Builder, 8)
		for i := range cmds {
			cmds[i] = exec.Command(os.Args[0], "-test.run=^$")
			cmds[i].Env = append(os.Environ(), "STORE_TEST_OPEN_DSN="+dsn)
			outs[i] = &strings.Builder{}
			cmds[i].Stderr = outs[i]
			if err := cmds[i].Start(); err != nil {
				t.Fatal(err)
			}
		}
		for i, c := range cmds {
			if err := c.Wait(); err != nil {
				t.Errorf("process %d: %v: %s", i, err, outs[i])
			}
		}
		appliedOnce(t, mustOpen(t, dsn))
	})
}

// A database a newer binary migrated is refused, naming the store.
func TestOpenDBRefusesNewerSchema(t *testing.T) {
	dialects(t, func(t *testing.T, dsn string) {
		db := mustOpen(t, dsn)
		if _, err := db.SQL.Exec(db.Rebind("INSERT INTO goose_db_version (version_id, is_applied) VALUES (?, ?)"), 9999, true); err != nil {
			t.Fatal(err)
		}
		db.Close()
		_, err := OpenDB(context.Background(), dsn)
		if !errors.Is(err, ErrSchemaTooNew) {
			t.Fatalf("open of a newer schema: %v, want ErrSchemaTooNew", err)
		}
		var se *StoreError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), "9999") {
			t.Fatalf("error %q should be a StoreError naming version 9999", err)
		}
		if !strings.Contains(err.Error(), "store "+se.Store) {
			t.Errorf("error %q does not name the store", err)
		}
	})
}

// An unreachable server is a StoreError naming the host, never the
// password, and comes back in bounded time.
func TestOpenDBUnreachablePostgres(t *testing.T) {
	const secret = "s3cr%21t-pw" // percent-encoded in the URL: "s3cr!t-pw"
	for _, dsn := range []string{
		"postgres://diag:" + secret + "@127.0.0.1:1/fleet?connect_timeout=5",
		"postgresql://diag:" + secret + "@/fleet?host=" + t.TempDir() + "&password=" + secret,
		// A client key's passphrase is a secret too (pgx's sslpassword).
		"postgresql://diag@/fleet?host=" + t.TempDir() + "&sslpassword=" + secret,
	} {
		start := time.Now()
		_, err := OpenDB(context.Background(), dsn)
		if err == nil {
			t.Fatalf("open %s: no error", dsn)
		}
		var se *StoreError
		if !errors.As(err, &se) {
			t.Errorf("error %T %q is not a StoreError", err, err)
		}
		msg := err.Error()
		for _, s := range []string{secret, "s3cr!t-pw", "s3cr"} {
			if strings.Contains(msg, s) {
				t.Errorf("error %q shows the password", msg)
			}
		}
		if !strings.Contains(msg, "unreachable") {
			t.Errorf("error %q does not say the server is unreachable", msg)
		}
		if strings.Contains(dsn, "127.0.0.1") && !strings.Contains(msg, "127.0.0.1:1") {
			t.Errorf("error %q does not name the host", msg)
		}
		if time.Since(start) > 15*time.Second {
			t.Errorf("took %v to fail", time.Since(start))
		}
	}
}

func TestRebind(t *testing.T) {
	pg := &DB{Dialect: DialectPostgres}
	lite := &DB{Dialect: DialectSQLite}
	q := `INSERT INTO t (a, "b?", c) VALUES (?, 'it''s ?', ?) ON CONFLICT (a) DO UPDATE SET c = ?`
	want := `INSERT INTO t (a, "b?", c) VALUES ($1, 'it''s ?', $2) ON CONFLICT (a) DO UPDATE SET c = $3`
	if got := pg.Rebind(q); got != want {
		t.Errorf("postgres Rebind:\n got %s\nwant %s", got, want)
	}
	if got := lite.Rebind(q); got != q {
		t.Errorf("sqlite Rebind changed the query: %s", got)
	}
}

// Tx runs fn again after a conflict the database reports, and returns any
// other error at once with nothing committed.
func TestTxRetriesConflictsOnly(t *testing.T) {
	dialects(t, func(t *testing.T, dsn string) {
		db := mustOpen(t, dsn)
		ctx := context.Background()
		insert := func(tx *sql.Tx, fp string) error {
			_, err := tx.Exec(db.Rebind("INSERT INTO claims (fingerprint, holder, deployment, claimed_ms, expires_ms) VALUES (?, 'h', 'd', 0, 0)"), fp)
			return err
		}
		calls := 0
		err := db.Tx(ctx, func(tx *sql.Tx) error {
			calls++
			if err := insert(tx, "retried"); err != nil {
				return err
			}
			if calls == 1 {
				return fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: "40001", Message: "could not serialize access"})
			}
			return nil
		})
		if err != nil || calls != 2 {
			t.Fatalf("serialization failure: err %v after %d calls, want success on the 2nd", err, calls)
		}
		calls = 0
		boom := errors.New("boom")
		if err := db.Tx(ctx, func(tx *sql.Tx) error {
			calls++
			if err := insert(tx, "rolled-back"); err != nil {
				return err
			}
			return boom
		}); !errors.Is(err, boom) || calls != 1 {
			t.Fatalf("plain error: %v after %d calls, want boom after 1", err, calls)
		}
		var n int
		if err := db.SQL.QueryRow("SELECT count(*) FROM claims").Scan(&n); err != nil || n != 1 {
			t.Fatalf("%d claims (%v), want only the retried one", n, err)
		}
	})
}
