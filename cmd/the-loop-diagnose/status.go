package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/stages/agent"
	"github.com/the-loop/the-loop-diagnose/stages/agent/sandbox"
	"github.com/the-loop/the-loop-diagnose/stages/budget"
	"github.com/the-loop/the-loop-diagnose/store"
)

// cmdStatus prints what the state says: reported issues, the backlog,
// settled and abandoned defects, retry counts and the daily window's use.
func cmdStatus(args []string, io stdio) error {
	fs := newFlagSet("status", io)
	var c commonFlags
	c.registerConfig(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, now, err := c.resolve()
	if err != nil {
		return err
	}
	exists := store.Exists(cfg.StatePath, cfg.Store)
	db, err := store.OpenDSN(cfg.StatePath, cfg.Store, true)
	if err != nil {
		return err
	}
	defer db.Close()
	st, err := db.Everything()
	if err != nil {
		return err
	}
	t := now()
	ledger, err := db.Ledger(t.Add(-90 * 24 * time.Hour))
	if err != nil {
		return err
	}
	pruned, err := db.PrunedBacklog()
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(io.out)
		enc.SetIndent("", "  ")
		return enc.Encode(statusReport(cfg, st, exists, t, statusExtras{db.Name(), ledger, pruned}))
	}
	u := cfg.Limits().Usage(st, t)
	w := io.out
	if exists {
		fmt.Fprintf(w, "state %s (store %s)\n", cfg.StatePath, db.Name())
	} else {
		fmt.Fprintf(w, "state %s does not exist yet: no scan has run with it (nothing is reported, deferred or abandoned)\n", cfg.StatePath)
	}
	// First: someone may be trying to make a defect look filed or dismissed.
	for _, f := range slices.Backward(st.ForeignMarkers) {
		fmt.Fprintf(w, "warning: issue #%d by @%s carries the marker of %s; ignored (not a trusted author)\n", f.Number, f.Login, f.Fingerprint)
	}
	fmt.Fprintf(w, "issues filed in the last 24 h: %d of %d; agent diagnoses: %d of %d\n", u.Issues, u.MaxIssuesPerDay, u.Diagnoses, u.MaxDiagnosesPerDay)
	fmt.Fprintf(w, "agent source: %s\n", resolveAgentSource(cfg))
	if _, detail := sandbox.Available(); agent.Confined(cfg.Harness) {
		fmt.Fprintf(w, "agent confinement by the kernel: %s\n", detail)
	}
	if day, all := u.Cost, st.CostTotal; all.Runs > 0 {
		capped := ""
		if u.MaxAgentCostPerDay > 0 {
			capped = fmt.Sprintf(" of $%.2f", u.MaxAgentCostPerDay)
		}
		fmt.Fprintf(w, "agent cost in the last 24 h: $%.4f%s (%d runs, %d tokens in, %d out); in all: $%.4f (%d runs)\n",
			day.USD, capped, day.Runs, day.InputTokens, day.OutputTokens, all.USD, all.Runs)
	}
	for _, what := range store.Fingerprints(st.Outages) {
		o := st.Outages[what]
		fmt.Fprintf(w, "%s (since %s, %d scans, the last at %s): its defects wait, nothing is charged\n",
			(&pipeline.Wait{For: what, Reason: o.Reason}).String(), o.Since.Format(time.RFC3339), o.Scans, o.Last.Format(time.RFC3339))
	}
	if t.Before(st.GitHubResume) {
		fmt.Fprintf(w, "GitHub rate limit: it asked to be left alone until %s; scans before then file nothing\n", st.GitHubResume.Format(time.RFC3339))
	}
	fmt.Fprintf(w, "\nreported (%d):\n", st.Reported.Len())
	for _, fp := range store.Fingerprints(st.Reported.All()) {
		r := st.Reported.At(fp)
		fmt.Fprintf(w, "  %s  %s  %s\n", fp, orDash(r.URL), r.Title)
	}
	fmt.Fprintf(w, "\ndeferred (%d):\n", len(st.Deferred))
	for _, fp := range store.Fingerprints(st.Deferred) {
		d := st.Deferred[fp]
		diagnosed := "not yet diagnosed"
		if len(d.Finding) > 0 {
			diagnosed = "diagnosed"
		}
		fmt.Fprintf(w, "  %s  %s ×%d since %s, %s, attempts %d\n", fp, d.Event, d.Count, d.Since.Format(time.RFC3339), diagnosed, st.Attempts[fp])
		if why := cmp.Or(d.Waiting, d.Reason); why != "" {
			fmt.Fprintf(w, "      %s\n", why)
		}
	}
	for _, b := range pruned {
		fmt.Fprintf(w, "  (and %d older %s defects, %d occurrences %s to %s, left the backlog after waiting %d days unseen)\n",
			b.Defects, b.Event, b.Occurrences, b.First.Format(time.RFC3339), b.Last.Format(time.RFC3339), cfg.Retention.BacklogDays)
	}
	fmt.Fprintf(w, "\nsettled by the machine, not filed (%d; %d settlements in the ledger of the last 90 days, status --json shows them):\n", len(st.Settled), len(ledger))
	for _, fp := range store.Fingerprints(st.Settled) {
		s := st.Settled[fp]
		state := "until " + s.Until.Format(time.RFC3339)
		if !t.Before(s.Until) {
			state = "expired: re-examined next time it occurs"
		}
		fmt.Fprintf(w, "  %s  %s: %s (%s)\n", fp, s.Verdict, s.Reason, state)
	}
	fmt.Fprintf(w, "\ndismissed by a maintainer (%d):\n", len(st.Dismissed))
	for _, fp := range store.Fingerprints(st.Dismissed) {
		d := st.Dismissed[fp]
		fmt.Fprintf(w, "  %s  %s  %s\n", fp, d.Reason, orDash(d.URL))
	}
	if len(st.Attempts) > 0 {
		fmt.Fprintf(w, "\nretry counts:\n")
		for _, fp := range store.Fingerprints(st.Attempts) {
			fmt.Fprintf(w, "  %s  %d of %d  %s\n", fp, st.Attempts[fp], cfg.MaxRetries, st.Failures[fp])
		}
	}
	fmt.Fprintf(w, "\nabandoned (%d):\n", len(st.Abandoned))
	for _, fp := range store.Fingerprints(st.Abandoned) {
		fmt.Fprintf(w, "  %s  %s\n", fp, st.Abandoned[fp].Reason)
	}
	if len(st.Abandoned) > 0 {
		fmt.Fprintf(w, "  (the-loop-diagnose retry FP, or retry --all-abandoned, brings them back)\n")
	}
	if st.Cursor != nil {
		fmt.Fprintf(w, "\nread cursor: %s at byte %d (line %d)\n", st.Cursor.Path, st.Cursor.Offset, st.Cursor.Line)
	}
	return nil
}

// statusReport is what status --json prints; its shape is documented in
// README.md ("status --json"), and a test keeps the two in step.
// statusExtras are what status reads from the store beside the state.
type statusExtras struct {
	store  string                 // the store, its password masked
	ledger []store.LedgerEntry    // settlements of the ledger's retention
	pruned []store.BacklogSummary // the backlog retention summarised
}

func statusReport(cfg Config, st *store.State, exists bool, t time.Time, x statusExtras) map[string]any {
	u := cfg.Limits().Usage(st, t)
	return map[string]any{
		"state": cfg.StatePath,
		"store": x.store,
		// The tool that wrote this report, and whether the state exists
		// (a deployment that never scanned has none).
		"version":      version,
		"state_exists": exists,
		"reported":     st.Reported,
		"deferred":     st.Deferred,
		"dismissed":    st.Dismissed,
		"settled":      st.Settled,
		"ledger":       append([]store.LedgerEntry{}, x.ledger...),
		// The backlog retention pruned, counted by event type.
		"backlog_pruned": append([]store.BacklogSummary{}, x.pruned...),
		"abandoned":      st.Abandoned,
		"attempts":       st.Attempts,
		// Dependencies the scans wait for.
		"outages": st.Outages,
		// What the agents' runs cost, as their harnesses reported it.
		"agent_cost": map[string]any{"last_24h": u.Cost, "total": st.CostTotal,
			"max_per_day_usd": u.MaxAgentCostPerDay},
		"window": map[string]any{"issues_used": u.Issues, "issues_max": u.MaxIssuesPerDay,
			"diagnoses_used": u.Diagnoses, "diagnoses_max": u.MaxDiagnosesPerDay, "hours": budget.Window.Hours()},
		"cursor": st.Cursor,
		// The source tree the agent is told to read (sourcePath, else the
		// installed the-loop's package).
		"agent_source": resolveAgentSource(cfg),
		// Issues by strangers carrying a fingerprint marker, ignored.
		"foreign_markers": append([]store.ForeignMarker{}, st.ForeignMarkers...),
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
