package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/gofrs/flock"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
	"github.com/pressly/goose/v3/lock"
	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// The schema, one goose migration per file, versioned by the number the
// file name starts with. The SQL is portable between SQLite and
// PostgreSQL (TEXT, BIGINT, INTEGER, ON CONFLICT; times are BIGINT unix
// milliseconds UTC) so both dialects have one schema.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// Dialects of a DB.
const (
	DialectSQLite   = "sqlite"
	DialectPostgres = "postgres"
)

// DB is the state database: an embedded SQLite file by default, a shared
// PostgreSQL for a fleet. Queries are written with ? placeholders and go
// through Rebind.
type DB struct {
	SQL     *sql.DB
	Dialect string // DialectSQLite | DialectPostgres

	// name is how errors name the store: the SQLite file, or the
	// PostgreSQL URL with its password masked.
	name string
}

// Name is the store as errors and logs name it (never with a password).
func (db *DB) Name() string { return db.name }

// StoreError is an error of the store itself (unreachable, refused,
// too new a schema), as opposed to a defect's own failure: a scan that
// meets one fails closed and charges nothing.
type StoreError struct {
	Store string // the store's name, password masked
	Err   error
}

func (e *StoreError) Error() string { return "store " + e.Store + ": " + e.Err.Error() }
func (e *StoreError) Unwrap() error { return e.Err }

// IsPostgresURL says whether dsn names a PostgreSQL server rather than a
// SQLite file.
func IsPostgresURL(dsn string) bool {
	l := strings.ToLower(dsn)
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")
}

// OpenDB opens the store dsn names and brings its schema up to this
// binary's migrations. dsn is a postgres:// or postgresql:// URL (pgx), or
// a SQLite file path, optionally as sqlite://PATH. Opening is safe when
// many processes open a fresh database at once: the migrations run under
// a lock (a lock row with a lease on PostgreSQL, which a dead holder's
// lease frees and which needs no session, so it works behind PgBouncer in
// transaction pooling; a file lock beside the SQLite file). A schema newer
// than this binary's is refused.
func OpenDB(ctx context.Context, dsn string) (*DB, error) {
	var db *DB
	var err error
	if IsPostgresURL(dsn) {
		db, err = openPostgres(ctx, dsn)
	} else {
		db, err = openSQLite(ctx, dsn)
	}
	if err != nil {
		return nil, err
	}
	if err := db.migrate(ctx, dsn); err != nil {
		db.SQL.Close()
		return nil, err
	}
	return db, nil
}

// Close closes the database.
func (db *DB) Close() error { return db.SQL.Close() }

func openPostgres(ctx context.Context, dsn string) (*DB, error) {
	name := maskURL(dsn)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, &StoreError{name, scrubSecret(fmt.Errorf("bad PostgreSQL URL (selfDiagnosis.store): %w", err), dsn)}
	}
	q := urlQuery(dsn)
	// Unnamed statements only: a server-side prepared statement belongs to
	// a session, and behind PgBouncer in transaction pooling the next
	// transaction may run on another server connection.
	if q.Get("default_query_exec_mode") == "" {
		cfg.DefaultQueryExecMode = pgx.QueryExecModeExec
	}
	// An unreachable server must fail the scan in bounded time, not hang
	// it until the OS gives up on the connect.
	if q.Get("connect_timeout") == "" {
		cfg.ConnectTimeout = 10 * time.Second
	}
	sdb := stdlib.OpenDB(*cfg)
	// A scan works a handful of defects at once; a fleet of them must not
	// exhaust the server's max_connections.
	sdb.SetMaxOpenConns(8)
	sdb.SetMaxIdleConns(4)
	sdb.SetConnMaxIdleTime(time.Minute)
	db := &DB{SQL: sdb, Dialect: DialectPostgres, name: name}
	if err := sdb.PingContext(ctx); err != nil {
		sdb.Close()
		return nil, &StoreError{name, scrubSecret(fmt.Errorf("PostgreSQL unreachable: %w", err), dsn)}
	}
	return db, nil
}

func openSQLite(ctx context.Context, dsn string) (*DB, error) {
	path := dsn
	if l := strings.ToLower(dsn); strings.HasPrefix(l, "sqlite://") {
		path = dsn[len("sqlite://"):]
	} else if strings.HasPrefix(l, "sqlite:") {
		path = dsn[len("sqlite:"):]
	}
	if path == "" {
		return nil, &StoreError{dsn, errors.New("no SQLite file named")}
	}
	db := &DB{Dialect: DialectSQLite, name: path}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, &StoreError{path, err}
	}
	// Created owner-only before SQLite sees it: the state holds excerpts
	// of logs (SQLite gives its -wal and -shm files the same mode).
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, &StoreError{path, err}
	}
	f.Close()
	// WAL: readers never wait for the writer. synchronous=FULL: a
	// committed decision survives a power cut, not only a crash.
	// _txlock=immediate: every transaction takes the write lock at BEGIN,
	// so two writers queue on busy_timeout instead of one failing when it
	// upgrades a read; Tx's transactions are all writes.
	v := url.Values{}
	v.Add("_pragma", "busy_timeout(10000)")
	v.Add("_pragma", "journal_mode(WAL)")
	v.Add("_pragma", "synchronous(FULL)")
	v.Add("_pragma", "foreign_keys(1)")
	v.Set("_txlock", "immediate")
	sdb, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+v.Encode())
	if err != nil {
		return nil, &StoreError{path, err}
	}
	db.SQL = sdb
	if err := sdb.PingContext(ctx); err != nil {
		sdb.Close()
		return nil, &StoreError{path, err}
	}
	return db, nil
}

// migrate applies the migrations this binary has and the database lacks.
// The common case, a database already at this binary's version, reads one
// row and takes no lock.
func (db *DB) migrate(ctx context.Context, dsn string) error {
	opts := []goose.ProviderOption{goose.WithDisableGlobalRegistry(true)}
	dialect := database.DialectSQLite3
	var fileLock *flock.Flock
	if db.Dialect == DialectPostgres {
		dialect = database.DialectPostgres
		l, err := lock.NewPostgresTableLocker(
			lock.WithTableLockTimeout(100*time.Millisecond, 3000), // up to 5 min behind a long migration
			lock.WithTableLeaseDuration(30*time.Second),
			lock.WithTableHeartbeatInterval(5*time.Second),
		)
		if err != nil {
			return &StoreError{db.name, err}
		}
		opts = append(opts, goose.WithLocker(l))
	} else {
		// SQLite is one machine's file: a file lock beside it serialises
		// the processes that open it fresh, and dies with its holder.
		fileLock = flock.New(db.name+".migrate.lock", flock.SetFlag(os.O_CREATE|os.O_RDONLY|syscall.O_NOFOLLOW))
		if _, err := fileLock.TryLockContext(ctx, 20*time.Millisecond); err != nil {
			return &StoreError{db.name, fmt.Errorf("migration lock %s.migrate.lock: %w", db.name, err)}
		}
		defer fileLock.Unlock()
	}
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return &StoreError{db.name, err}
	}
	p, err := goose.NewProvider(dialect, db.SQL, sub, opts...)
	if err != nil {
		return &StoreError{db.name, err}
	}
	current, target, err := p.GetVersions(ctx)
	if err != nil {
		return &StoreError{db.name, scrubSecret(fmt.Errorf("reading the schema version: %w", err), dsn)}
	}
	if err := tooNew(current, target); err != nil {
		return &StoreError{db.name, err}
	}
	if current == target {
		return nil
	}
	if _, err := p.Up(ctx); err != nil {
		return &StoreError{db.name, scrubSecret(fmt.Errorf("migrating the schema to version %d: %w", target, err), dsn)}
	}
	// Another process may have applied a newer binary's migrations while
	// this one waited for the lock.
	current, _, err = p.GetVersions(ctx)
	if err != nil {
		return &StoreError{db.name, scrubSecret(fmt.Errorf("reading the schema version: %w", err), dsn)}
	}
	if err := tooNew(current, target); err != nil {
		return &StoreError{db.name, err}
	}
	return nil
}

// ErrSchemaTooNew means the database was migrated by a newer binary: this
// one would misread or damage it.
var ErrSchemaTooNew = errors.New("schema too new")

func tooNew(current, target int64) error {
	if current > target {
		return fmt.Errorf("%w: the database is at schema version %d, this the-loop-diagnose knows up to %d; run a the-loop-diagnose at least as new as the one that migrated it", ErrSchemaTooNew, current, target)
	}
	return nil
}

// Rebind turns the ? placeholders of query into PostgreSQL's $1, $2, …
// (SQLite takes ? as written). A ? inside a quoted string or identifier
// is left alone.
func (db *DB) Rebind(query string) string {
	if db.Dialect != DialectPostgres || !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 8)
	n := 0
	var quote byte
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '?':
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// Tx runs fn in one transaction and commits it. A transaction the
// database aborted for a conflict (PostgreSQL's serialization failure or
// deadlock, SQLite busy past its timeout) is rolled back and fn is run
// again, so fn must do nothing outside the transaction that cannot be
// repeated. An error from fn rolls back and is returned as it is.
func (db *DB) Tx(ctx context.Context, fn func(*sql.Tx) error) error {
	const attempts = 8
	var err error
	for i := 0; i < attempts; i++ {
		if i > 0 {
			// Jittered backoff: racers that collided must not collide again.
			d := time.Duration(1<<min(i, 6))*5*time.Millisecond + time.Duration(rand.Int64N(int64(10*time.Millisecond)))
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(d):
			}
		}
		err = db.tx(ctx, fn)
		if err == nil || !db.retryable(err) {
			return err
		}
	}
	return err
}

func (db *DB) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := db.SQL.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// generation is the state's generation (migrations/00003_generation.sql);
// -1 on PostgreSQL, where it does not move: a fleet's deployments would
// all queue on its one row, so a watcher there reads the state every scan.
func (db *DB) generation(ctx context.Context) (int64, error) {
	if db.Dialect != DialectSQLite {
		return -1, nil
	}
	var n int64
	err := db.SQL.QueryRowContext(ctx, `SELECT n FROM generation`).Scan(&n)
	return n, err
}

// nextGeneration moves the generation on in tx, a write of the state, and
// returns it (-1 on PostgreSQL).
func (db *DB) nextGeneration(ctx context.Context, tx *sql.Tx) (int64, error) {
	if db.Dialect != DialectSQLite {
		return -1, nil
	}
	var n int64
	err := tx.QueryRowContext(ctx, `UPDATE generation SET n = n + 1 RETURNING n`).Scan(&n)
	return n, err
}

// retryable says whether err is a conflict that running the transaction
// again resolves.
func (db *DB) retryable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "40001" || pe.Code == "40P01" // serialization_failure, deadlock_detected
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		c := se.Code() & 0xff // the primary code; extended codes add bits above
		return c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED
	}
	return false
}

// maskURL is a PostgreSQL URL fit for a message: its password masked.
func maskURL(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "postgres://(unparsable URL)"
	}
	u.RawQuery = maskQuery(u.Query())
	return u.Redacted()
}

// secretParams are the connection parameters pgx reads a secret from: the
// store's name masks them, its errors never quote them.
var secretParams = []string{"password", "sslpassword"}

func maskQuery(q url.Values) string {
	for _, k := range secretParams {
		if q.Has(k) {
			q.Set(k, "xxxxx")
		}
	}
	s, _ := url.QueryUnescape(q.Encode())
	return s
}

func urlQuery(dsn string) url.Values {
	u, err := url.Parse(dsn)
	if err != nil {
		return url.Values{}
	}
	return u.Query()
}

// scrubSecret removes the URL's password from err's text wherever a
// driver quoted it; errors.Is and As still see the error it wraps.
func scrubSecret(err error, dsn string) error {
	var secrets []string
	if u, perr := url.Parse(dsn); perr == nil {
		if p, ok := u.User.Password(); ok && p != "" {
			secrets = append(secrets, p, url.QueryEscape(p), url.PathEscape(p))
		}
		for _, k := range secretParams {
			if p := u.Query().Get(k); p != "" {
				secrets = append(secrets, p, url.QueryEscape(p))
			}
		}
	} else {
		secrets = append(secrets, dsn) // unparsable: the whole URL may be the secret
	}
	msg := err.Error()
	scrubbed := msg
	for _, s := range secrets {
		scrubbed = strings.ReplaceAll(scrubbed, s, "xxxxx")
	}
	if scrubbed == msg {
		return err
	}
	return &scrubbedError{scrubbed, err}
}

type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }
