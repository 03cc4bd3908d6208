package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ScopeFile keeps, beside the-loop's default state path, the key of its own
// rows in a shared (PostgreSQL) store: random, generated once. Any other
// state path's is named after it (a.json: a.scope).
const ScopeFile = "the-loop-diagnose.scope"

// deploymentScope is the key of this deployment's own rows: ” in its own
// SQLite file, else the random key of ScopeFile (created unless readOnly).
func deploymentScope(db *DB, statePath string, readOnly, ranBefore bool) (string, error) {
	if db.Dialect != DialectPostgres {
		return "", nil
	}
	// One key per state path, named after it like its database; the
	// directory's older shared key is taken over or refused (ownFile).
	shared := filepath.Join(filepath.Dir(statePath), ScopeFile)
	path, err := ownFile(statePath, filepath.Join(filepath.Dir(statePath), ownName(statePath, ".scope", ScopeFile)), shared, readOnly, ranBefore,
		func() (string, error) {
			key := readScope(shared)
			if key == "" {
				return "", nil
			}
			return importedPath(db, key)
		})
	if err != nil {
		return "", err
	}
	if key := readScope(path); key != "" {
		return key, nil
	}
	if readOnly {
		return "", nil // shared rows only
	}
	var r [12]byte
	_, _ = rand.Read(r[:])
	key := hex.EncodeToString(r[:])
	if err := writeFileAtomic(path, []byte(key+"\n")); err != nil {
		return "", fmt.Errorf("deployment key: %w", err)
	}
	return key, nil
}

// readScope reads a deployment key file ("" when there is none).
func readScope(path string) string {
	f, err := openPrivate("deployment key", path, stateFix, os.O_RDONLY)
	if err != nil {
		return "" // none yet
	}
	defer f.Close()
	var b [64]byte
	n, _ := f.Read(b[:])
	return strings.TrimSpace(string(b[:n]))
}

// importedPath is the state path the deployment of scope imported first
// ("" for none).
func importedPath(db *DB, scope string) (string, error) {
	var path sql.NullString
	err := db.SQL.QueryRowContext(context.Background(), db.Rebind(`SELECT path FROM imports WHERE scope = ? AND kind = 'state' ORDER BY at_ms LIMIT 1`), scope).Scan(&path)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", &StoreError{db.Name(), fmt.Errorf("reading the imports: %w", err)}
	}
	return path.String, nil
}

// importOnce imports, on the first open of a store for this deployment,
// the JSON state at the state path (the-loop's self-diagnosis.json, or this
// tool's state of before its database) and the old ledger file, in one
// transaction, and records that it did: nothing is imported twice. The
// files are only read, never changed.
func (s *Store) importOnce() error {
	if done, err := s.imported(); err != nil || done {
		return err
	}
	st, raw, err := readJSON(s.path)
	if err != nil {
		return err
	}
	ledgerPath := LedgerPath(s.path)
	ledger, ledgerRaw, skipped, err := readLedgerFile(ledgerPath)
	if err != nil {
		return err
	}
	// Fresh shadows: every entry of the file is a row to insert.
	fresh := &rows{db: s.db, scope: s.rows.scope, colls: collections(), meta: map[string][]byte{}, tokens: map[string]string{}}
	var b batch
	if err := fresh.diff(st, &b); err != nil {
		return &StoreError{s.db.Name(), fmt.Errorf("importing %s: %w", s.path, err)}
	}
	entries := len(b.ops)
	now := time.Now()
	for i, l := range ledger {
		if err := addLedger(&b, s.rows.scope, fmt.Sprintf("import-%s-%08d", digest(ledgerRaw)[:16], i), l); err != nil {
			return err
		}
	}
	b.add(`INSERT INTO imports (scope, kind, path, sha256, at_ms, entries) VALUES (?, 'state', ?, ?, ?, ?)`,
		s.rows.scope, s.path, digest(raw), now.UnixMilli(), entries)
	b.add(`INSERT INTO imports (scope, kind, path, sha256, at_ms, entries) VALUES (?, 'ledger', ?, ?, ?, ?)`,
		s.rows.scope, ledgerPath, digest(ledgerRaw), now.UnixMilli(), len(ledger))
	if err := s.execBatch(&b); err != nil {
		return err
	}
	if raw != nil {
		fmt.Fprintf(Notices, "the-loop-diagnose: imported the state %s (sha256 %s; %d entries) into the store %s; the file is left as it was and no longer read (`the-loop-diagnose state export --format the-loop` writes one back)\n",
			s.path, digest(raw)[:12], entries, s.db.Name())
	}
	if ledgerRaw != nil {
		msg := fmt.Sprintf("the-loop-diagnose: imported the ledger %s (%d settlements) into the store; the file is left as it was", ledgerPath, len(ledger))
		if skipped > 0 {
			msg += fmt.Sprintf(" (%d lines that were not ledger JSON skipped)", skipped)
		}
		fmt.Fprintln(Notices, msg)
	}
	return nil
}

// imported reports whether this deployment's state was imported (or began
// in the database: the import of no file is recorded too).
func (s *Store) imported() (bool, error) {
	var n int
	err := s.db.SQL.QueryRowContext(s.ctx, s.db.Rebind(`SELECT COUNT(*) FROM imports WHERE scope = ? AND kind = 'state'`), s.rows.scope).Scan(&n)
	if err != nil {
		return false, &StoreError{s.db.Name(), fmt.Errorf("reading the imports: %w", err)}
	}
	return n > 0, nil
}

// digest is a file's sha256 in hex, ” for no file.
func digest(b []byte) string {
	if b == nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// readLedgerFile reads an old diagnoses.jsonl (none: nil). A line that is
// not a ledger entry (a torn last line) is skipped and counted.
func readLedgerFile(path string) (entries []LedgerEntry, raw []byte, skipped int, err error) {
	f, err := openPrivate("ledger", path, ledgerFix, os.O_RDONLY)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, 0, nil
	}
	if err != nil {
		return nil, nil, 0, err
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(f); err != nil {
		return nil, nil, 0, fmt.Errorf("ledger %s: %w", path, err)
	}
	raw = buf.Bytes()
	entries, skipped = parseLedger(raw)
	return entries, raw, skipped, nil
}

// parseLedger reads diagnoses.jsonl's lines. A line that is not a ledger
// entry (a torn last line, a line too long to be one) is skipped and
// counted, never fatal: the ledger is history, not state.
func parseLedger(raw []byte) (entries []LedgerEntry, skipped int) {
	for len(raw) > 0 {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		if line = bytes.TrimSpace(line); len(line) == 0 {
			continue
		}
		var e LedgerEntry
		if json.Unmarshal(line, &e) != nil || e.Fingerprint == "" {
			skipped++
			continue
		}
		entries = append(entries, e)
	}
	return entries, skipped
}

// Ledger reads the ledger's settlements at or after since, oldest first.
func (s *Store) Ledger(since time.Time) ([]LedgerEntry, error) {
	if s.db == nil {
		return nil, nil
	}
	q, err := s.db.SQL.QueryContext(s.ctx, s.db.Rebind(`SELECT at_ms, fingerprint, verdict, reason, evidence, tool_version FROM ledger
		WHERE scope = ? AND at_ms >= ? ORDER BY at_ms, id`), s.rows.scope, ms(since))
	if err != nil {
		return nil, &StoreError{s.db.Name(), err}
	}
	defer q.Close()
	var out []LedgerEntry
	for q.Next() {
		var e LedgerEntry
		var at int64
		var ev sql.NullString
		if err := q.Scan(&at, &e.Fingerprint, &e.Verdict, &e.Reason, &ev, &e.ToolVersion); err != nil {
			return nil, &StoreError{s.db.Name(), err}
		}
		e.Time = fromMS(at)
		if ev.Valid {
			_ = json.Unmarshal([]byte(ev.String), &e.Evidence)
		}
		out = append(out, e)
	}
	return out, q.Err()
}
