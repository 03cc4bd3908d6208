package store

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sync/errgroup"
)

// Deferred defects keep their scrubbed dossier in a file of its own beside
// the state, so the state a scan loads and rewrites stays small however long
// the backlog grows.
//
// A file is named by its fingerprint and its content, and is never
// overwritten in place: a crash cannot leave the durable state naming a torn
// file. A dossier whose content did not change is not written again; a new
// one is written without an fsync, and the next state write (which is what
// makes the state name it) fsyncs every such file first, concurrently, and
// the directory once. Files no state names any more are pruned after it.

// DossierDir is where the backlog's dossiers live, beside the state file.
func (s *Store) DossierDir() string {
	return strings.TrimSuffix(s.path, filepath.Ext(s.path)) + ".dossiers"
}

// dossierName is <hash(fp)>-<hash(text)>.md. Older versions named a file
// <hash(fp)>.md and overwrote it; states naming one still load it.
func dossierName(fp, text string) string {
	fpSum, textSum := sha256.Sum256([]byte(fp)), sha256.Sum256([]byte(text))
	return hex.EncodeToString(fpSum[:8]) + "-" + hex.EncodeToString(textSum[:8]) + ".md"
}

// SaveDossier saves fp's dossier and returns its file name; a read-only
// store (dry run) writes nothing and returns "". The file is durable by the
// time a state naming it is.
func (s *Store) SaveDossier(fp, text string) (string, error) {
	if s.readOnly {
		return "", nil
	}
	name := dossierName(fp, text)
	path := filepath.Join(s.DossierDir(), name)
	s.mu.Lock()
	// Named by the state this store opened (so durable), or written by
	// this scan (so synced before any state names it).
	known := s.state.Deferred[fp].DossierFile == name || s.unsynced[name]
	s.mu.Unlock()
	if known {
		if _, err := os.Stat(path); err == nil {
			return name, nil
		}
		// Removed behind our back: write it again.
	}
	if err := os.MkdirAll(s.DossierDir(), 0o700); err != nil {
		return "", fmt.Errorf("dossiers %s: %w", s.DossierDir(), err)
	}
	if err := refuseSymlink("dossier directory", s.DossierDir(), dossierFix); err != nil {
		return "", err
	}
	// A file of that name no state refers to is a crash's leftover, maybe
	// torn: it is rewritten, not trusted.
	f, err := openPrivate("dossier", path, dossierFix, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return "", err
	}
	_, err = f.Write([]byte(text))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("dossier %s: %w", path, err)
	}
	s.mu.Lock()
	s.unsynced[name] = true
	s.pruneNeeded = true // the defect's previous file, if any, is now unused
	s.mu.Unlock()
	return name, nil
}

// syncDossiers makes the dossier files written since the last state write
// durable: each file and the directory, concurrently. The caller holds s.mu.
func (s *Store) syncDossiers() error {
	if len(s.unsynced) == 0 {
		return nil
	}
	dir := s.DossierDir()
	var g errgroup.Group
	g.SetLimit(16)
	g.Go(func() error { return syncDir(dir) })
	for name := range s.unsynced {
		g.Go(func() error { return syncFile(filepath.Join(dir, name)) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	clear(s.unsynced)
	return nil
}

func syncFile(path string) error {
	f, err := openPrivate("dossier", path, dossierFix, os.O_RDONLY)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("dossier %s: fsync: %w", path, err)
	}
	return nil
}

// LoadDossier reads a dossier saved by SaveDossier.
func (s *Store) LoadDossier(name string) (string, error) {
	if name == "" || strings.ContainsAny(name, `/\`) {
		return "", fmt.Errorf("dossier file name %q is not one this tool wrote", name)
	}
	// Never read through a link: what it points at would be filed publicly.
	if err := refuseSymlink("dossier directory", s.DossierDir(), dossierFix); err != nil {
		return "", err
	}
	f, err := openPrivate("dossier", filepath.Join(s.DossierDir(), name), dossierFix, os.O_RDONLY)
	if err != nil {
		return "", fmt.Errorf("dossier of a deferred defect: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return "", fmt.Errorf("dossier of a deferred defect: %w", err)
	}
	return string(b), nil
}

// referencedDossiers are the dossier files st names.
func referencedDossiers(st *State) map[string]bool {
	used := make(map[string]bool, len(st.Deferred))
	for _, d := range st.Deferred {
		if d.DossierFile != "" {
			used[d.DossierFile] = true
		}
	}
	for _, a := range st.Abandoned {
		if a.Pending != nil && a.Pending.DossierFile != "" {
			used[a.Pending.DossierFile] = true
		}
	}
	return used
}

// lostAny reports whether before holds a name after does not.
func lostAny(before, after map[string]bool) bool {
	for name := range before {
		if !after[name] {
			return true
		}
	}
	return false
}

// pruneDossiers removes dossier files no backlog entry refers to any more
// (filed, abandoned, settled, superseded), whatever crash left them behind.
func (s *Store) pruneDossiers(st *State) {
	if refuseSymlink("dossier directory", s.DossierDir(), dossierFix) != nil {
		return // never remove files from wherever a link points
	}
	entries, err := os.ReadDir(s.DossierDir())
	if err != nil {
		return // none yet; or unreadable, and then nothing to remove either
	}
	used := referencedDossiers(st)
	for _, e := range entries {
		if !used[e.Name()] && strings.HasSuffix(e.Name(), ".md") && !s.unsynced[e.Name()] {
			os.Remove(filepath.Join(s.DossierDir(), e.Name()))
		}
	}
}
