package stages

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/stages/issue"
	"github.com/the-loop/the-loop-diagnose/stages/tracker"
	"github.com/the-loop/the-loop-diagnose/store"
)

// Filing a new defect: intent, reservation, one create, and the races
// around it settled.

// create files the issue: intent first (durable), then one create, with
// every ambiguous failure reconciled by a marker lookup before a retry.
func (p *poster) create(ctx context.Context, o *pipeline.Outcome) error {
	fp, fps := o.Fingerprint, issue.MarkerFingerprints(o.Group)
	title := issue.FitTitle(o.Title)
	body, cut := issue.FitBody(o.Body, fps, tracker.MaxBody)
	if cut {
		p.cfg.Log.Warn().Str("fingerprint", fp).Msg("the issue body was cut to fit GitHub's limit")
	}
	// The intent and the fleet's reservation of one issue of the daily cap
	// commit together: a crash leaves both or neither, and a cap reached
	// fleet-wide (other deployments filed today's) writes no intent.
	now := p.cfg.Now()
	var prev store.Intent
	var hadPrev, capped bool
	var reservation string
	err := p.cfg.Store.UpdateWith(func(st *store.State) error {
		prev, hadPrev = st.Intents[fp]
		st.Intents[fp] = store.Intent{At: now, Title: title}
		return nil
	}, func(tx *sql.Tx) error {
		key, ok, err := p.cfg.Fleet.ReserveIssue(ctx, tx, fp, now)
		if err == nil && !ok {
			capped = true
			return errFleetCap
		}
		reservation = key
		return err
	}, func(st *store.State) {
		if hadPrev {
			st.Intents[fp] = prev
		} else {
			delete(st.Intents, fp)
		}
	})
	if capped {
		return &pipeline.DeferralError{Reason: CapReason}
	}
	if err != nil {
		return err
	}
	if err := p.ensureLabel(ctx); err != nil {
		return err
	}
	var found *tracker.Issue // what the recheck found
	created, err := p.t.Create(ctx, tracker.NewIssue{Title: title, Body: body, Labels: []string{p.cfg.Label}},
		func(ctx context.Context) (bool, error) {
			// Before a create refused by a rate limit is sent again: GitHub
			// says it did nothing, and one listing makes sure.
			is, err := p.lookup(ctx, fps, true)
			if is != nil && p.mine(is) {
				found = is
				return true, nil
			}
			return false, err
		})
	answered := created != nil // created is the create call's own answer
	if created == nil {
		created = found
	}
	var doubt *pipeline.InDoubtError
	if errors.As(err, &doubt) {
		// GitHub may have applied it: never sent again this scan. A later
		// scan's lookup finds it, or after CreateSettle files it anew.
		if uerr := p.cfg.Store.Update(func(st *store.State) error {
			in := st.Intents[fp]
			in.InDoubt = true
			st.Intents[fp] = in
			return nil
		}); uerr != nil {
			return uerr
		}
		// It may show at once (a 5xx after the work): look, never resend.
		is, lerr := p.lookup(ctx, fps, true)
		if lerr != nil {
			return lerr
		}
		if is != nil && p.mine(is) {
			return p.filed(o, is)
		}
		return &pipeline.OutageError{Reason: fmt.Sprintf("the create of %s is in doubt (%v): it is looked for on GitHub by the next scan, not sent again", fp, doubt.Err)}
	}
	if err != nil {
		// GitHub answered and refused: no issue was created, the cap's
		// reservation is returned.
		if rerr := p.cfg.Fleet.ReleaseIssue(ctx, reservation); rerr != nil {
			return rerr
		}
		return err
	}
	if p.login == "" && answered {
		// A token that may not read /user (a GitHub App) is whoever
		// GitHub says wrote the issue it just created; remembered, so the
		// next scan recognises this issue and the ones before it.
		p.login = created.Author
		login := p.login
		p.cfg.Store.Mutate(func(st *store.State) { st.IssueLogin = login })
	}
	if !p.mine(created) && p.login != "" {
		// Another deployment won the race while our create was in doubt.
		return p.existing(ctx, o, created)
	}
	if first, err := p.earlierTwin(ctx, fps, created); err != nil {
		return err
	} else if first != nil {
		return p.standDown(ctx, o, created, first)
	}
	if !created.HasLabel(p.cfg.Label) && !p.labelWarned {
		p.labelWarned = true
		p.cfg.Log.Warn().Str("label", p.cfg.Label).Str("url", created.URL).
			Msg("GitHub did not apply the label (the token lacks triage rights); the issue body names it")
	}
	return p.filed(o, created)
}

// earlierTwin looks, right after a create, for an open issue with the same
// marker and a lower number: another deployment that looked before ours existed
// and filed the same defect at the same moment. A marker lookup cannot
// prevent that race; this settles it the same way on both sides (the lowest
// number stays), so at most one open issue per defect survives.
func (p *poster) earlierTwin(ctx context.Context, fps []string, created *tracker.Issue) (*tracker.Issue, error) {
	var first *tracker.Issue
	err := p.t.ListIssues(ctx, tracker.Query{State: "open", Oldest: true, Pages: 1}, func(is tracker.Issue) bool {
		if is.Number < created.Number && issue.SharesMarker(p.trustedMarkers(&is), fps) &&
			(first == nil || is.Number < first.Number) {
			first = &is
		}
		return true
	})
	return first, err
}

// standDown closes our just-filed twin in favour of the earlier issue: its
// marker is taken out (so no lookup ever finds it again) and a comment says
// which issue to follow. The defect is recorded as that issue's.
func (p *poster) standDown(ctx context.Context, o *pipeline.Outcome, ours, first *tracker.Issue) error {
	why := fmt.Sprintf("Duplicate of #%d: another deployment filed this defect at the same moment. Follow #%d.", first.Number, first.Number)
	if err := p.closeDuplicate(ctx, ours, first, why); err != nil {
		return err
	}
	// The issue that stands is not ours: the defect is known, not filed.
	fp, now := o.Fingerprint, p.cfg.Now()
	p.indexIssue(fp, first)
	o.Status, o.URL, o.Number = pipeline.StatusKnown, first.URL, first.Number
	return p.cfg.Store.Update(func(st *store.State) error {
		p.noteIssue(st, o, first, now)
		return nil
	})
}

// filed is the decision to file: the issue recorded as the defect's, its
// count against the daily cap, its diagnosis.* events and the intent
// cleared commit in one transaction (Apply, as persist would), so a crash
// keeps all of them or none, and with them the agent run's charge and cost
// (recordSettlementAndSpend); until then the intent, durable before the create, stands
// for the issue and a rerun finds it by its marker. persist then has
// nothing more to record (o.Recorded).
func (p *poster) filed(o *pipeline.Outcome, is *tracker.Issue) error {
	fp, now := o.Fingerprint, p.cfg.Now()
	p.indexIssue(fp, is)
	o.Status, o.URL, o.Number = pipeline.StatusFiled, is.URL, is.Number
	err := p.cfg.Store.Decide(func(st *store.State) (store.Record, error) {
		p.noteIssue(st, o, is, now)
		events := Apply(st, *o, now, 0)
		recordSettlementAndSpend(st, *o, now, 0) // the agent run's charge and cost; no settlement
		return store.Record{Events: events}, nil
	})
	o.Recorded = err == nil
	return err
}

// noteIssue records is as the defect's issue.
func (p *poster) noteIssue(st *store.State, o *pipeline.Outcome, is *tracker.Issue, now time.Time) {
	fp := o.Fingerprint
	st.Reported.Set(fp, store.Reported{URL: is.URL, Number: is.Number, At: now, Title: is.Title})
	ref := st.Issues.At(fp)
	ref.Number, ref.URL, ref.State, ref.StateReason, ref.CheckedAt = is.Number, is.URL, is.State, is.StateReason, now
	ref.Occurrences = max(o.Count, 1)
	ref.FirstSeen, ref.LastSeen = o.FirstSeen, o.LastSeen
	ref.Versions = nil        // the body names the versions it was filed on; the comment, those seen since
	ref.CommentEditedAt = now // the body is this hour's news
	st.Issues.Set(fp, ref)
	delete(st.Intents, fp)
}

// ensureLabel creates the label once when it is missing and the token may;
// a token that may not is told once and the issue goes out without it.
func (p *poster) ensureLabel(ctx context.Context) error {
	if p.labelChecked {
		return nil
	}
	err := p.t.EnsureLabel(ctx, tracker.Label{Name: p.cfg.Label, Color: "d93f0b", Description: "Filed automatically by the-loop-diagnose"})
	// Once the label is known to be missing it is not asked about again.
	p.labelChecked = err == nil || errors.Is(err, tracker.ErrLabelMissing)
	switch {
	case errors.Is(err, tracker.ErrLabelForbidden):
		p.cfg.Log.Info().Str("label", p.cfg.Label).Msg("the label does not exist and the token may not create it")
		return nil
	case errors.Is(err, tracker.ErrLabelMissing):
		return p.bestEffort(err, "could not create the label")
	}
	return p.bestEffort(err, "could not check the label")
}
