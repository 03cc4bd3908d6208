package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// Every file this tool writes (state, its temp file, lock, dossiers, ledger)
// holds scrubbed but still private text, so it is created 0600 and never
// through a symbolic link: a link planted at one of these paths would make
// the tool write (or read and then publish) a file it does not own. A link
// is refused with an error naming it, never followed and never replaced.
// The event log is the service's and is opened as the service opens it
// (store.AppendEvents).

// SymlinkError says a path this tool writes is a symbolic link.
type SymlinkError struct {
	What, Path, Fix string
}

func (e *SymlinkError) Error() string {
	return fmt.Sprintf("%s %s is a symbolic link; %s", e.What, e.Path, e.Fix)
}

// What each of the tool's files is called in an error, and how to fix a
// link at its path.
const (
	stateFix   = "point --state at the real file"
	lockFix    = "remove it: the lock file is this tool's own"
	ledgerFix  = "remove it or point --state elsewhere: the ledger is this tool's own, beside the state"
	dossierFix = "remove it: the dossiers are this tool's own, beside the state"
)

// refuseSymlink returns a SymlinkError when path is a symbolic link. A
// missing path is fine: it will be created without following anything.
func refuseSymlink(what, path, fix string) error {
	fi, err := os.Lstat(path)
	if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return &SymlinkError{what, path, fix}
	}
	return nil
}

// openPrivate opens path with flag without following a symbolic link at its
// last component; a file it writes is (made) 0600, also one an older version
// created with a wider mode.
func openPrivate(what, path, fix string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW, 0o600)
	if errors.Is(err, syscall.ELOOP) {
		return nil, &SymlinkError{what, path, fix}
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	if flag&(os.O_WRONLY|os.O_RDWR) != 0 {
		if fi, err := f.Stat(); err == nil && fi.Mode().Perm() != 0o600 {
			if err := f.Chmod(0o600); err != nil {
				f.Close()
				return nil, fmt.Errorf("%s %s: %w", what, path, err)
			}
		}
	}
	return f, nil
}
