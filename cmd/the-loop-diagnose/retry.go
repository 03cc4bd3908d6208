package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/the-loop/the-loop-diagnose/store"
)

// cmdRetry brings abandoned defects back: each returns to the backlog with
// the dossier (and finding) it had, its failures forgotten, so the next
// scan diagnoses and files it without its records.
func cmdRetry(args []string, io stdio) error {
	fs := newFlagSet("retry", io)
	var c commonFlags
	c.registerConfig(fs)
	all := fs.Bool("all-abandoned", false, "bring back every abandoned defect")
	fps, err := parseFingerprints(fs, args)
	if err != nil {
		return err
	}
	if *all == (len(fps) > 0) {
		return usageErr("retry: give fingerprints (as status lists them) or --all-abandoned, not both")
	}
	var back, unknown []string
	saved := map[string]bool{}
	err = editState(&c, "retry", func(s *store.State) {
		if *all {
			fps = store.Fingerprints(s.Abandoned)
		}
		for _, fp := range fps {
			saved[fp] = s.Abandoned[fp].Pending != nil
			if s.Retry(fp) {
				back = append(back, fp)
			} else {
				unknown = append(unknown, fp)
			}
		}
	})
	if err != nil {
		return err
	}
	for _, fp := range back {
		if saved[fp] {
			fmt.Fprintf(io.out, "retrying %s: back in the backlog, the next scan files it\n", fp)
		} else {
			fmt.Fprintf(io.out, "retrying %s: no dossier was kept (abandoned by an older version): filed when it occurs again\n", fp)
		}
	}
	if len(back) == 0 && *all {
		fmt.Fprintln(io.out, "nothing is abandoned")
	}
	if len(unknown) > 0 {
		return &exitError{code: exitFailed, msg: "not abandoned (see status): " + strings.Join(unknown, ", ")}
	}
	return nil
}

// cmdForget forgets defects (store.State.Forget): the next scan treats each as
// new. It says what went, and what GitHub still holds of it.
func cmdForget(args []string, io stdio) error {
	fs := newFlagSet("forget", io)
	var c commonFlags
	c.registerConfig(fs)
	fps, err := parseFingerprints(fs, args)
	if err != nil {
		return err
	}
	if len(fps) == 0 {
		return usageErr("forget: give the fingerprints to forget (as status lists them)")
	}
	type forgotten struct {
		fp, canonical string
		removed       []string
		issue         store.IssueRef
	}
	var done []forgotten
	var unknown []string
	err = editState(&c, "forget", func(s *store.State) {
		for _, fp := range fps {
			canonical, removed := s.Forget(fp)
			if len(removed) == 0 {
				unknown = append(unknown, fp)
				continue
			}
			done = append(done, forgotten{fp, canonical, removed, s.Issues.At(canonical)})
		}
	})
	if err != nil {
		return err
	}
	for _, f := range done {
		name := f.canonical
		if f.fp != f.canonical {
			name = fmt.Sprintf("%s (the-loop's %s)", f.canonical, f.fp)
		}
		fmt.Fprintf(io.out, "forgot %s: removed from %s; the next scan treats it as new\n", name, strings.Join(f.removed, ", "))
		switch is := f.issue; {
		case is.Number == 0:
		case is.State == "closed" && is.StateReason == "not_planned":
			fmt.Fprintf(io.out, "  its issue #%d is closed as not planned: the next scan finds it and dismisses the defect again (reopen the issue to have it counted)\n", is.Number)
		default:
			fmt.Fprintf(io.out, "  its issue #%d stays on GitHub: the next scan finds it by its marker and counts the defect there, filing nothing twice\n", is.Number)
		}
	}
	if len(unknown) > 0 {
		return &exitError{code: exitFailed, msg: "not in the state (see status): " + strings.Join(unknown, ", ")}
	}
	return nil
}

// parseFingerprints parses a command's flags and returns its arguments,
// the fingerprints it acts on.
func parseFingerprints(fs *pflag.FlagSet, args []string) ([]string, error) {
	if err := parseArgs(fs, args); err != nil {
		return nil, err
	}
	return fs.Args(), nil
}

// editState changes the state under its lock, durably, for a command that
// runs beside the scans (retry, forget); a scan in progress holds the lock.
func editState(c *commonFlags, what string, fn func(*store.State)) error {
	cfg, _, err := c.resolve()
	if err != nil {
		return err
	}
	st, err := store.OpenDSN(cfg.StatePath, cfg.Store, false)
	if errors.Is(err, store.ErrLocked) {
		return fmt.Errorf("%s: a scan holds %s.lock%s: try again when it ends", what, cfg.StatePath, store.LockHolderNote(cfg.StatePath))
	}
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Update(func(s *store.State) error { fn(s); return nil }); err != nil {
		return err
	}
	st.PruneDossiers() // a forgotten backlog entry's dossier file
	return nil
}
