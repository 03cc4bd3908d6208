package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The names a deployment may give its state: nested, with spaces, non-ASCII.
var stateNames = []string{"self-diagnosis.json", "state dir/the loop.json", "éclair/état.json", ".the-loop/self-diagnosis.json"}

func statePathIn(t *testing.T, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func modeOf(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

func TestEveryFileTheStoreWritesIs0600(t *testing.T) {
	old := syscall.Umask(0) // the widest umask: modes are ours, not the umask's
	defer syscall.Umask(old)
	for _, name := range stateNames {
		path := statePathIn(t, name)
		s, err := Open(path, false)
		if err != nil {
			t.Fatal(err)
		}
		file, err := s.SaveDossier("v2:abc", "# dossier\n")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Update(func(st *State) error { st.Attempts["x"]++; return nil }); err != nil {
			t.Fatal(err)
		}
		// The database and its write-ahead log (there while it is open)
		// hold excerpts of logs.
		if m := modeOf(t, DefaultDSN(path)+"-wal"); m != 0o600 {
			t.Errorf("write-ahead log: mode %v, want -rw-------", m)
		}
		// The lock, removed on release, holds its holder's PID meanwhile.
		if m := modeOf(t, path+".lock"); m != 0o600 {
			t.Errorf("lock: mode %v, want -rw-------", m)
		}
		s.Close()
		for _, p := range []string{DefaultDSN(path), filepath.Join(s.DossierDir(), file)} {
			if m := modeOf(t, p); m != 0o600 {
				t.Errorf("%s: mode %v, want -rw-------", p, m)
			}
		}
	}
}

// A link planted at one of the tool's paths is refused with an error naming
// it; the link and what it points at are left exactly as they were.
func TestSymlinksAtTheStoresPathsAreRefusedAndLeftAlone(t *testing.T) {
	for _, name := range stateNames {
		for _, which := range []string{"state", "lock", "ledger"} {
			t.Run(which+" "+name, func(t *testing.T) {
				path := statePathIn(t, name)
				target := filepath.Join(t.TempDir(), "precious.txt")
				const precious = "someone else's file\n"
				if err := os.WriteFile(target, []byte(precious), 0o644); err != nil {
					t.Fatal(err)
				}
				link := map[string]string{"state": path, "lock": path + ".lock", "ledger": LedgerPath(path)}[which]
				if err := os.Symlink(target, link); err != nil {
					t.Fatal(err)
				}
				// The ledger is read at the first open, to import it.
				s, err := Open(path, false)
				if err == nil {
					s.Close()
				}
				var se *SymlinkError
				if !errors.As(err, &se) || !strings.Contains(err.Error(), link+" is a symbolic link") {
					t.Fatalf("error %v, want one saying %s is a symbolic link", err, link)
				}
				if which == "state" && !strings.Contains(err.Error(), "point --state at the real file") {
					t.Errorf("error %q does not say how to fix it", err)
				}
				if b, _ := os.ReadFile(target); string(b) != precious || modeOf(t, target) != 0o644 {
					t.Errorf("the link's target was changed: %q %v", b, modeOf(t, target))
				}
				if modeOf(t, link)&os.ModeSymlink == 0 {
					t.Error("the link was replaced")
				}
			})
		}
	}
}

// A link that appears at the state path after Open is left alone: the
// state is written to the database, never to the state path.
func TestAStateWriteLeavesALinkPlantedAfterOpenAlone(t *testing.T) {
	path := statePathIn(t, "self-diagnosis.json")
	s, err := Open(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	target := filepath.Join(t.TempDir(), "elsewhere.json")
	os.WriteFile(target, []byte("{}"), 0o644)
	os.Remove(path)
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(func(st *State) error { st.Attempts["x"]++; return nil }); err != nil {
		t.Fatalf("Update: %v", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "{}" || modeOf(t, path)&os.ModeSymlink == 0 {
		t.Error("the link or its target was changed")
	}
}

func TestADossierIsNeverReadOrWrittenThroughALink(t *testing.T) {
	path := statePathIn(t, "self-diagnosis.json")
	s, err := Open(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	name, err := s.SaveDossier("v2:abc", "# dossier\n")
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "secret.txt")
	os.WriteFile(secret, []byte("PRIVATE"), 0o600)
	file := filepath.Join(s.DossierDir(), name)
	os.Remove(file)
	os.Symlink(secret, file)
	if text, err := s.LoadDossier(name); err == nil || strings.Contains(text, "PRIVATE") {
		t.Fatalf("LoadDossier read through a link: %q, %v", text, err)
	}
	other := dossierName("v2:def", "# other\n")
	os.Symlink(secret, filepath.Join(s.DossierDir(), other))
	if _, err := s.SaveDossier("v2:def", "# other\n"); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("SaveDossier wrote through a link: %v", err)
	}
	if b, _ := os.ReadFile(secret); string(b) != "PRIVATE" {
		t.Error("the link's target was overwritten")
	}
}

func TestLoadRefusesASymlinkedState(t *testing.T) {
	path := statePathIn(t, "self-diagnosis.json")
	target := filepath.Join(t.TempDir(), "real.json")
	os.WriteFile(target, []byte(`{"attempts":{"x":1}}`), 0o600)
	os.Symlink(target, path)
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path+" is a symbolic link; point --state at the real file") {
		t.Fatalf("Load = %v", err)
	}
}
