package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/the-loop/the-loop-diagnose/stages"
	"github.com/the-loop/the-loop-diagnose/store"
)

// cmdRetry brings abandoned defects back: each returns to the backlog with
// the dossier (and finding) it had, its failures forgotten, so the next
// scan diagnoses and files it without its records.
func cmdRetry(args []string, io stdio) error {
	fs := newFlagSet("retry", io)
	var c commonFlags
	c.register(fs)
	all := fs.Bool("all-abandoned", false, "bring back every abandoned defect")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return usageErr("retry: %v", err)
	}
	fps := fs.Args()
	if *all == (len(fps) > 0) {
		return usageErr("retry: give fingerprints (as status lists them) or --all-abandoned, not both")
	}
	cfg, _, err := c.resolve()
	if err != nil {
		return err
	}
	st, err := store.OpenDSN(cfg.StatePath, cfg.Store, false)
	if errors.Is(err, store.ErrLocked) {
		return fmt.Errorf("retry: a scan holds %s.lock: try again when it ends", cfg.StatePath)
	}
	if err != nil {
		return err
	}
	defer st.Close()
	var back, unknown []string
	saved := map[string]bool{}
	err = st.Update(func(s *store.State) error {
		if *all {
			fps = store.Fingerprints(s.Abandoned)
		}
		for _, fp := range fps {
			saved[fp] = s.Abandoned[fp].Pending != nil
			if stages.Retry(s, fp) {
				back = append(back, fp)
			} else {
				unknown = append(unknown, fp)
			}
		}
		return nil
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
