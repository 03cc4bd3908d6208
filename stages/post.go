package stages

// The post stage is the exactly-once protocol over a tracker.Tracker, in
// three files: this one (the stage, its failure handling, the marker
// lookup), post_create.go (filing a new defect) and post_existing.go (a
// defect whose issue exists). post_body.go writes and reads the bodies and
// markers; post_trust.go decides whose markers count.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/stages/budget"
	"github.com/the-loop/the-loop-diagnose/stages/issue"
	"github.com/the-loop/the-loop-diagnose/stages/tracker"
	"github.com/the-loop/the-loop-diagnose/store"
)

const (
	// postCreateSettle is how long a create in doubt is given to show in
	// GitHub's listing before the defect is filed again.
	postCreateSettle = 10 * time.Minute
	// postOccurrenceEvery throttles edits of the occurrence comment.
	postOccurrenceEvery = time.Hour
	// postScanPages bounds the unfiltered marker scan, the last resort for an
	// issue filed by a token whose label was dropped.
	postScanPages = 5
)

// Reasons a closed issue counts as a maintainer's "won't fix".
var postDismissLabels = []string{"wontfix", "won't fix", "invalid", "duplicate"}

// PostConfig configures the post stage.
type PostConfig struct {
	// Tracker is where issues are filed (tracker.GitHub; tracker.Memory in
	// tests), with its pacing and retries.
	Tracker tracker.Tracker
	Repo    string // "owner/name"
	Label   string
	Store   *store.Store
	Now     func() time.Time
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
	// Preflight, when set, is called before the stage first asks the
	// tracker anything (the scan's tracker.Check, shared with the agent
	// stage); its error is that call's.
	Preflight func(context.Context) error
	// TrustedAuthors are logins besides the token's own (GET /user) whose
	// issues' markers count: a fleet's other bot accounts, a GitHub App's
	// "name[bot]" when its token may not read /user.
	TrustedAuthors []string
	// Fleet is the scan's part in the fleet: a create reserves one issue
	// of the fleet-wide daily cap (nil: none to reserve).
	Fleet *budget.FleetScan
}

// errFleetCap rolls back a create's intent when the fleet-wide cap has no
// room left.
var errFleetCap = errors.New("the daily issue cap is reached fleet-wide")

// NewPost files each new defect on GitHub exactly once and records what it
// learned; every other report passes through as its outcome. Writes are
// serial: one report is handled at a time.
func NewPost(cfg PostConfig) pipeline.Stage[pipeline.Report, pipeline.Outcome] {
	err := cfg.validate()
	t := tracker.WithCheck(cfg.Tracker, cfg.Preflight)
	return func(ctx context.Context, in <-chan pipeline.Report, out chan<- pipeline.Outcome) error {
		if err != nil {
			return err
		}
		p := &poster{cfg: cfg, t: t}
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

// validate names what NewPost cannot work without; it defaults nothing
// (the config is the one layer of defaults).
func (cfg PostConfig) validate() error {
	switch {
	case cfg.Tracker == nil:
		return errors.New("post: no tracker to file on")
	case cfg.Store == nil:
		return errors.New("post: no store")
	case cfg.Now == nil:
		return errors.New("post: no clock (PostConfig.Now)")
	case cfg.Label == "":
		return errors.New("post: no label (selfDiagnosis.label)")
	}
	return nil
}

// poster is one scan's posting state.
type poster struct {
	cfg         PostConfig
	t           tracker.Tracker // cfg.Tracker behind the scan's preflight
	owner, name string

	login        string // the token's login; "" when /user is not allowed
	loginChecked bool
	warned       map[string]bool // foreign markers logged this scan
	labelChecked bool
	labelWarned  bool
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
	index   map[string]*tracker.Issue
	opens   map[string][]*tracker.Issue
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

// repo settles the repository issues go to: the configured one, else
// the outcome's.
func (p *poster) repo(o *pipeline.Outcome) error {
	if p.cfg.Repo == "" {
		p.cfg.Repo = o.Repo
	}
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
	if err := p.repo(o); err != nil {
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
	var found *tracker.Issue
	if cached && ref.Number > 0 {
		is, err := p.getIssue(ctx, ref.Number)
		if err != nil {
			return err
		}
		if is != nil && p.ownIssue(is, fp) {
			found = is
		}
	}
	fps := issue.MarkerFingerprints(o.Group)
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
		if since := p.cfg.Now().Sub(pending.At); since < postCreateSettle {
			return &pipeline.OutageError{Reason: fmt.Sprintf("the create of %s %s ago is in doubt and GitHub does not list it yet: waiting up to %s before filing it again",
				fp, since.Round(time.Second), postCreateSettle)}
		}
		p.cfg.Log.Info().Str("fingerprint", fp).Msg("the create in doubt never showed on GitHub: filing the defect again")
	}
	return p.create(ctx, o)
}

func (p *poster) mine(is *tracker.Issue) bool {
	return p.login != "" && strings.EqualFold(is.Author, p.login)
}

// getIssue refreshes a cached issue; nil when it is gone (deleted or moved).
func (p *poster) getIssue(ctx context.Context, n int) (*tracker.Issue, error) {
	return p.t.Issue(ctx, n)
}

// ensureLogin learns the token's login once (for the creator filter and to
// tell our issues from others'). Tokens that may not read /user (GitHub App
// installations) go without: only TrustedAuthors are trusted then, until
// the scan's first create tells who the token is.
func (p *poster) ensureLogin(ctx context.Context) error {
	if p.loginChecked {
		return nil
	}
	login, err := p.t.Login(ctx)
	if err != nil {
		return err
	}
	p.loginChecked = true
	p.login = login
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
func (p *poster) lookup(ctx context.Context, fps []string, fresh bool) (*tracker.Issue, error) {
	if err := p.ensureLogin(ctx); err != nil {
		return nil, err
	}
	if fresh || p.index == nil {
		p.index, p.opens, p.scanned = map[string]*tracker.Issue{}, map[string][]*tracker.Issue{}, map[string]bool{}
	}
	type query struct {
		key string
		q   tracker.Query
	}
	queries := []query{{"label", tracker.Query{Label: p.cfg.Label}}}
	// Only trusted authors' issues count, so theirs are the ones worth
	// listing when the label was dropped.
	for _, login := range append([]string{p.login}, p.cfg.TrustedAuthors...) {
		if login != "" && (login == p.login || !strings.EqualFold(login, p.login)) {
			queries = append(queries, query{"creator:" + strings.ToLower(login), tracker.Query{Creator: login}})
		}
	}
	queries = append(queries, query{"recent", tracker.Query{Pages: postScanPages}})
	for _, q := range queries {
		if is := p.indexed(fps); is != nil {
			return is, nil
		}
		if p.scanned[q.key] {
			continue
		}
		tq := q.q
		tq.State = "all"
		err := p.t.ListIssues(ctx, tq, func(is tracker.Issue) bool {
			for _, fp := range p.trustedMarkers(&is) {
				p.indexIssue(fp, &is)
			}
			return true
		})
		if err != nil {
			return nil, err
		}
		p.scanned[q.key] = true
	}
	return p.indexed(fps), nil
}

// indexed is the issue the index holds for any of fps: an open one over a
// closed one, then the oldest (two issues for one defect come from a family
// learned after both were filed; the older stays).
func (p *poster) indexed(fps []string) *tracker.Issue {
	var best *tracker.Issue
	for _, fp := range fps {
		is := p.index[fp]
		if is == nil {
			continue
		}
		if best == nil || (is.State == "open") != (best.State == "open") && is.State == "open" ||
			is.State == best.State && is.Number < best.Number {
			best = is
		}
	}
	return best
}

// indexIssue keeps, per fingerprint, an open issue over a closed one and
// otherwise the newest (lists arrive newest first).
func (p *poster) indexIssue(fp string, is *tracker.Issue) {
	if p.index == nil {
		p.index, p.opens, p.scanned = map[string]*tracker.Issue{}, map[string][]*tracker.Issue{}, map[string]bool{}
	}
	if is.State == "open" && !slices.ContainsFunc(p.opens[fp], func(o *tracker.Issue) bool { return o.Number == is.Number }) {
		p.opens[fp] = append(p.opens[fp], is)
	}
	old := p.index[fp]
	if old == nil || (old.State != "open" && is.State == "open") || old.Number == is.Number {
		p.index[fp] = is
	}
}

func ptr(s string) *string { return &s }
