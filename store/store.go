package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// ErrLocked means another scan holds the state lock: skip this scan.
var ErrLocked = errors.New("another scan holds the state lock")

// DBName is the SQLite file the state of the-loop's default state path
// (DefaultStateName) lives in, beside it: the name every deployment's
// database had while there was one per directory.
const DBName = "the-loop-diagnose.db"

// DefaultStateName is the-loop's state file (its StateLayout's).
const DefaultStateName = "self-diagnosis.json"

// DefaultDSN is the store of a state path when none is configured: a SQLite
// file beside it named after it (a.json: a.db), so two state paths in one
// directory never share one; the-loop's own self-diagnosis.json keeps
// DBName.
func DefaultDSN(statePath string) string {
	return filepath.Join(filepath.Dir(statePath), ownName(statePath, ".db", DBName))
}

// ownName names a file of statePath's own beside it: its stem with ext
// (a.json: a.db), or legacy for the-loop's default state path.
func ownName(statePath, ext, legacy string) string {
	base := filepath.Base(statePath)
	if base == DefaultStateName {
		return legacy
	}
	stem := strings.TrimSuffix(base, filepath.Ext(base))
	if stem == "" || stem+ext == base {
		stem = base // ".json", or a state path named like its database
	}
	return stem + ext
}

// SharedStoreError is a database (or PostgreSQL deployment key) that two
// state paths in one directory shared while there was one per directory:
// their defects are mixed in it and nothing tells them apart, so it is
// refused rather than shared on.
type SharedStoreError struct {
	What   string // the shared file
	Owner  string // the state path it belongs to (the first it imported)
	Path   string // this state path, whose scans used it too
	Remedy string
}

func (e *SharedStoreError) Error() string {
	return fmt.Sprintf("%s is shared: it holds the state of %s, and the scans of %s used it too (one per directory, before each state path had its own), so their defects are mixed; %s keeps it. fix: %s",
		e.What, e.Owner, e.Path, filepath.Base(e.Owner), e.Remedy)
}

// ownFile is the file of statePath's own (own) when the directory's
// older shared one (shared: DBName, ScopeFile) is not involved: own
// exists, or shared does not. A shared file is this state path's when the
// state it imported first was this path's: it is renamed to own (a
// read-only open uses it where it is). Another's, that this state path's
// scans used too (ranBefore: its lock file was there before this open took
// it), is a *SharedStoreError. owner reads the state path a shared file
// imported.
func ownFile(statePath, own, shared string, readOnly, ranBefore bool, owner func() (string, error)) (string, error) {
	if own == shared || exists(own) || !exists(shared) {
		return own, nil
	}
	first, err := owner()
	if err != nil {
		return "", err
	}
	switch {
	case first != "" && filepath.Base(first) == filepath.Base(statePath):
		if readOnly {
			return shared, nil
		}
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if err := os.Rename(shared+suffix, own+suffix); err != nil && !os.IsNotExist(err) {
				return "", fmt.Errorf("state %s: giving it its own %s: %w", statePath, own, err)
			}
		}
		fmt.Fprintf(Notices, "state: %s is now %s: each state path has its own\n", shared, own)
		return own, nil
	case first != "" && ranBefore:
		return "", &SharedStoreError{What: shared, Owner: first, Path: statePath,
			Remedy: fmt.Sprintf("to let %s start afresh in %s (its issues are found again on GitHub by their markers, its log is read again), remove %s.lock and run again",
				filepath.Base(statePath), own, statePath)}
	}
	return own, nil
}

// defaultDSN is statePath's default database, the directory's older
// shared one taken over or refused as ownFile says.
func defaultDSN(statePath string, readOnly, ranBefore bool) (string, error) {
	return ownFile(statePath, DefaultDSN(statePath), filepath.Join(filepath.Dir(statePath), DBName), readOnly, ranBefore,
		func() (string, error) { return sqliteOwner(filepath.Join(filepath.Dir(statePath), DBName)) })
}

// sqliteOwner is the state path a SQLite state database imported first
// ("" for none). Closing it checkpoints its write-ahead log, so the file
// alone holds everything when it is renamed.
func sqliteOwner(dsn string) (string, error) {
	db, err := OpenDB(context.Background(), dsn)
	if err != nil {
		return "", err
	}
	defer db.Close()
	return importedPath(db, "")
}

// Notices is where the store says what it did once (an import): stderr.
var Notices io.Writer = os.Stderr

// Store is the state in its database plus the scan lock. The stages work on
// an in-memory *State; each Update writes, in one transaction, the rows that
// changed since the last. All methods are safe for concurrent use by the
// stages of one scan.
type Store struct {
	path     string
	lock     *stateLock
	readOnly bool // dry run: state is read, never written

	db      *DB   // nil: a state not in a database (OpenMemory; a dry run before any database)
	ownDB   bool  // closed with the store (not a Cache's)
	rows    *rows // the committed shadows, with db
	ctx     context.Context
	logPath string // where the outbox's events go (SetEventLog)

	mu    sync.Mutex
	state *State
	// failure is a lookup the database could not answer: every later
	// write fails with it, so nothing is decided on a guess.
	failure error
	// unsynced are dossier files written this scan and not yet fsynced;
	// the next state write makes them durable first (dossiers.go).
	unsynced map[string]bool
	// referencedAtOpen are the dossier files the state named when it was
	// opened; pruneNeeded says a file may have become unused since.
	referencedAtOpen map[string]bool
	pruneNeeded      bool

	flushMu sync.Mutex // one outbox flush at a time

	// cache is the watcher's (nil: none). gen is the database's generation
	// as this store last read or wrote it; dirty says the state in memory
	// may hold what no commit wrote yet. A clean state at gen is handed to
	// the cache on Close, for the next scan to take instead of reloading.
	cache *Cache
	gen   atomic.Int64
	dirty bool
}

// Open opens the state of path in its default store (DefaultDSN), taking the
// exclusive, non-blocking lock beside path (path + ".lock"); a held lock
// returns ErrLocked. readOnly (dry run) locks nothing and writes nothing.
func Open(path string, readOnly bool) (*Store, error) {
	return OpenDSN(path, "", readOnly)
}

// OpenDSN is Open with the store dsn names ("" for the default): a SQLite
// file or a postgres:// URL.
func OpenDSN(path, dsn string, readOnly bool) (*Store, error) {
	return open(path, dsn, readOnly, nil)
}

// closeRefused closes a store whose open failed with err; a refusal for a
// shared store keeps the lock file, the mark it was refused by.
func (s *Store) closeRefused(err error) {
	var se *SharedStoreError
	if errors.As(err, &se) && s.lock != nil {
		s.lock.keep = true
	}
	s.Close()
}

func open(path, dsn string, readOnly bool, cache *Cache) (*Store, error) {
	s := &Store{path: path, readOnly: readOnly, ctx: context.Background(), unsynced: map[string]bool{}}
	ranBefore := exists(path + ".lock")
	if !readOnly {
		if err := s.takeLock(); err != nil {
			return nil, err
		}
	}
	if dsn == "" {
		// Under the lock: a shared database of this path's is renamed.
		var err error
		if dsn, err = defaultDSN(path, readOnly, ranBefore); err != nil {
			s.closeRefused(err)
			return nil, err
		}
	}
	if readOnly && !IsPostgresURL(dsn) && !exists(sqlitePath(dsn)) {
		return s.fromJSON() // create nothing
	}
	var err error
	if !readOnly && !IsPostgresURL(dsn) {
		if err := createSmallPaged(sqlitePath(dsn)); err != nil {
			s.Close()
			return nil, err
		}
	}
	if s.db, err = cache.openDB(s.ctx, dsn); err != nil {
		s.Close()
		return nil, err
	}
	s.ownDB = cache == nil
	scope, err := deploymentScope(s.db, path, readOnly, ranBefore)
	if err != nil {
		s.closeRefused(err)
		return nil, err
	}
	s.rows = &rows{db: s.db, scope: scope, colls: collections(), meta: map[string][]byte{}, tokens: map[string]string{}}
	if readOnly {
		if imported, err := s.imported(); err != nil || !imported {
			s.Close()
			if err != nil {
				return nil, err
			}
			// Nothing of this deployment's is in the database yet: its
			// state is still the JSON file's.
			s.db, s.rows = nil, nil
			return s.fromJSON()
		}
	} else if err := s.importOnce(); err != nil {
		s.Close()
		return nil, err
	}
	gen, err := s.db.generation(s.ctx)
	if err != nil {
		s.Close()
		return nil, &StoreError{s.db.Name(), fmt.Errorf("reading the state's generation: %w", err)}
	}
	s.gen.Store(gen)
	if !readOnly && cache != nil {
		s.cache = cache
		if k := cache.take(path, scope, gen); k != nil {
			// Nothing was written since this process's last scan wrote it.
			s.state, s.rows, s.referencedAtOpen = k.state, k.rows, k.referenced
			return s, nil
		}
	}
	// Read after the generation: a write in between only makes the next
	// scan read again.
	st := NewState()
	if err := s.rows.load(st, s.fail); err != nil {
		s.Close()
		return nil, &StoreError{s.db.Name(), fmt.Errorf("loading the state: %w", err)}
	}
	s.state = st
	s.pruneNeeded = true // whatever a crash left behind
	s.referencedAtOpen = referencedDossiers(st)
	return s, nil
}

// fromJSON makes s a read-only store of the JSON state at its path (a dry
// run before the first real scan imported it).
func (s *Store) fromJSON() (*Store, error) {
	st, err := loadJSON(s.path)
	if err != nil {
		return nil, err
	}
	s.state = st
	s.referencedAtOpen = referencedDossiers(st)
	return s, nil
}

func (s *Store) takeLock() error {
	if err := os.MkdirAll(filepath.Dir(s.path), 0o755); err != nil {
		return fmt.Errorf("state %s: %w", s.path, err)
	}
	if err := refuseSymlink("state path", s.path, stateFix); err != nil {
		return err
	}
	lock, err := acquireLock(s.path + ".lock")
	if errors.Is(err, syscall.ELOOP) {
		return &SymlinkError{"state lock", s.path + ".lock", lockFix}
	}
	if errors.Is(err, ErrLocked) {
		return ErrLocked
	}
	if err != nil {
		return fmt.Errorf("state lock %s.lock: %w", s.path, err)
	}
	s.lock = lock
	return nil
}

// statePageSize is the page size of a state database SQLite file. A
// decision commits a handful of rows, each on its own page of each B-tree
// it touches, and the write-ahead log takes every such page whole: at 1 KiB
// a filed issue writes a quarter of what SQLite's default 4 KiB pages do
// (growth_test.go), at the cost of one more B-tree level at 100k rows.
const statePageSize = 1024

// createSmallPaged creates the SQLite file at path, when it does not exist
// yet, with statePageSize pages (settable only before the first write),
// owner-only and never through a link; OpenDB then migrates it.
func createSmallPaged(path string) error {
	if exists(path) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return &StoreError{path, err}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil // another process created it first
	}
	if err != nil {
		return &StoreError{path, err}
	}
	f.Close()
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath())
	if err != nil {
		return &StoreError{path, err}
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // the pragma holds for its connection only
	// VACUUM writes the empty database, and with it the page size.
	for _, q := range []string{fmt.Sprintf("PRAGMA page_size = %d", statePageSize), "VACUUM", "PRAGMA journal_mode = WAL"} {
		if _, err := db.Exec(q); err != nil {
			return &StoreError{path, fmt.Errorf("creating the database: %s: %w", q, err)}
		}
	}
	return nil
}

// sqlitePath is the file a SQLite dsn names.
func sqlitePath(dsn string) string {
	for _, p := range []string{"sqlite://", "sqlite:"} {
		if len(dsn) > len(p) && dsn[:len(p)] == p {
			return dsn[len(p):]
		}
	}
	return dsn
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// OpenMemory is a store that never touches disk (tests, replay).
func OpenMemory() *Store {
	return &Store{readOnly: true, state: NewState(), ctx: context.Background()}
}

// Load reads the state of path, everything in it (status, export, tests):
// from its database when there is one beside it, else from the JSON file at
// path (a missing file is an empty state). An empty, blank or malformed
// file is a *CorruptStateError naming it: it is never silently replaced.
func Load(path string) (*State, error) {
	return LoadDSN(path, "")
}

// LoadDSN is Load from the store dsn names ("" for the default).
func LoadDSN(path, dsn string) (*State, error) {
	s, err := open(path, dsn, true, nil)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.Everything()
}

// Everything is the state with its per-key collections read whole (status,
// export, tests): never for a scan.
func (s *Store) Everything() (*State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state.Reported.All()
	s.state.Issues.All()
	if s.failure != nil {
		return nil, s.failure
	}
	return s.state, nil
}

// Exists reports whether path has a state yet: its store's database, or a
// JSON state file to import.
func Exists(path, dsn string) bool {
	if dsn == "" {
		dsn, _ = defaultDSN(path, true, exists(path+".lock"))
	}
	return dsn == "" || IsPostgresURL(dsn) || exists(sqlitePath(dsn)) || exists(path)
}

// Name is the store as messages name it: its database (a PostgreSQL URL
// without its password), else the JSON state file.
func (s *Store) Name() string {
	if s.db != nil {
		return s.db.Name()
	}
	return s.path
}

// Path is the state path.
func (s *Store) Path() string { return s.path }

// ReadOnly reports whether writes are discarded (dry run).
func (s *Store) ReadOnly() bool { return s.readOnly }

// DB is the store's database (nil for a store without one), for what
// shares its transactions (the fleet's claims and budgets).
func (s *Store) DB() *DB { return s.db }

// Scope is this deployment's key for the rows that are its own (” on SQLite).
func (s *Store) Scope() string {
	if s.rows == nil {
		return ""
	}
	return s.rows.scope
}

// SetEventLog names the event log the outbox's events are appended to (""
// drops them: no log to write).
func (s *Store) SetEventLog(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logPath = path
}

func (s *Store) fail(err error) {
	if s.failure == nil {
		s.failure = err
	}
}

// View calls fn with the state under the mutex; fn must not keep references.
func (s *Store) View(fn func(*State)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s.state)
}

// Update applies fn and then commits, in one transaction, every row the
// state changed, so what fn changed is durable when Update returns. If fn
// fails nothing is written, but fn's partial changes stay in memory (the
// next Update writes them): fn should fail before it changes anything.
func (s *Store) Update(fn func(*State) error) error {
	return s.Decide(func(st *State) (Record, error) { return Record{}, fn(st) })
}

// Record is what a decision writes besides the state: its diagnosis.*
// events (to the outbox) and its settlement ledger lines.
type Record struct {
	Events []Event
	Ledger []LedgerEntry
}

// Decide applies fn and commits its state changes, its events and its
// ledger lines in one transaction: a crash leaves all of them or none.
// The events reach the event log at the next FlushEvents.
func (s *Store) Decide(fn func(*State) (Record, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dirty = true
	rec, err := fn(s.state)
	if err != nil {
		return err
	}
	if s.readOnly || s.db == nil {
		return nil
	}
	return s.commit(rec, nil)
}

// commit writes the rows that changed, rec, and extra's statements in one
// transaction. The caller holds s.mu.
func (s *Store) commit(rec Record, extra func(*sql.Tx) error) error {
	if s.failure != nil {
		return s.failure
	}
	// A dossier the state is about to name is durable first.
	if err := s.syncDossiers(); err != nil {
		return err
	}
	var b batch
	if err := s.rows.diff(s.state, &b); err != nil {
		return &StoreError{s.db.Name(), err}
	}
	if err := s.record(rec, &b); err != nil {
		return err
	}
	if len(b.ops) == 0 && extra == nil {
		s.dirty = false
		return nil
	}
	err := s.write(&b, extra)
	if err != nil {
		return err
	}
	for _, done := range b.done {
		done()
	}
	s.dirty = false
	return nil
}

// write runs b and extra's statements in one transaction that moves the
// state's generation on, and notes the generation it left: every write of
// the state goes through here (the commits and the outbox's batches).
func (s *Store) write(b *batch, extra func(*sql.Tx) error) error {
	var gen int64
	err := s.db.Tx(s.ctx, func(tx *sql.Tx) error {
		if err := b.exec(s.db, tx); err != nil {
			return err
		}
		if extra != nil {
			if err := extra(tx); err != nil {
				return err
			}
		}
		var err error
		gen, err = s.db.nextGeneration(s.ctx, tx)
		return err
	})
	if err != nil {
		return &StoreError{s.db.Name(), err}
	}
	for { // the highest: a flush and a commit may race
		old := s.gen.Load()
		if gen <= old || s.gen.CompareAndSwap(old, gen) {
			return nil
		}
	}
}

// Write makes what the state holds in memory durable (changes made with
// Mutate), as an Update that changes nothing more.
func (s *Store) Write() error {
	return s.Update(func(*State) error { return nil })
}

// PruneDossiers removes dossier files no backlog entry refers to. Call it
// only when no dossier is being saved (at the end of a scan): a file saved
// but not yet referenced would look unused. It lists the directory only when
// a file can have become unused since the store was opened.
func (s *Store) PruneDossiers() {
	if s.readOnly {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.pruneNeeded && !lostAny(s.referencedAtOpen, referencedDossiers(s.state)) {
		return
	}
	s.pruneDossiers(s.state)
	s.pruneNeeded = false
	s.referencedAtOpen = referencedDossiers(s.state)
}

// Mutate applies fn in memory only; the next Update makes it durable. For
// changes a crash may lose because the scan that made them is re-run from
// the old cursor.
func (s *Store) Mutate(fn func(*State)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dirty = true
	fn(s.state)
}

// Close releases the lock and the database (unless a Cache keeps it). A
// cache keeps the state when all of it is committed.
func (s *Store) Close() error {
	if s.cache != nil {
		s.mu.Lock()
		if s.failure == nil && !s.dirty && s.db != nil && s.rows != nil && len(s.unsynced) == 0 {
			s.cache.kept = &keptState{path: s.path, scope: s.rows.scope, gen: s.gen.Load(),
				state: s.state, rows: s.rows, referenced: referencedDossiers(s.state)}
		}
		s.cache = nil
		s.mu.Unlock()
	}
	var err error
	if s.db != nil && s.ownDB {
		err = s.db.Close()
	}
	s.db = nil
	if s.lock != nil {
		if lerr := s.lock.release(); err == nil {
			err = lerr
		}
		s.lock = nil
	}
	return err
}

// Cache keeps a long-running process's (a watcher's) database open between
// its scans, so opening it and checking its schema happen once, and the
// state its last scan left, all of it committed: the next scan takes it
// instead of reading the state again, unless the database's generation
// moved (another writer — a cron run, `retry`, `forget` — changed it). One
// store at a time may use a Cache.
type Cache struct {
	// DSN is the store ("" for the default beside the state path).
	DSN  string
	dsn  string
	db   *DB
	kept *keptState
}

// keptState is a closed store's state as of generation gen.
type keptState struct {
	path, scope string
	gen         int64
	state       *State
	rows        *rows
	referenced  map[string]bool
}

// take hands over the kept state if it is path's and scope's at gen; it is
// kept no longer either way (a scan that fails must not leave it behind).
func (c *Cache) take(path, scope string, gen int64) *keptState {
	k := c.kept
	c.kept = nil
	if k == nil || k.path != path || k.scope != scope || k.gen != gen || gen < 0 {
		return nil
	}
	return k
}

// Open is store.OpenDSN for a writable store on the cache's database.
func (c *Cache) Open(path string) (*Store, error) {
	return open(path, c.DSN, false, c)
}

func (c *Cache) openDB(ctx context.Context, dsn string) (*DB, error) {
	if c == nil {
		return OpenDB(ctx, dsn)
	}
	if c.db != nil && c.dsn == dsn {
		return c.db, nil
	}
	c.Close()
	c.kept = nil
	db, err := OpenDB(ctx, dsn)
	if err != nil {
		return nil, err
	}
	c.db, c.dsn = db, dsn
	return db, nil
}

// Close closes the cached database.
func (c *Cache) Close() error {
	if c == nil || c.db == nil {
		return nil
	}
	err := c.db.Close()
	c.db = nil
	return err
}

// Check is doctor's look at the store: the database's schema version, and
// a write this user may make (rolled back: nothing changes).
func (s *Store) Check(ctx context.Context) (schema int64, err error) {
	if s.db == nil {
		return 0, errors.New("no database is open")
	}
	if err := s.db.SQL.QueryRowContext(ctx, `SELECT COALESCE(MAX(version_id), 0) FROM goose_db_version`).Scan(&schema); err != nil {
		return 0, &StoreError{s.db.Name(), fmt.Errorf("reading the schema version: %w", err)}
	}
	errRollback := errors.New("rolled back")
	err = s.db.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.db.Rebind(`DELETE FROM imports WHERE scope = ? AND kind = 'doctor'`), s.Scope()); err != nil {
			return err
		}
		return errRollback
	})
	if err != nil && !errors.Is(err, errRollback) {
		return schema, &StoreError{s.db.Name(), fmt.Errorf("a write: %w", err)}
	}
	return schema, nil
}
