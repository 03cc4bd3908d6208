package store

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Deferred defects keep their scrubbed dossier in a file of its own beside
// the state, written once when the defect is deferred, so the state a scan
// loads and rewrites stays small however long the backlog grows.

// DossierDir is where the backlog's dossiers live, beside the state file.
func (s *Store) DossierDir() string {
	return strings.TrimSuffix(s.path, filepath.Ext(s.path)) + ".dossiers"
}

func dossierName(fp string) string {
	sum := sha256.Sum256([]byte(fp))
	return hex.EncodeToString(sum[:8]) + ".md"
}

// SaveDossier writes fp's dossier atomically and returns its file name; a
// read-only store (dry run) writes nothing and returns "".
func (s *Store) SaveDossier(fp, text string) (string, error) {
	if s.readOnly {
		return "", nil
	}
	if err := os.MkdirAll(s.DossierDir(), 0o700); err != nil {
		return "", fmt.Errorf("dossiers %s: %w", s.DossierDir(), err)
	}
	name := dossierName(fp)
	if err := writeFileAtomic(filepath.Join(s.DossierDir(), name), []byte(text)); err != nil {
		return "", err
	}
	return name, nil
}

// LoadDossier reads a dossier saved by SaveDossier.
func (s *Store) LoadDossier(name string) (string, error) {
	if name == "" || strings.ContainsAny(name, `/\`) {
		return "", fmt.Errorf("dossier file name %q is not one this tool wrote", name)
	}
	b, err := os.ReadFile(filepath.Join(s.DossierDir(), name))
	if err != nil {
		return "", fmt.Errorf("dossier of a deferred defect: %w", err)
	}
	return string(b), nil
}

// pruneDossiers removes dossier files no backlog entry refers to any more
// (filed, abandoned, settled), whatever crash left them behind.
func (s *Store) pruneDossiers(st *State) {
	entries, err := os.ReadDir(s.DossierDir())
	if err != nil {
		return
	}
	used := map[string]bool{}
	for _, d := range st.Deferred {
		used[d.DossierFile] = true
	}
	for _, e := range entries {
		if !used[e.Name()] && strings.HasSuffix(e.Name(), ".md") {
			os.Remove(filepath.Join(s.DossierDir(), e.Name()))
		}
	}
}
