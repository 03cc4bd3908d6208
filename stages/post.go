package stages

import (
	"context"
	cryptorand "crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/rs/zerolog"

	"github.com/the-loop/the-loop-diagnose/fingerprint"
	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/store"
)

// Post defaults: GitHub's own guidance.
const (
	DefaultPostLabel         = "the-loop: self-diagnosed"
	DefaultPostWriteSpacing  = time.Second
	DefaultPostSecondaryWait = 60 * time.Second
	DefaultPostMaxWait       = 90 * time.Second
	DefaultPostRetries       = 3
	DefaultPostBackoffBase   = time.Second
	DefaultPostCallTimeout   = 30 * time.Second
	// DefaultPostCreateSettle is how long a create in doubt is given to
	// show in GitHub's listing before the defect is filed again.
	DefaultPostCreateSettle = 10 * time.Minute

	// postOccurrenceEvery throttles edits of the occurrence comment.
	postOccurrenceEvery = time.Hour
	// postScanPages bounds the unfiltered marker scan, the last resort for an
	// issue filed by a token whose label was dropped.
	postScanPages = 5
	// postMaxRateWaits bounds rate-limit waits for one call.
	postMaxRateWaits = 3
)

// Reasons a closed issue counts as a maintainer's "won't fix".
var postDismissLabels = []string{"wontfix", "won't fix", "invalid", "duplicate"}

// PostConfig configures the post stage.
type PostConfig struct {
	Client        *github.Client
	Repo          string // "owner/name"
	Label         string // default DefaultPostLabel
	Store         *store.Store
	Now           func() time.Time
	WriteSpacing  time.Duration // between writes; 0 means the default 1s, negative none
	SecondaryWait time.Duration // wait after a secondary limit without Retry-After; default 60s
	MaxWait       time.Duration // longest rate-limit wait slept through; longer defers the rest of the scan
	Retries       int           // retries for 5xx and network errors; default 3, negative for none
	BackoffBase   time.Duration // first backoff; doubles per retry, with jitter
	CallTimeout   time.Duration // bound on one HTTP call; default 30s
	// CreateSettle is how long a create in doubt (sent, outcome unknown)
	// is waited for before the defect is filed again; default 10 min.
	CreateSettle time.Duration
	// Version is the deployment's version from its config
	// (selfDiagnosis.version), for the occurrence and recurrence comments
	// when the records name none (DeploymentVersions).
	Version string
	// ToolVersion is this tool's, named in the occurrence comment's footer.
	ToolVersion string
	Log         zerolog.Logger
	// FixedUpstream, when set, is asked before an issue closed as completed
	// is reopened: a settlement means the fix shipped in a release this
	// deployment does not run yet, so it is told to upgrade instead. An
	// error is inconclusive: the issue is reopened for a human.
	FixedUpstream func(ctx context.Context, issue int, issueURL string, g pipeline.Group) (*pipeline.Settlement, error)
	// Preflight, when set, is called before the stage first contacts
	// GitHub (the scan's CheckGitHub, shared with the agent stage); its
	// error stops the stage.
	Preflight func(context.Context) error
	// TrustedAuthors are logins besides the token's own (GET /user) whose
	// issues' markers count: a fleet's other bot accounts, a GitHub App's
	// "name[bot]" when its token may not read /user.
	TrustedAuthors []string
	// Fleet is the scan's part in the fleet: a create reserves one issue
	// of the fleet-wide daily cap (nil: none to reserve).
	Fleet *FleetScan
}

// errFleetCap rolls back a create's intent when the fleet-wide cap has no
// room left.
var errFleetCap = errors.New("the daily issue cap is reached fleet-wide")

// NewPost files each new defect on GitHub exactly once and records what it
// learned; every other report passes through as its outcome. Writes are
// serial: one report is handled at a time.
func NewPost(cfg PostConfig) pipeline.Stage[pipeline.Report, pipeline.Outcome] {
	if cfg.Label == "" {
		cfg.Label = DefaultPostLabel
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.WriteSpacing == 0 {
		cfg.WriteSpacing = DefaultPostWriteSpacing
	}
	if cfg.SecondaryWait <= 0 {
		cfg.SecondaryWait = DefaultPostSecondaryWait
	}
	if cfg.MaxWait == 0 {
		cfg.MaxWait = DefaultPostMaxWait
	}
	if cfg.Retries == 0 {
		cfg.Retries = DefaultPostRetries
	}
	cfg.Retries = max(cfg.Retries, 0)
	if cfg.BackoffBase <= 0 {
		cfg.BackoffBase = DefaultPostBackoffBase
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultPostCallTimeout
	}
	if cfg.CreateSettle <= 0 {
		cfg.CreateSettle = DefaultPostCreateSettle
	}
	return func(ctx context.Context, in <-chan pipeline.Report, out chan<- pipeline.Outcome) error {
		p := &poster{cfg: cfg}
		for r := range in {
			o, err := p.handle(ctx, r)
			if err != nil {
				return err
			}
			if err := pipeline.Send(ctx, out, o); err != nil {
				return err
			}
		}
		return ctx.Err()
	}
}

// poster is one scan's posting state.
type poster struct {
	cfg         PostConfig
	owner, name string

	login        string // the token's login; "" when /user is not allowed
	loginChecked bool
	warned       map[string]bool // foreign markers logged this scan
	labelChecked bool
	labelWarned  bool
	lastWrite    time.Time
	deferReason  string // set once a rate limit defers the rest of the scan
	// resumeChecked: the wait an earlier scan's rate limit asked for
	// (State.GitHubResume) was looked at.
	resumeChecked bool
	// wait is set once GitHub is found unusable (5xx, the network, a
	// create in doubt): the rest of the scan asks it nothing more.
	wait *pipeline.Wait

	// index maps fingerprints to issues seen by marker lookups this scan;
	// opens, to every open one (twins to settle); scanned records which
	// list queries already ran to completion.
	index   map[string]*github.Issue
	opens   map[string][]*github.Issue
	scanned map[string]bool
}

func (p *poster) handle(ctx context.Context, r pipeline.Report) (pipeline.Outcome, error) {
	if !p.resumeChecked {
		// GitHub asked an earlier scan to wait: this one waits too.
		p.resumeChecked = true
		var resume time.Time
		p.cfg.Store.View(func(st *store.State) { resume = st.GitHubResume })
		if p.cfg.Now().Before(resume) && p.deferReason == "" {
			p.deferReason = "GitHub rate limit: asked to wait until " + resume.UTC().Format(time.RFC3339)
			p.cfg.Log.Warn().Msg(p.deferReason + "; deferring this scan's filing")
		}
	}
	o, settled := OutcomeWithoutPost(r)
	if settled {
		if r.Verdict == pipeline.VerdictKnown && o.Status == pipeline.StatusKnown && p.deferReason == "" && p.wait == nil {
			return p.finish(o, p.refreshKnown(ctx, &o), true)
		}
		return o, nil
	}
	if p.wait != nil {
		w := *p.wait
		o.Wait, o.Status, o.Reason = &w, pipeline.StatusDeferred, w.String()
		return o, nil
	}
	if p.deferReason != "" {
		o.Status, o.Reason = pipeline.StatusDeferred, p.deferReason
		return o, nil
	}
	return p.finish(o, p.post(ctx, &o), false)
}

func (p *poster) preflight(ctx context.Context) error {
	if p.cfg.Preflight == nil {
		return nil
	}
	return p.cfg.Preflight(ctx)
}

// finish turns a posting error into the outcome or the stage error.
// lenient keeps the outcome's status on ordinary failures (a known defect
// whose refresh failed is still known).
func (p *poster) finish(o pipeline.Outcome, err error, lenient bool) (pipeline.Outcome, error) {
	if err == nil {
		return o, nil
	}
	var storeErr *store.StoreError
	if errors.As(err, &storeErr) && pipeline.Classify(err) != pipeline.ClassSetup {
		// The store failed (PostgreSQL unreachable): the scan stops,
		// failing closed; nothing is charged to the defect.
		return o, err
	}
	var outage *pipeline.OutageError
	var deferral *pipeline.DeferralError
	switch pipeline.Classify(err) {
	case pipeline.ClassSetup, pipeline.ClassCancelled:
		return o, err
	case pipeline.ClassOutage:
		errors.As(err, &outage)
		p.wait = &pipeline.Wait{For: pipeline.WaitGitHub, Reason: outage.Reason}
		p.cfg.Log.Warn().Str("fingerprint", o.Fingerprint).Msg(p.wait.String() + "; the rest of this scan waits")
		w := *p.wait
		o.Wait = &w
		if !lenient {
			o.Status, o.Reason = pipeline.StatusDeferred, w.String()
		}
		return o, nil
	case pipeline.ClassDeferral:
		errors.As(err, &deferral)
		p.deferReason = deferral.Reason
		if until := deferral.Until; !until.IsZero() {
			// Kept (the scan's last write): a scan before then asks GitHub nothing.
			p.cfg.Store.Mutate(func(st *store.State) {
				if until.After(st.GitHubResume) {
					st.GitHubResume = until
				}
			})
		}
		p.cfg.Log.Warn().Str("fingerprint", o.Fingerprint).Msg(deferral.Reason + "; deferring the rest of this scan")
		if !lenient {
			o.Status, o.Reason = pipeline.StatusDeferred, deferral.Reason
		}
		return o, nil
	}
	if lenient {
		p.cfg.Log.Warn().Err(err).Str("fingerprint", o.Fingerprint).Msg("could not refresh the known issue")
		return o, nil
	}
	o.Status, o.Error = pipeline.StatusFailed, err.Error()
	return o, nil
}

func (p *poster) repo() error {
	owner, name, ok := strings.Cut(p.cfg.Repo, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return &pipeline.SetupError{Area: "GitHub", Cause: fmt.Sprintf("repository %q is not owner/name", p.cfg.Repo),
			Fix: "set selfDiagnosis.repo to the repository issues go to, as owner/name"}
	}
	p.owner, p.name = owner, name
	return nil
}

// post handles a new defect: find its issue by marker, or create it once.
func (p *poster) post(ctx context.Context, o *pipeline.Outcome) error {
	if p.cfg.Repo == "" {
		p.cfg.Repo = o.Repo
	}
	if err := p.repo(); err != nil {
		return err
	}
	fp := o.Fingerprint
	var ref store.IssueRef
	var cached, intent bool
	var pending store.Intent
	p.cfg.Store.View(func(st *store.State) {
		ref, cached = st.Issues.Get(fp)
		pending, intent = st.Intents[fp]
	})
	if err := p.ensureLogin(ctx); err != nil {
		return err
	}
	var found *github.Issue
	if cached && ref.Number > 0 {
		is, err := p.getIssue(ctx, ref.Number)
		if err != nil {
			return err
		}
		if is != nil && p.ownIssue(is, fp) {
			found = is
		}
	}
	fps := MarkerFingerprints(o.Group)
	if found == nil {
		// A create in doubt is looked for afresh, not in this scan's index.
		is, err := p.lookup(ctx, fps, intent && pending.InDoubt)
		if err != nil {
			return err
		}
		if found, err = p.settleTwins(ctx, fps, is); err != nil {
			return err
		}
	}
	if found != nil {
		if intent && p.mine(found) {
			// Our own create from a run that died before recording it, or
			// one whose answer never came.
			return p.filed(o, found)
		}
		return p.existing(ctx, o, found)
	}
	if intent && pending.InDoubt {
		if since := p.cfg.Now().Sub(pending.At); since < p.cfg.CreateSettle {
			return &pipeline.OutageError{Reason: fmt.Sprintf("the create of %s %s ago is in doubt and GitHub does not list it yet: waiting up to %s before filing it again",
				fp, since.Round(time.Second), p.cfg.CreateSettle)}
		}
		p.cfg.Log.Info().Str("fingerprint", fp).Msg("the create in doubt never showed on GitHub: filing the defect again")
	}
	return p.create(ctx, o)
}

// settleTwins keeps, of the open issues carrying one of fps' markers (a
// create in doubt that did happen, deployments racing), the oldest and
// closes the others as its duplicates, whenever a lookup finds more than
// one. It returns the issue that stands (found when it has no twin).
func (p *poster) settleTwins(ctx context.Context, fps []string, found *github.Issue) (*github.Issue, error) {
	if found == nil || found.GetState() != "open" {
		return found, nil
	}
	var open []*github.Issue
	for _, fp := range fps {
		for _, is := range p.opens[fp] {
			if !slices.ContainsFunc(open, func(o *github.Issue) bool { return o.GetNumber() == is.GetNumber() }) {
				open = append(open, is)
			}
		}
	}
	if len(open) < 2 {
		return found, nil
	}
	slices.SortFunc(open, func(a, b *github.Issue) int { return a.GetNumber() - b.GetNumber() })
	first := open[0]
	for _, twin := range open[1:] {
		why := fmt.Sprintf("Duplicate of #%d: the same defect was filed twice (a create whose answer was lost, or two deployments at once). Follow #%d.", first.GetNumber(), first.GetNumber())
		if err := p.closeDuplicate(ctx, twin, first, why); err != nil {
			return nil, err
		}
		twin.State = github.String("closed")
	}
	for _, fp := range fps {
		p.opens[fp] = slices.DeleteFunc(p.opens[fp], func(is *github.Issue) bool { return is.GetNumber() != first.GetNumber() })
	}
	return first, nil
}

func (p *poster) mine(is *github.Issue) bool {
	return p.login != "" && strings.EqualFold(is.GetUser().GetLogin(), p.login)
}

// refreshKnown re-reads the issue of a defect already reported, so a fix
// that did not hold reopens it and the occurrence comment stays current.
func (p *poster) refreshKnown(ctx context.Context, o *pipeline.Outcome) error {
	fp := o.Fingerprint
	if p.cfg.Repo == "" {
		p.cfg.Repo = o.Repo
	}
	if p.repo() != nil {
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
		if rep.Number == 0 || !strings.Contains(rep.URL, "/"+p.owner+"/"+p.name+"/issues/") {
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
			if ok && r.Number > 0 && strings.Contains(r.URL, "/"+p.owner+"/"+p.name+"/issues/") {
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
		if is != nil && is.GetState() == "open" {
			numbers[is.GetNumber()] = store.Reported{URL: is.GetHTMLURL(), Number: is.GetNumber(), At: p.cfg.Now(), Title: is.GetTitle()}
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
			if is == nil || is.GetState() != "open" || !p.ownIssue(is, o.Fingerprint) {
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
func (p *poster) closeDuplicate(ctx context.Context, ours, first *github.Issue, why string) error {
	n := ours.GetNumber()
	body := postDuplicateBody(ours.GetBody(), first.GetNumber())
	err := p.do(ctx, ghCall{what: "close a duplicate", write: true}, func(ctx context.Context) error {
		_, _, err := p.cfg.Client.Issues.Edit(ctx, p.owner, p.name, n, &github.IssueRequest{
			Body: github.String(body), State: github.String("closed"), StateReason: github.String("not_planned")})
		return err
	}, nil)
	if err != nil {
		return err
	}
	comment := why + "\n\n" + SelfAuthoredMarker + "\n"
	if err := p.do(ctx, ghCall{what: "comment on the duplicate", write: true}, func(ctx context.Context) error {
		_, _, err := p.cfg.Client.Issues.CreateComment(ctx, p.owner, p.name, n, &github.IssueComment{Body: github.String(comment)})
		return err
	}, nil); err != nil {
		p.cfg.Log.Warn().Err(err).Int("issue", n).Msg("closed a duplicate but could not say why on it")
	}
	p.cfg.Log.Info().Int("closed", n).Int("kept", first.GetNumber()).Msg("one defect had two issues: kept the older")
	return nil
}

// existing handles a defect whose issue is already on GitHub.
func (p *poster) existing(ctx context.Context, o *pipeline.Outcome, is *github.Issue) error {
	fp := o.Fingerprint
	o.URL, o.Number = is.GetHTMLURL(), is.GetNumber()
	if err := p.remember(fp, is); err != nil {
		return err
	}
	if is.GetState() == "closed" {
		if reason, dismissed := postDismissed(is); dismissed {
			err := p.cfg.Store.Update(func(st *store.State) error {
				st.Dismissed[fp] = store.Dismissal{At: p.cfg.Now(), Reason: reason, URL: is.GetHTMLURL()}
				return nil
			})
			o.Status, o.Reason = pipeline.StatusSettled, fmt.Sprintf("dismissed by a maintainer: %s (%s)", reason, is.GetHTMLURL())
			return err
		}
		if p.cfg.FixedUpstream != nil {
			s, err := p.cfg.FixedUpstream(ctx, is.GetNumber(), is.GetHTMLURL(), o.Group)
			if err != nil {
				p.cfg.Log.Warn().Err(err).Int("issue", is.GetNumber()).Msg("cannot tell whether the fix shipped upstream: reopening for a human")
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
	return p.occurrence(ctx, o, is.GetNumber())
}

// extendMarkers adds to an open issue's marker block the fingerprints this
// deployment knows the defect by and the block lacks (a family learned
// after the issue was filed): a deployment that saw other variants first
// then finds the issue by the family's pattern. Editing a body notifies
// no one.
func (p *poster) extendMarkers(ctx context.Context, o *pipeline.Outcome, is *github.Issue) error {
	have := postTrailingMarkers(is.GetBody())
	want := slices.Clone(have)
	for _, fp := range MarkerFingerprints(o.Group) {
		if len(want) < 2*(maxMarkerAliases+1) && !slices.Contains(want, fp) {
			want = append(want, fp)
		}
	}
	if len(have) == 0 || len(want) == len(have) || !p.trusts(is.GetUser().GetLogin()) {
		return nil
	}
	body, _ := postFitBody(is.GetBody(), want, PostMaxBody)
	return p.do(ctx, ghCall{what: "add the defect's other fingerprints to its issue", write: true}, func(ctx context.Context) error {
		_, _, err := p.cfg.Client.Issues.Edit(ctx, p.owner, p.name, is.GetNumber(), &github.IssueRequest{Body: github.String(body)})
		return err
	}, nil)
}

// postDismissed tells a maintainer's "won't fix" from a fix.
func postDismissed(is *github.Issue) (string, bool) {
	switch is.GetStateReason() {
	case "not_planned":
		return "closed as not planned", true
	case "duplicate":
		return "closed as a duplicate", true
	}
	for _, l := range is.Labels {
		if slices.Contains(postDismissLabels, strings.ToLower(l.GetName())) {
			return "labelled " + l.GetName(), true
		}
	}
	return "", false
}

// reopen brings back an issue closed as completed: the fix did not hold.
func (p *poster) reopen(ctx context.Context, o *pipeline.Outcome, is *github.Issue) error {
	n := is.GetNumber()
	o.Status, o.Reason = pipeline.StatusKnown, fmt.Sprintf("reopened #%d: it recurred", n)
	var reopened *github.Issue
	err := p.do(ctx, ghCall{what: "reopen issue", write: true}, func(ctx context.Context) error {
		var err error
		reopened, _, err = p.cfg.Client.Issues.Edit(ctx, p.owner, p.name, n, &github.IssueRequest{State: github.String("open")})
		return err
	}, nil)
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusForbidden {
		// A token without triage rights may not reopen a maintainer's close;
		// the comment still tells the maintainer.
		p.cfg.Log.Warn().Int("issue", n).Msg("the token may not reopen this issue; commenting that it recurred instead")
		o.Reason = fmt.Sprintf("recurred after #%d was closed (the token may not reopen it)", n)
	} else if err != nil {
		return err
	} else if err := p.remember(o.Fingerprint, reopened); err != nil {
		return err
	}
	body := postRecurredBody(o.Count, o.FirstSeen, o.LastSeen, p.versions(o.Group))
	return p.do(ctx, ghCall{what: "comment on the reopened issue", write: true}, func(ctx context.Context) error {
		_, _, err := p.cfg.Client.Issues.CreateComment(ctx, p.owner, p.name, n, &github.IssueComment{Body: github.String(body)})
		return err
	}, nil)
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
func (p *poster) remember(fp string, is *github.Issue) error {
	changed := false
	p.cfg.Store.Mutate(func(st *store.State) {
		ref := st.Issues.At(fp)
		changed = ref.Number != is.GetNumber() || ref.URL != is.GetHTMLURL() || ref.State != is.GetState() || ref.StateReason != is.GetStateReason()
		ref.Number, ref.URL, ref.State, ref.StateReason = is.GetNumber(), is.GetHTMLURL(), is.GetState(), is.GetStateReason()
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
	tally := postParseTally(current)
	tally.set(deployment, postTallyOf(ref))
	body := postOccurrenceBody(fp, tally, p.cfg.ToolVersion)
	if id != 0 {
		err = p.do(ctx, ghCall{what: "edit the occurrence comment", write: true}, func(ctx context.Context) error {
			_, _, err := p.cfg.Client.Issues.EditComment(ctx, p.owner, p.name, id, &github.IssueComment{Body: github.String(body)})
			return err
		}, nil)
		var er *github.ErrorResponse
		if errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusNotFound {
			// Deleted since it was read: write a fresh one, keeping the
			// other deployments' entries just read.
			id, err = 0, nil
		} else if err != nil {
			return err
		}
	}
	if id == 0 {
		err = p.do(ctx, ghCall{what: "comment on the issue", write: true}, func(ctx context.Context) error {
			c, _, err := p.cfg.Client.Issues.CreateComment(ctx, p.owner, p.name, n, &github.IssueComment{Body: github.String(body)})
			id = c.GetID()
			return err
		}, func(ctx context.Context) (bool, error) {
			// The comment may have landed before the error: look first.
			found, _, err := p.findOccurrenceComment(ctx, n, fp, 0)
			id = found
			return found != 0, err
		})
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
	marker := postOccurrenceMarker(fp)
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	for {
		var list []*github.IssueComment
		var resp *github.Response
		err := p.do(ctx, ghCall{what: "list comments"}, func(ctx context.Context) error {
			var err error
			list, resp, err = p.cfg.Client.Issues.ListComments(ctx, p.owner, p.name, n, opts)
			return err
		}, nil)
		if err != nil {
			return 0, "", err
		}
		for _, c := range list {
			if (known != 0 && c.GetID() == known) ||
				(strings.Contains(c.GetBody(), marker) && p.trusts(c.GetUser().GetLogin())) {
				return c.GetID(), c.GetBody(), nil
			}
		}
		if resp == nil || resp.NextPage == 0 {
			return 0, "", nil
		}
		opts.Page = resp.NextPage
	}
}

// create files the issue: intent first (durable), then one create, with
// every ambiguous failure reconciled by a marker lookup before a retry.
func (p *poster) create(ctx context.Context, o *pipeline.Outcome) error {
	fp, fps := o.Fingerprint, MarkerFingerprints(o.Group)
	title := postFitTitle(o.Title)
	body, cut := postFitBody(o.Body, fps, PostMaxBody)
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
	var created *github.Issue
	answered := false // created is the create call's own answer
	err = p.do(ctx, ghCall{what: "create issue", write: true, repoLevel: true, once: true}, func(ctx context.Context) error {
		is, _, err := p.cfg.Client.Issues.Create(ctx, p.owner, p.name, &github.IssueRequest{
			Title: github.String(title), Body: github.String(body), Labels: &[]string{p.cfg.Label},
		})
		created, answered = is, err == nil
		return err
	}, func(ctx context.Context) (bool, error) {
		// Before a create refused by a rate limit is sent again: GitHub
		// says it did nothing, and one listing makes sure.
		is, err := p.lookup(ctx, fps, true)
		if is != nil && p.mine(is) {
			created, answered = is, false
			return true, nil
		}
		return false, err
	})
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
		p.login = created.GetUser().GetLogin()
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
	if !slices.ContainsFunc(created.Labels, func(l *github.Label) bool { return strings.EqualFold(l.GetName(), p.cfg.Label) }) && !p.labelWarned {
		p.labelWarned = true
		p.cfg.Log.Warn().Str("label", p.cfg.Label).Str("url", created.GetHTMLURL()).
			Msg("GitHub did not apply the label (the token lacks triage rights); the issue body names it")
	}
	return p.filed(o, created)
}

// filed records a created issue as reported at once, so a crash right after
// still knows it.
// earlierTwin looks, right after a create, for an open issue with the same
// marker and a lower number: another deployment that looked before ours was
// filed and filed the same defect at the same moment. A marker lookup cannot
// prevent that race; this settles it the same way on both sides (the lowest
// number stays), so at most one open issue per defect survives.
func (p *poster) earlierTwin(ctx context.Context, fps []string, created *github.Issue) (*github.Issue, error) {
	var first *github.Issue
	opts := github.IssueListByRepoOptions{State: "open", Sort: "created", Direction: "asc",
		ListOptions: github.ListOptions{PerPage: 100}}
	err := p.do(ctx, ghCall{what: "list issues", repoLevel: true}, func(ctx context.Context) error {
		list, _, err := p.cfg.Client.Issues.ListByRepo(ctx, p.owner, p.name, &opts)
		for _, is := range list {
			if is.GetNumber() < created.GetNumber() && postSharesMarker(p.trustedMarkers(is), fps) &&
				(first == nil || is.GetNumber() < first.GetNumber()) {
				first = is
			}
		}
		return err
	}, nil)
	return first, err
}

// standDown closes our just-filed twin in favour of the earlier issue: its
// marker is taken out (so no lookup ever finds it again) and a comment says
// which issue to follow. The defect is recorded as that issue's.
func (p *poster) standDown(ctx context.Context, o *pipeline.Outcome, ours, first *github.Issue) error {
	why := fmt.Sprintf("Duplicate of #%d: another deployment filed this defect at the same moment. Follow #%d.", first.GetNumber(), first.GetNumber())
	if err := p.closeDuplicate(ctx, ours, first, why); err != nil {
		return err
	}
	// The issue that stands is not ours: the defect is known, not filed.
	fp, now := o.Fingerprint, p.cfg.Now()
	p.indexIssue(fp, first)
	o.Status, o.URL, o.Number = pipeline.StatusKnown, first.GetHTMLURL(), first.GetNumber()
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
func (p *poster) filed(o *pipeline.Outcome, is *github.Issue) error {
	fp, now := o.Fingerprint, p.cfg.Now()
	p.indexIssue(fp, is)
	o.Status, o.URL, o.Number = pipeline.StatusFiled, is.GetHTMLURL(), is.GetNumber()
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
func (p *poster) noteIssue(st *store.State, o *pipeline.Outcome, is *github.Issue, now time.Time) {
	fp := o.Fingerprint
	st.Reported.Set(fp, store.Reported{URL: is.GetHTMLURL(), Number: is.GetNumber(), At: now, Title: is.GetTitle()})
	ref := st.Issues.At(fp)
	ref.Number, ref.URL, ref.State, ref.StateReason, ref.CheckedAt = is.GetNumber(), is.GetHTMLURL(), is.GetState(), is.GetStateReason(), now
	ref.Occurrences = max(o.Count, 1)
	ref.FirstSeen, ref.LastSeen = o.FirstSeen, o.LastSeen
	ref.Versions = nil        // the body names the versions it was filed on; the comment, those seen since
	ref.CommentEditedAt = now // the body is this hour's news
	st.Issues.Set(fp, ref)
	delete(st.Intents, fp)
}

// getIssue refreshes a cached issue; nil when it is gone (deleted or moved).
func (p *poster) getIssue(ctx context.Context, n int) (*github.Issue, error) {
	var is *github.Issue
	err := p.do(ctx, ghCall{what: "get issue"}, func(ctx context.Context) error {
		var err error
		is, _, err = p.cfg.Client.Issues.Get(ctx, p.owner, p.name, n)
		return err
	}, nil)
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil && !strings.Contains(er.Message, "disabled") &&
		(er.Response.StatusCode == http.StatusNotFound || er.Response.StatusCode == http.StatusGone) {
		return nil, nil
	}
	return is, err
}

// ensureLogin learns the token's login once (for the creator filter and to
// tell our issues from others'). Tokens that may not read /user (GitHub App
// installations) go without: only TrustedAuthors are trusted then, until
// the scan's first create tells who the token is.
func (p *poster) ensureLogin(ctx context.Context) error {
	if p.loginChecked {
		return nil
	}
	var u *github.User
	err := p.do(ctx, ghCall{what: "get the token's user"}, func(ctx context.Context) error {
		var err error
		u, _, err = p.cfg.Client.Users.Get(ctx, "")
		return err
	}, nil)
	var er *github.ErrorResponse
	if err != nil && !(errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusForbidden) {
		return err
	}
	p.loginChecked = true
	p.login = u.GetLogin()
	if p.login == "" {
		// Only ever set from GitHub's answer to our own create.
		p.cfg.Store.View(func(st *store.State) { p.login = st.IssueLogin })
	}
	if p.login == "" && len(p.cfg.TrustedAuthors) == 0 {
		p.cfg.Log.Warn().Msg("GitHub does not say who the token is (GET /user is not allowed, as for a GitHub App): " +
			"no issue is recognised by its marker until selfDiagnosis.trustedAuthors names the login the token files as (e.g. my-app[bot])")
	}
	return nil
}

// ensureLabel creates the label once when it is missing and the token may;
// a token that may not is told once and the issue goes out without it.
func (p *poster) ensureLabel(ctx context.Context) error {
	if p.labelChecked {
		return nil
	}
	err := p.do(ctx, ghCall{what: "get label"}, func(ctx context.Context) error {
		_, _, err := p.cfg.Client.Issues.GetLabel(ctx, p.owner, p.name, p.cfg.Label)
		return err
	}, nil)
	var er *github.ErrorResponse
	if err == nil || !errors.As(err, &er) || er.Response == nil || er.Response.StatusCode != http.StatusNotFound {
		p.labelChecked = err == nil
		return p.bestEffort(err, "could not check the label")
	}
	p.labelChecked = true
	err = p.do(ctx, ghCall{what: "create label", write: true}, func(ctx context.Context) error {
		_, _, err := p.cfg.Client.Issues.CreateLabel(ctx, p.owner, p.name, &github.Label{
			Name: github.String(p.cfg.Label), Color: github.String("d93f0b"),
			Description: github.String("Filed automatically by the-loop-diagnose"),
		})
		return err
	}, nil)
	if errors.As(err, &er) && er.Response != nil &&
		(er.Response.StatusCode == http.StatusForbidden || er.Response.StatusCode == http.StatusUnprocessableEntity) {
		p.cfg.Log.Info().Str("label", p.cfg.Label).Msg("the label does not exist and the token may not create it")
		return nil
	}
	return p.bestEffort(err, "could not create the label")
}

// bestEffort lets an optional call fail, except for what must stop or
// defer the scan.
func (p *poster) bestEffort(err error, msg string) error {
	switch pipeline.Classify(err) {
	case pipeline.ClassSetup, pipeline.ClassDeferral, pipeline.ClassCancelled:
		return err
	}
	if err == nil {
		return nil
	}
	p.cfg.Log.Warn().Err(err).Msg(msg)
	return nil
}

// lookup finds fp's issue by its marker through the list-issues endpoint
// (consistent, unlike search): first the issues carrying our label, then
// those our login and each trusted author created (the label may have been
// dropped), then a bounded scan of the newest issues. Every marker seen is indexed for the rest of
// the scan; fresh forgets the index (after an ambiguous create).
func (p *poster) lookup(ctx context.Context, fps []string, fresh bool) (*github.Issue, error) {
	if err := p.ensureLogin(ctx); err != nil {
		return nil, err
	}
	if fresh || p.index == nil {
		p.index, p.opens, p.scanned = map[string]*github.Issue{}, map[string][]*github.Issue{}, map[string]bool{}
	}
	type query struct {
		key   string
		opts  github.IssueListByRepoOptions
		pages int
	}
	queries := []query{{"label", github.IssueListByRepoOptions{Labels: []string{p.cfg.Label}}, 0}}
	// Only trusted authors' issues count, so theirs are the ones worth
	// listing when the label was dropped.
	for _, login := range append([]string{p.login}, p.cfg.TrustedAuthors...) {
		if login != "" && (login == p.login || !strings.EqualFold(login, p.login)) {
			queries = append(queries, query{"creator:" + strings.ToLower(login), github.IssueListByRepoOptions{Creator: login}, 0})
		}
	}
	queries = append(queries, query{"recent", github.IssueListByRepoOptions{}, postScanPages})
	for _, q := range queries {
		if is := p.indexed(fps); is != nil {
			return is, nil
		}
		if p.scanned[q.key] {
			continue
		}
		opts := q.opts
		opts.State, opts.Sort, opts.Direction = "all", "created", "desc"
		opts.PerPage = 100
		for page := 1; ; page++ {
			var list []*github.Issue
			var resp *github.Response
			err := p.do(ctx, ghCall{what: "list issues", repoLevel: true}, func(ctx context.Context) error {
				var err error
				list, resp, err = p.cfg.Client.Issues.ListByRepo(ctx, p.owner, p.name, &opts)
				return err
			}, nil)
			if err != nil {
				return nil, err
			}
			for _, is := range list {
				for _, fp := range p.trustedMarkers(is) {
					p.indexIssue(fp, is)
				}
			}
			if resp == nil || resp.NextPage == 0 || (q.pages > 0 && page >= q.pages) {
				break
			}
			opts.Page = resp.NextPage
		}
		p.scanned[q.key] = true
	}
	return p.indexed(fps), nil
}

// indexed is the issue the index holds for any of fps: an open one over a
// closed one, then the oldest (two issues for one defect come from a family
// learned after both were filed; the older stays).
func (p *poster) indexed(fps []string) *github.Issue {
	var best *github.Issue
	for _, fp := range fps {
		is := p.index[fp]
		if is == nil {
			continue
		}
		if best == nil || (is.GetState() == "open") != (best.GetState() == "open") && is.GetState() == "open" ||
			is.GetState() == best.GetState() && is.GetNumber() < best.GetNumber() {
			best = is
		}
	}
	return best
}

// indexIssue keeps, per fingerprint, an open issue over a closed one and
// otherwise the newest (lists arrive newest first).
func (p *poster) indexIssue(fp string, is *github.Issue) {
	if p.index == nil {
		p.index, p.opens, p.scanned = map[string]*github.Issue{}, map[string][]*github.Issue{}, map[string]bool{}
	}
	if is.GetState() == "open" && !slices.ContainsFunc(p.opens[fp], func(o *github.Issue) bool { return o.GetNumber() == is.GetNumber() }) {
		p.opens[fp] = append(p.opens[fp], is)
	}
	old := p.index[fp]
	if old == nil || (old.GetState() != "open" && is.GetState() == "open") || old.GetNumber() == is.GetNumber() {
		p.index[fp] = is
	}
}

// ghCall describes one API call for do.
type ghCall struct {
	what      string
	write     bool // spaced ≥ WriteSpacing from the previous write
	repoLevel bool // 403/404/410 mean setup, not this request
	// once: a write that must not be repeated blind (a create): a failure
	// that leaves its outcome unknown returns postInDoubt at once.
	once bool
}

// do runs fn under the retry policy: 5xx and network failures back off
// (exponentially, with jitter) and retry up to Retries times, running
// reconcile first when given (done=true ends the call as a success), then
// end the scan's use of GitHub (OutageError); rate limits wait up to
// MaxWait, uncounted (a create then runs reconcile before it is sent
// again), or defer; the rest return. A once call that fails
// in a way that leaves its outcome unknown returns postInDoubt at once.
func (p *poster) do(ctx context.Context, c ghCall, fn func(context.Context) error, reconcile func(context.Context) (bool, error)) error {
	// The scan's GitHub check runs before its first request, whichever it
	// is (a known defect seen again within the hour makes none).
	if err := p.preflight(ctx); err != nil {
		return err
	}
	retries, rateWaits := 0, 0
	lookFirst := false // run reconcile before the next attempt
	for {
		if lookFirst && reconcile != nil {
			done, err := reconcile(ctx)
			if err != nil {
				return err
			}
			if done {
				return nil
			}
		}
		if c.write {
			if err := p.sleep(ctx, time.Until(p.lastWrite.Add(p.cfg.WriteSpacing))); err != nil {
				return err
			}
		}
		cctx, cancel := context.WithTimeout(ctx, p.cfg.CallTimeout)
		err := fn(cctx)
		cancel()
		if c.write {
			p.lastWrite = time.Now()
		}
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		f := ghClassify(err, p.cfg.Repo, c.repoLevel, p.cfg.SecondaryWait)
		// A rate limit, primary or secondary, is GitHub refusing: it did
		// not act, so the create is sent again after the wait it asks for.
		// Only an outcome really unknown (no answer, a 5xx) is in doubt.
		if c.once && f.kind == ghTransient {
			return &pipeline.InDoubtError{Err: fmt.Errorf("%s: %w", c.what, err)}
		}
		switch f.kind {
		case ghSetup:
			return f.setup
		case ghRateLimited:
			if f.wait > p.cfg.MaxWait || rateWaits >= postMaxRateWaits {
				return &pipeline.DeferralError{Reason: fmt.Sprintf("GitHub rate limit: retry after %s", f.wait.Round(time.Second)),
					Until: p.cfg.Now().Add(f.wait)}
			}
			rateWaits++
			p.cfg.Log.Info().Dur("wait", f.wait).Str("call", c.what).Msg("GitHub rate limit: waiting")
			if err := p.sleep(ctx, f.wait); err != nil {
				return err
			}
			lookFirst = c.once // a create is looked for before it is sent again
		case ghTransient:
			if retries >= p.cfg.Retries {
				return &pipeline.OutageError{Reason: fmt.Sprintf("%s: %v (gave up after %d attempts)", c.what, err, retries+1)}
			}
			retries++
			lookFirst = c.write
			backoff := p.cfg.BackoffBase << (retries - 1)
			backoff = backoff/2 + rand.N(backoff/2+1)
			p.cfg.Log.Debug().Err(err).Dur("backoff", backoff).Str("call", c.what).Msg("GitHub call failed; retrying")
			if err := p.sleep(ctx, backoff); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: %w", c.what, err)
		}
	}
}

func (p *poster) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
