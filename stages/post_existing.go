package stages

import (
	"context"
	cryptorand "crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/the-loop/the-loop-diagnose/fingerprint"
	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/stages/issue"
	"github.com/the-loop/the-loop-diagnose/stages/tracker"
	"github.com/the-loop/the-loop-diagnose/store"
)

// A defect whose issue exists: twins merged, a maintainer's close
// respected, a recurrence reopened, the occurrence comment kept current.

// settleTwins keeps, of the open issues carrying one of fps' markers (a
// create in doubt that did happen, deployments racing), the oldest and
// closes the others as its duplicates, whenever a lookup finds more than
// one. It returns the issue that stands (found when it has no twin).
func (p *poster) settleTwins(ctx context.Context, fps []string, found *tracker.Issue) (*tracker.Issue, error) {
	if found == nil || found.State != "open" {
		return found, nil
	}
	var open []*tracker.Issue
	for _, fp := range fps {
		for _, is := range p.opens[fp] {
			if !slices.ContainsFunc(open, func(o *tracker.Issue) bool { return o.Number == is.Number }) {
				open = append(open, is)
			}
		}
	}
	if len(open) < 2 {
		return found, nil
	}
	slices.SortFunc(open, func(a, b *tracker.Issue) int { return a.Number - b.Number })
	first := open[0]
	for _, twin := range open[1:] {
		why := fmt.Sprintf("Duplicate of #%d: the same defect was filed twice (a create whose answer was lost, or two deployments at once). Follow #%d.", first.Number, first.Number)
		if err := p.closeDuplicate(ctx, twin, first, why); err != nil {
			return nil, err
		}
		twin.State = "closed"
	}
	for _, fp := range fps {
		p.opens[fp] = slices.DeleteFunc(p.opens[fp], func(is *tracker.Issue) bool { return is.Number != first.Number })
	}
	return first, nil
}

// refreshKnown re-reads the issue of a defect already reported, so a fix
// that did not hold reopens it and the occurrence comment stays current.
func (p *poster) refreshKnown(ctx context.Context, o *pipeline.Outcome) error {
	fp := o.Fingerprint
	if p.repo(o) != nil {
		return nil
	}
	if err := p.mergeTwins(ctx, o); err != nil {
		return err
	}
	var ref store.IssueRef
	var cached, dismissed bool
	var rep store.Reported
	p.cfg.Store.View(func(st *store.State) {
		ref, cached = st.Issues.Get(fp)
		_, dismissed = st.Dismissed[fp]
		rep = st.Reported.At(fp)
	})
	if dismissed {
		return nil
	}
	if cached && ref.Number != 0 && ref.State == "open" && !ref.CheckedAt.IsZero() && p.cfg.Now().Sub(ref.CheckedAt) < postOccurrenceEvery {
		// Open when last looked at, within the hour: count the sighting
		// without asking GitHub again. A watcher scanning every few seconds
		// would otherwise read each recurring defect's issue every scan;
		// a close is noticed at the next hourly look, with the comment edit.
		o.URL, o.Number, o.Status = ref.URL, ref.Number, pipeline.StatusKnown
		return p.occurrence(ctx, o, ref.Number)
	}
	number := ref.Number
	if !cached || number == 0 {
		// Filed by an older version or by the-loop: only follow it when it
		// is an issue of this repository.
		if rep.Number == 0 || !p.inRepo(rep.URL) {
			return nil
		}
		number = rep.Number
	}
	if err := p.ensureLogin(ctx); err != nil {
		return err
	}
	is, err := p.getIssue(ctx, number)
	if err != nil || is == nil {
		return err
	}
	if !p.ownIssue(is, fp) {
		if p.login == "" {
			// Without our own login a fleet account not listed in
			// trustedAuthors looks the same as a stranger: leave it be.
			return nil
		}
		// Recorded by a version that believed a stranger's marker: the
		// defect has no issue of ours, so the next scan files it.
		p.cfg.Log.Warn().Str("fingerprint", fp).Int("issue", number).
			Msg("the issue recorded for this defect was not filed by a trusted author: forgetting it, the defect will be filed")
		o.Reason = fmt.Sprintf("#%d is not the tool's own issue: filed anew next scan", number)
		return p.cfg.Store.Update(func(st *store.State) error {
			st.Issues.Delete(fp)
			st.Reported.Delete(fp)
			return nil
		})
	}
	return p.existing(ctx, o, is)
}

// inRepo tells whether url is an issue of the repository issues go to.
func (p *poster) inRepo(url string) bool {
	return strings.Contains(url, "/"+p.owner+"/"+p.name+"/issues/")
}

// mergeTwins settles a defect that has two issues of this repository: a
// template family learned after both were filed (on this deployment or on
// another, whose issue carries the family's pattern fingerprint) names them
// one defect. The first time the group shows a pattern fingerprint, its
// issue is looked up by it. The older issue stays; each younger one still
// open and ours is closed as its duplicate, with a comment linking it, and
// the state records the older one for every fingerprint involved.
func (p *poster) mergeTwins(ctx context.Context, o *pipeline.Outcome) error {
	fps := append([]string{o.Fingerprint}, o.Aliases...)
	numbers := map[int]store.Reported{}
	var unchecked []string
	p.cfg.Store.View(func(st *store.State) {
		for _, fp := range fps {
			r, ok := st.Reported.Get(fp)
			if ok && r.Number > 0 && p.inRepo(r.URL) {
				numbers[r.Number] = r
			} else if !ok && fingerprint.IsPattern(fp) {
				unchecked = append(unchecked, fp)
			}
		}
	})
	if len(numbers) == 0 {
		return nil // filed by the-loop elsewhere, or never: nothing of ours to merge
	}
	if len(unchecked) > 0 {
		is, err := p.lookup(ctx, unchecked, false)
		if err != nil {
			return err
		}
		if is != nil && is.State == "open" {
			numbers[is.Number] = store.Reported{URL: is.URL, Number: is.Number, At: p.cfg.Now(), Title: is.Title}
		}
	}
	order := slices.Sorted(maps.Keys(numbers))
	if len(order) > 1 {
		if err := p.ensureLogin(ctx); err != nil {
			return err
		}
		first, err := p.getIssue(ctx, order[0])
		if err != nil || first == nil || !p.ownIssue(first, o.Fingerprint) {
			return err // the older is gone or not ours: nothing to merge into
		}
		for _, n := range order[1:] {
			is, err := p.getIssue(ctx, n)
			if err != nil {
				return err
			}
			if is == nil || is.State != "open" || !p.ownIssue(is, o.Fingerprint) {
				continue
			}
			why := fmt.Sprintf("Duplicate of #%d: both were filed for variants of one defect, which later occurrences showed are the same. Follow #%d.", order[0], order[0])
			if err := p.closeDuplicate(ctx, is, first, why); err != nil {
				return err
			}
		}
	} else if len(unchecked) == 0 {
		return nil
	}
	kept := numbers[order[0]]
	return p.cfg.Store.Update(func(st *store.State) error {
		for _, fp := range fps {
			if st.Reported.Has(fp) || slices.Contains(unchecked, fp) {
				st.Reported.Set(fp, kept)
			}
			if ref, ok := st.Issues.Get(fp); ok && ref.Number != kept.Number {
				st.Issues.Delete(fp)
			}
		}
		st.Reported.Set(o.Fingerprint, kept)
		return nil
	})
}

// closeDuplicate closes ours as a duplicate of first: its marker block
// gives way to a note (so no lookup finds it again) and a comment says
// which issue to follow.
func (p *poster) closeDuplicate(ctx context.Context, ours, first *tracker.Issue, why string) error {
	n := ours.Number
	body := issue.DuplicateBody(ours.Body, first.Number)
	_, err := p.t.Edit(ctx, n, tracker.Edit{Body: &body, State: ptr("closed"), StateReason: ptr("not_planned")})
	if err != nil {
		return err
	}
	comment := why + "\n\n" + issue.SelfAuthoredMarker + "\n"
	if _, err := p.t.Comment(ctx, n, comment, nil); err != nil {
		p.cfg.Log.Warn().Err(err).Int("issue", n).Msg("closed a duplicate but could not say why on it")
	}
	p.cfg.Log.Info().Int("closed", n).Int("kept", first.Number).Msg("one defect had two issues: kept the older")
	return nil
}

// existing handles a defect whose issue is already on GitHub.
func (p *poster) existing(ctx context.Context, o *pipeline.Outcome, is *tracker.Issue) error {
	fp := o.Fingerprint
	o.URL, o.Number = is.URL, is.Number
	if err := p.remember(fp, is); err != nil {
		return err
	}
	if is.State == "closed" {
		if reason, dismissed := postDismissed(is); dismissed {
			err := p.cfg.Store.Update(func(st *store.State) error {
				st.Dismissed[fp] = store.Dismissal{At: p.cfg.Now(), Reason: reason, URL: is.URL}
				return nil
			})
			o.Status, o.Reason = pipeline.StatusSettled, fmt.Sprintf("dismissed by a maintainer: %s (%s)", reason, is.URL)
			return err
		}
		if p.cfg.FixedUpstream != nil {
			s, err := p.cfg.FixedUpstream(ctx, is.Number, is.URL, o.Group)
			if err != nil {
				p.cfg.Log.Warn().Err(err).Int("issue", is.Number).Msg("cannot tell whether the fix shipped upstream: reopening for a human")
			} else if s != nil {
				o.Status, o.Reason, o.Settle = pipeline.StatusSettled, s.Reason, s
				return nil
			}
		}
		return p.reopen(ctx, o, is)
	}
	o.Status = pipeline.StatusKnown
	if err := p.extendMarkers(ctx, o, is); err != nil {
		return err
	}
	return p.occurrence(ctx, o, is.Number)
}

// extendMarkers adds to an open issue's marker block the fingerprints this
// deployment knows the defect by and the block lacks (a family learned
// after the issue was filed): a deployment that saw other variants first
// then finds the issue by the family's pattern. Editing a body notifies
// no one.
func (p *poster) extendMarkers(ctx context.Context, o *pipeline.Outcome, is *tracker.Issue) error {
	have := issue.TrailingMarkers(is.Body)
	want := slices.Clone(have)
	for _, fp := range issue.MarkerFingerprints(o.Group) {
		if len(want) < 2*(issue.MaxMarkerAliases+1) && !slices.Contains(want, fp) {
			want = append(want, fp)
		}
	}
	if len(have) == 0 || len(want) == len(have) || !p.trusts(is.Author) {
		return nil
	}
	body, _ := issue.FitBody(is.Body, want, tracker.MaxBody)
	_, err := p.t.Edit(ctx, is.Number, tracker.Edit{Body: &body})
	return err
}

// postDismissed tells a maintainer's "won't fix" from a fix.
func postDismissed(is *tracker.Issue) (string, bool) {
	switch is.StateReason {
	case "not_planned":
		return "closed as not planned", true
	case "duplicate":
		return "closed as a duplicate", true
	}
	for _, l := range is.Labels {
		if slices.Contains(postDismissLabels, strings.ToLower(l)) {
			return "labelled " + l, true
		}
	}
	return "", false
}

// reopen brings back an issue closed as completed: the fix did not hold.
func (p *poster) reopen(ctx context.Context, o *pipeline.Outcome, is *tracker.Issue) error {
	n := is.Number
	o.Status, o.Reason = pipeline.StatusKnown, fmt.Sprintf("reopened #%d: it recurred", n)
	reopened, err := p.t.Edit(ctx, n, tracker.Edit{State: ptr("open")})
	if tracker.StatusOf(err) == http.StatusForbidden {
		// A token without triage rights may not reopen a maintainer's close;
		// the comment still tells the maintainer.
		p.cfg.Log.Warn().Int("issue", n).Msg("the token may not reopen this issue; commenting that it recurred instead")
		o.Reason = fmt.Sprintf("recurred after #%d was closed (the token may not reopen it)", n)
	} else if err != nil {
		return err
	} else if err := p.remember(o.Fingerprint, reopened); err != nil {
		return err
	}
	body := issue.RecurredBody(o.Count, o.FirstSeen, o.LastSeen, p.versions(o.Group))
	_, err = p.t.Comment(ctx, n, body, nil)
	return err
}

// versions are the deployment versions a group's records name, most
// frequent first, else the configured one.
func (p *poster) versions(g pipeline.Group) []string {
	if vs, _ := DeploymentVersions(g); len(vs) > 0 {
		return vs
	}
	if p.cfg.Version != "" {
		return []string{p.cfg.Version}
	}
	return nil
}

// remember caches what GitHub said about fp's issue.
// Only a change of the issue is written at once; the time of the look rides
// on the scan's final state write.
func (p *poster) remember(fp string, is *tracker.Issue) error {
	changed := false
	p.cfg.Store.Mutate(func(st *store.State) {
		ref := st.Issues.At(fp)
		changed = ref.Number != is.Number || ref.URL != is.URL || ref.State != is.State || ref.StateReason != is.StateReason
		ref.Number, ref.URL, ref.State, ref.StateReason = is.Number, is.URL, is.State, is.StateReason
		ref.CheckedAt = p.cfg.Now()
		st.Issues.Set(fp, ref)
	})
	if !changed {
		return nil
	}
	return p.cfg.Store.Write()
}

// occurrence tallies this scan's sightings and, at most once an hour, edits
// the issue's one occurrence comment (creating it the first time). The
// comment is shared by every deployment reporting to the repository: each
// edit re-reads it and replaces only this deployment's entry in its hidden
// tally, so the totals shown are the fleet's.
func (p *poster) occurrence(ctx context.Context, o *pipeline.Outcome, n int) error {
	fp, now := o.Fingerprint, p.cfg.Now()
	var ref store.IssueRef
	var deployment string
	// Counted in memory: the scan's final state write makes the count
	// durable with the cursor, and a crash before it re-reads the same
	// records from the old cursor and counts them again from the old count.
	p.cfg.Store.Mutate(func(st *store.State) {
		if st.Deployment == "" {
			st.Deployment = postNewDeploymentID()
		}
		deployment = st.Deployment
		ref = st.Issues.At(fp)
		ref.Occurrences += max(o.Count, 1)
		if !o.FirstSeen.IsZero() && (ref.FirstSeen.IsZero() || o.FirstSeen.Before(ref.FirstSeen)) {
			ref.FirstSeen = o.FirstSeen
		}
		if o.LastSeen.After(ref.LastSeen) {
			ref.LastSeen = o.LastSeen
		}
		// The versions it recurred on since it was filed (or found).
		for _, v := range p.versions(o.Group) {
			if !slices.Contains(ref.Versions, v) {
				ref.Versions = append(ref.Versions, v)
			}
		}
		st.Issues.Set(fp, ref)
	})
	if !ref.CommentEditedAt.IsZero() && now.Sub(ref.CommentEditedAt) < postOccurrenceEvery {
		return nil
	}
	// The deployment id and the count are made durable before they are
	// published, so a crash cannot make this deployment count twice under
	// two ids.
	if err := p.cfg.Store.Write(); err != nil {
		return err
	}
	// Read the comment right before writing it, to keep the window in which
	// another deployment's edit could be overwritten short.
	id, current, err := p.findOccurrenceComment(ctx, n, fp, ref.CommentID)
	if err != nil {
		return err
	}
	tally := issue.ParseTally(current)
	tally.Set(deployment, issue.TallyOf(ref))
	body := issue.OccurrenceBody(fp, tally, p.cfg.ToolVersion)
	if id != 0 {
		err = p.t.EditComment(ctx, id, body)
		if tracker.StatusOf(err) == http.StatusNotFound {
			// Deleted since it was read: write a fresh one, keeping the
			// other deployments' entries just read.
			id, err = 0, nil
		} else if err != nil {
			return err
		}
	}
	if id == 0 {
		c, err := p.t.Comment(ctx, n, body, func(ctx context.Context) (bool, error) {
			// The comment may have landed before the error: look first.
			found, _, err := p.findOccurrenceComment(ctx, n, fp, 0)
			id = found
			return found != 0, err
		})
		if c != nil {
			id = c.ID
		}
		if err != nil {
			return err
		}
	}
	return p.cfg.Store.Update(func(st *store.State) error {
		ref := st.Issues.At(fp)
		ref.CommentID, ref.CommentEditedAt = id, now
		st.Issues.Set(fp, ref)
		return nil
	})
}

// postNewDeploymentID is a random id for this deployment's tally entries:
// it is public, so it carries nothing about the machine or its owner.
func postNewDeploymentID() string {
	var b [16]byte
	cryptorand.Read(b[:]) // never fails (crypto/rand panics rather than return an error)
	return hex.EncodeToString(b[:])
}

// findOccurrenceComment finds the occurrence comment on issue n and returns
// its id and current body: the comment with id known (the one this
// deployment last wrote) or else the first of the token's comments carrying
// fp's occurrence marker. id is 0 when there is none (never written, or
// deleted).
func (p *poster) findOccurrenceComment(ctx context.Context, n int, fp string, known int64) (int64, string, error) {
	if err := p.ensureLogin(ctx); err != nil {
		return 0, "", err
	}
	marker := issue.OccurrenceMarker(fp)
	var id int64
	var body string
	err := p.t.ListComments(ctx, n, func(c tracker.Comment) bool {
		if (known != 0 && c.ID == known) || (strings.Contains(c.Body, marker) && p.trusts(c.Author)) {
			id, body = c.ID, c.Body
			return false
		}
		return true
	})
	if err != nil {
		return 0, "", err
	}
	return id, body, nil
}
