package eventlog

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// GenerateDeployment writes a log shaped like one real the-loop deployment's:
// identifiers vary as they do in the field (repositories from a generated
// pool, branches, tmux targets, work items, delivery ids, actors, home
// directories on Linux, macOS and Windows, hosts, harness and library
// versions), and failures come as incidents: one or more retried failures
// with error text for one work item and delivery, then usually a terminal
// give-up record WITHOUT error text a little later, as the-loop writes it.
// Incidents on one work item interleave; some give-ups have no failure in
// the log at all (it happened before the log began).
//
// Unlike Generate it builds the log in memory (it sorts incidents' lines into
// time order), so it is meant for logs up to a few hundred thousand lines.
// truth, if not nil, hears every failure line (a candidate: level error or
// will_retry false) with its 1-based line number and true defect id; a
// give-up's defect is its incident's. A give-up with no failure before it is
// the defect "orphan:<event>:<source>:<harness>": nothing can tell two such
// apart but their fields.
func GenerateDeployment(w io.Writer, truth func(line int, defectID string), o DeploymentOptions) (DeploymentStats, error) {
	o, err := o.resolve()
	if err != nil {
		return DeploymentStats{}, err
	}
	g := newDeployGen(o)
	g.plan()
	return g.write(w, truth)
}

// DeploymentOptions shape a deployment log; zero fields take the defaults
// in brackets.
type DeploymentOptions struct {
	Lines       int
	Seed        int64
	FailureRate float64       // fraction of lines that are incident lines (0.03)
	Defects     int           // distinct defects with error text (30), besides deploySpecs' 11
	Repos       int           // repositories in the pool (80)
	Users       int           // people and service accounts (30)
	OrphanRate  float64       // fraction of incidents that are a lone give-up (0.08)
	Start       time.Time     // first line's time (DefaultStart)
	Gap         time.Duration // mean time between lines (2 s: 2,000 lines are about an hour)
}

// DeploymentStats describe what GenerateDeployment wrote.
type DeploymentStats struct {
	Lines     int `json:"lines"`
	Failures  int `json:"failures"`  // candidate lines
	Incidents int `json:"incidents"` // orphans included
	GiveUps   int `json:"give_ups"`  // give-ups without error text that follow a failure of theirs
	Orphans   int `json:"orphans"`   // give-ups with nothing before them
	// Interleaved counts incidents that began while another incident on the
	// same work item was still open.
	Interleaved int      `json:"interleaved"`
	DefectsUsed []string `json:"defects_used"` // true defect ids seen, sorted
}

func (o DeploymentOptions) resolve() (DeploymentOptions, error) {
	if o.Lines < 0 {
		return o, fmt.Errorf("eventlog: Lines is %d, want >= 0", o.Lines)
	}
	if o.FailureRate == 0 {
		o.FailureRate = 0.03
	}
	if o.Defects == 0 {
		o.Defects = 30
	}
	if o.Repos == 0 {
		o.Repos = 80
	}
	if o.Users == 0 {
		o.Users = 30
	}
	if o.OrphanRate == 0 {
		o.OrphanRate = 0.08
	}
	if o.Start.IsZero() {
		o.Start = DefaultStart
	}
	if o.Gap == 0 {
		o.Gap = 2 * time.Second
	}
	if o.FailureRate < 0 || o.FailureRate > 1 || math.IsNaN(o.FailureRate) || o.OrphanRate < 0 || o.OrphanRate > 1 ||
		o.Defects < 0 || o.Repos < 1 || o.Users < 1 || o.Gap < 0 {
		return o, fmt.Errorf("eventlog: invalid DeploymentOptions %+v", o)
	}
	return o, nil
}

// identity is who and where one incident (or noise line) is about.
type identity struct {
	owner, repo          string
	issue                int
	user, home, email    string
	sep                  string // the home's path separator
	host, branch, tmux   string
	actor, harnessVer    string
	version              string
	delivery             [2]uint64
	hasDelivery, hasTmux bool
	// Per incident: its harness and via (a defect of deploySpecs draws
	// them), and the values its deploySpecs placeholders render.
	harness, via, slug, scratch, login string
}

type person struct{ user, home, sep, email, host string }

type deployGen struct {
	o       DeploymentOptions
	r       *rng
	repos   [][2]string // owner, name
	people  []person
	defects []Defect // with error text only
	cumul   []float64
	lines   []deployLine
	stats   DeploymentStats
	session int // tmux session counter
	sc      scene
	rd      renderer
	line    jsonLine
	scratch []byte
	// open incidents' identities by work item, for interleaving
	recent []openIncident
}

type openIncident struct {
	id  identity
	t   time.Time
	end time.Time
}

type deployLine struct {
	t     time.Time
	seq   int
	b     []byte
	truth string // "" for a line that is not a candidate
}

const streamDeploy = 3

func newDeployGen(o DeploymentOptions) *deployGen {
	g := &deployGen{o: o, r: newRNG(o.Seed, streamDeploy)}
	g.rd = renderer{r: g.r, sc: &g.sc}
	g.line = jsonLine{b: make([]byte, 0, 4<<10)}
	for range o.Repos {
		g.repos = append(g.repos, [2]string{g.ownerName(), g.repoName()})
	}
	for range o.Users {
		g.people = append(g.people, g.newPerson())
	}
	// Defects: the bug catalogue's, those with error text (a bare give-up
	// is what an incident ends with, not a defect of its own).
	res, _ := resolve(Options{Defects: len(bugSpecs), Seed: o.Seed})
	for _, k := range res.rank {
		if d := res.catalog[k]; d.tmpl != "" && len(g.defects) < o.Defects {
			g.defects = append(g.defects, d)
		}
	}
	// deploySpecs' classes take every other rank from the second on, so
	// each is drawn often enough to vary.
	var mixed []Defect
	for i, ds := range deploySpecs {
		d := newDefect(KindBug, ds.s)
		d.harnesses, d.vias, d.events = ds.harnesses, ds.vias, ds.events
		if i < len(g.defects) {
			mixed = append(mixed, g.defects[i])
		}
		mixed = append(mixed, d)
	}
	if n := len(deploySpecs); n < len(g.defects) {
		mixed = append(mixed, g.defects[n:]...)
	}
	g.defects = mixed
	for i := len(g.defects); i < o.Defects+len(deploySpecs); i++ { // more than the catalogue: synthetic ones
		s := synthSpec(KindBug, i)
		if s.tmpl == "" {
			s = synthSpec(KindBug, i+1)
			s.id = fmt.Sprintf("synth-%03d-go-error-b", i)
			s.tmpl = fmt.Sprintf("%s: stage %03d: decode {tmp}/stage-%03d.json: unexpected EOF (pid {pid})", s.harness, i, i)
		}
		g.defects = append(g.defects, newDefect(KindBug, s))
	}
	var total float64
	for k := range g.defects {
		total += zipfWeight(k)
		g.cumul = append(g.cumul, total)
	}
	return g
}

// Word pools the generated names are built from: combined, they give
// thousands of distinct owners, repositories and users.
var (
	syllables = []string{"ac", "mo", "zen", "lu", "tri", "vex", "no", "ra", "kin", "do", "bel", "qua", "sor", "pi", "tan",
		"ex", "ly", "ori", "cel", "mar", "ist", "ha", "ven", "ko", "dyn", "ar", "el", "um", "ba", "fi"}
	ownerSuffixes = []string{"", "", "", "-labs", "-io", "hq", "-inc", "-dev", "-oss", "-corp"}
	repoWords     = []string{"api", "gateway", "billing", "docs", "auth", "web", "infra", "data", "pipeline", "mobile",
		"sdk", "cli", "core", "search", "payments", "frontend", "backend", "worker", "scheduler", "portal", "ml",
		"etl", "admin", "dashboard", "service", "proxy", "cache", "events", "reports", "mailer", "chat", "ops", "site"}
	firstNames = []string{"alice", "bob", "chen", "dana", "emeka", "fatima", "gosia", "hana", "ivan", "jose", "kofi",
		"lena", "mehmet", "nia", "oskar", "priya", "quinn", "rafael", "sven", "tomoko", "uma", "vlad", "wei", "ximena",
		"yusuf", "zoe"}
	serviceUsers = []string{"ubuntu", "ec2-user", "runner", "loop", "svc-loop", "ci", "build", "deploy"}
	slugWords    = []string{"fix", "login", "flaky", "test", "handle", "empty", "payload", "bump", "deps", "retry",
		"budget", "docs", "typo", "nil", "check", "rate", "limit", "support", "ghes", "cache", "timeout", "crash"}
	giveUpEvents = map[string]string{"poll": "poll.comment_failed", "queue": "agent.gave_up", "webhook": "dispatch.gave_up"}
	noiseEvents  = []string{"webhook.received", "dispatch.started", "agent.started", "agent.finished", "poll.tick",
		"git.fetch.done", "queue.claimed", "github.comment.posted", "pr.created"}
	loopVersions = []string{"1.4.1", "1.4.2", "1.5.0", "1.5.1-rc.2", "1.6.0"}
)

func (g *deployGen) ownerName() string {
	s := ""
	for range g.r.between(2, 3) {
		s += g.r.pick(syllables)
	}
	return s + g.r.pick(ownerSuffixes)
}

func (g *deployGen) repoName() string {
	s := g.r.pick(repoWords)
	switch g.r.intn(6) {
	case 0, 1:
		s += "-" + g.r.pick(repoWords)
	case 2:
		s += "_" + g.r.pick(repoWords)
	case 3:
		s += strconv.Itoa(g.r.between(2, 9))
	case 4:
		s += "." + g.r.pick([]string{"js", "py", "go", "rs", "io"})
	}
	return s
}

func (g *deployGen) newPerson() person {
	u := g.r.pick(firstNames)
	switch g.r.intn(5) {
	case 0:
		u = u[:1] + g.r.pick(firstNames)
	case 1:
		u += strconv.Itoa(g.r.between(1, 99))
	case 2:
		u = g.r.pick(serviceUsers)
	}
	p := person{user: u, email: u + "@" + g.ownerName() + ".example", sep: "/"}
	switch g.r.intn(6) {
	case 0, 1, 2:
		p.home = "/home/" + u
		p.host = fmt.Sprintf("ip-10-%d-%d-%d", g.r.intn(8), g.r.intn(256), g.r.between(1, 254))
	case 3:
		p.home = "/Users/" + u
		p.host = u + "-mbp.local"
		if g.r.chance(0.3) {
			// A macOS account named after its owner: a space in every path.
			p.home = "/Users/" + strings.ToUpper(u[:1]) + u[1:] + " " + strings.ToUpper(g.r.pick(firstNames)[:1]) + "."
		}
	case 4:
		p.home = `C:\Users\` + u
		p.sep = `\`
		p.host = "DESKTOP-" + string(appendHex(nil, g.r.next(), 7))
	default:
		p.home = "/srv/" + u
		p.host = "loop-prod-" + strconv.Itoa(g.r.between(1, 40))
	}
	return p
}

func (g *deployGen) branch(issue int) string {
	switch g.r.intn(5) {
	case 0:
		return "main"
	case 1:
		return "feature/" + g.r.pick(slugWords) + "-" + g.r.pick(slugWords)
	}
	return "the-loop/" + strconv.Itoa(issue) + "-" + g.r.pick(slugWords) + "-" + g.r.pick(slugWords) + "-" + string(appendHex(nil, g.r.next(), 6))
}

// newIdentity is a fresh work item; its delivery and session are its own.
func (g *deployGen) newIdentity() identity {
	rp := g.repos[g.r.intn(len(g.repos))]
	p := g.people[g.r.intn(len(g.people))]
	id := identity{owner: rp[0], repo: rp[1], issue: g.r.between(1, 9999), user: p.user, home: p.home, sep: p.sep,
		email: p.email, host: p.host, version: g.r.pick(loopVersions)}
	id.branch = g.branch(id.issue)
	id.actor = g.people[g.r.intn(len(g.people))].user
	if g.r.chance(0.1) {
		id.actor = g.r.pick([]string{"dependabot[bot]", "renovate[bot]", "github-actions[bot]"})
	}
	g.newDelivery(&id)
	return id
}

// newDelivery starts another delivery (and agent session) on id's work item.
func (g *deployGen) newDelivery(id *identity) {
	id.delivery = [2]uint64{g.r.next(), g.r.next()}
	g.session++
	id.tmux = "loop-" + id.repo + "-" + strconv.Itoa(g.session) + ":0.0"
	id.harnessVer = fmt.Sprintf("%d.%d.%d", g.r.between(0, 2), g.r.between(0, 30), g.r.between(0, 20))
}

func (g *deployGen) pickDefect() *Defect {
	x := g.r.float() * g.cumul[len(g.cumul)-1]
	k := sort.SearchFloat64s(g.cumul, x)
	return &g.defects[min(k, len(g.defects)-1)]
}

func (g *deployGen) span() time.Duration { return time.Duration(g.o.Lines) * g.o.Gap }

// plan lays out incidents until they fill their share of lines, then noise.
func (g *deployGen) plan() {
	budget := int(math.Round(float64(g.o.Lines) * g.o.FailureRate))
	if len(g.defects) == 0 {
		budget = 0
	}
	span := g.span()
	for budget > 0 {
		at := g.o.Start.Add(time.Duration(g.r.float() * float64(span) * 0.97))
		g.stats.Incidents++
		if g.r.chance(g.o.OrphanRate) {
			id := g.newIdentity()
			src := g.r.pick([]string{"poll", "queue", "webhook"})
			harness := ""
			if src != "poll" {
				harness = g.r.pick([]string{"claude", "codex", "cursor"})
			}
			ev := giveUpEvents[src]
			g.giveUp(at, &id, ev, src, harness, "orphan:"+ev+":"+src+":"+harness)
			g.stats.Orphans++
			budget--
			continue
		}
		d := g.pickDefect()
		id, interleaved := g.identityFor(&at)
		budget -= g.incident(at, d, &id, interleaved)
	}
	for len(g.lines) < g.o.Lines {
		g.noise(g.o.Start.Add(time.Duration(g.r.float() * float64(span))))
	}
	g.lines = g.lines[:min(len(g.lines), g.o.Lines)]
}

// identityFor starts a new incident's identity: a quarter of the time on
// the work item of a recent incident, with a delivery of its own, starting
// while that one is still open (*at moves there).
func (g *deployGen) identityFor(at *time.Time) (identity, bool) {
	if g.r.chance(0.25) && len(g.recent) > 0 {
		o := g.recent[g.r.intn(len(g.recent))]
		*at = o.t.Add(time.Duration(g.r.float()*float64(o.end.Sub(o.t))) + time.Second)
		id := o.id
		g.newDelivery(&id)
		// Two incidents open on one work item at once are two runs, on two
		// branches: the same branch too would leave nothing in the log to
		// tell their give-ups apart.
		for id.branch == o.id.branch {
			id.branch = g.branch(id.issue)
		}
		return id, true
	}
	if g.r.chance(0.15) && len(g.recent) > 0 {
		// Another defect on a recent incident's work item, after that
		// incident ended: its give-up must join this one.
		o := g.recent[g.r.intn(len(g.recent))]
		*at = o.end.Add(time.Duration(g.r.between(10, 40*60)) * time.Second)
		id := o.id
		g.newDelivery(&id)
		return id, false
	}
	return g.newIdentity(), false
}

// incident writes one incident's lines from at and returns how many.
func (g *deployGen) incident(at time.Time, d *Defect, id *identity, interleaved bool) int {
	d = g.variant(d, id)
	correlated := d.Source != "cli" && d.Source != "scheduler"
	id.hasDelivery = correlated && d.Source != "poll"
	// An agent's session, or a failure that names one, carries its target.
	id.hasTmux = correlated && (d.Harness != "" || strings.Contains(d.tmpl, "{tmux}"))
	fails := g.r.between(1, 3)
	// How it ends: a give-up without text (most), a last failure that
	// says will_retry false itself, or still retrying when the log ends.
	// Records without a work item cannot be linked: they end on their own.
	ending := g.r.intn(10)
	if !correlated && ending < 7 {
		ending = 7
	}
	t := at
	n := 0
	for k := range fails {
		if k > 0 {
			t = t.Add(time.Duration(g.r.between(2_000, 120_000)) * time.Millisecond)
		}
		retry := k < fails-1 || ending == 9 || ending < 7
		g.failure(t, d, id, k+1, retry)
		n++
	}
	end := t
	if ending < 7 {
		end = t.Add(time.Duration(g.r.between(3_000, 20*60_000)) * time.Millisecond)
		if id.hasTmux && g.r.chance(0.3) {
			// The poller reports the give-up of a dispatch whose failures
			// another component logged: its own source and event, the
			// session and work item, no delivery, no harness.
			poll := *id
			poll.hasDelivery = false
			g.giveUp(end, &poll, "poll.session_gave_up", "poll", "", d.ID)
		} else {
			g.giveUp(end, id, giveUpEvents[d.Source], d.Source, d.Harness, d.ID)
		}
		g.stats.GiveUps++
		n++
	}
	if interleaved {
		g.stats.Interleaved++
	}
	if correlated {
		g.recent = append(g.recent, openIncident{id: *id, t: at, end: end})
		if len(g.recent) > 32 {
			g.recent = g.recent[1:]
		}
	}
	return n
}

// variant is the defect as one incident shows it: a deploySpecs defect
// draws its harness, via and event, and the incident draws the values its
// placeholders render.
func (g *deployGen) variant(d *Defect, id *identity) *Defect {
	id.slug = g.r.pick(slugWords) + "-" + g.r.pick(slugWords)
	id.scratch = g.r.pick(scratchNames)
	id.login = g.r.pick([]string{id.user, "root", "dev", "git"}) + "@" + g.r.pick(append([]string{strings.ToLower(id.host)}, loginHosts...))
	if len(d.harnesses)+len(d.vias)+len(d.events) == 0 {
		id.harness, id.via = d.Harness, d.Via
		return d
	}
	v := *d
	if len(d.harnesses) > 0 {
		v.Harness = g.r.pick(d.harnesses)
	}
	if len(d.vias) > 0 {
		v.Via = g.r.pick(d.vias)
	}
	if len(d.events) > 0 {
		v.Event = g.r.pick(d.events)
	}
	id.harness, id.via = v.Harness, v.Via
	return &v
}

func (g *deployGen) begin(t time.Time, event, level string) *jsonLine {
	g.line.begin(t, event, level)
	return &g.line
}

func (g *deployGen) failure(t time.Time, d *Defect, id *identity, attempts int, retry bool) {
	l := g.begin(t, d.Event, "error")
	l.defectFields(d, attempts, retry, id.harnessVer)
	g.sc = scene{now: t, issue: id.issue, dep: id}
	g.scratch = g.rd.render(g.scratch[:0], d.tmpl)
	l.bytes("error", g.scratch)
	g.identityFields(l, id, d.Source != "cli" && d.Source != "scheduler", id.hasDelivery, id.hasTmux)
	l.int("duration_ms", g.r.between(40, 600_000))
	l.end()
	g.emit(t, d.ID)
}

// giveUp writes the terminal record: no error text, will_retry false, the
// incident's work item and delivery (poll incidents have none) and, half
// the time, its session.
func (g *deployGen) giveUp(t time.Time, id *identity, event, source, harness, truth string) {
	l := g.begin(t, event, "warning")
	l.str("source", source)
	if harness != "" {
		l.str("harness", harness)
	}
	l.int("attempts", 3)
	l.bool("will_retry", false)
	l.str("reason", "max attempts reached")
	// Half the give-ups name the session; one without a delivery always
	// does (else only the work item would tie it).
	g.identityFields(l, id, true, id.hasDelivery, id.hasTmux && (!id.hasDelivery || g.r.chance(0.5)))
	l.end()
	g.emit(t, truth)
}

func (g *deployGen) identityFields(l *jsonLine, id *identity, workItem, delivery, tmux bool) {
	// A third of the lines come from another logger of the deployment,
	// which names the identity fields its own way.
	other := g.r.chance(0.3)
	key := func(k string) string {
		if other {
			return otherLoggerKeys[k]
		}
		return k
	}
	if workItem {
		l.str("work_item", "github:"+id.owner+"/"+id.repo+"#"+strconv.Itoa(id.issue))
		l.str(key("branch"), id.branch)
		l.str(key("actor"), id.actor)
	}
	if delivery {
		l.start("delivery_id")
		l.b = appendUUID(l.b, id.delivery[0], id.delivery[1])
		l.closeStr()
	}
	if tmux {
		l.str("tmux_target", id.tmux)
	}
	l.str(key("cwd"), id.home+id.sep+g.r.pick([]string{"work", "src", "code", "projects"})+id.sep+id.repo)
	l.str(key("host"), id.host)
	l.str("version", id.version)
}

func (g *deployGen) noise(t time.Time) {
	id := g.newIdentity()
	ev := g.r.pick(noiseEvents)
	l := g.begin(t, ev, g.r.pick([]string{"info", "info", "debug"}))
	l.str("source", g.r.pick([]string{"webhook", "queue", "poll"}))
	if g.r.chance(0.5) {
		l.str("harness", g.r.pick([]string{"claude", "codex", "cursor"}))
	}
	l.str("msg", ev)
	id.hasDelivery, id.hasTmux = true, g.r.chance(0.5)
	g.identityFields(l, &id, true, true, id.hasTmux)
	l.int("duration_ms", g.r.between(1, 90_000))
	l.end()
	g.emit(t, "")
}

func (g *deployGen) emit(t time.Time, truth string) {
	g.lines = append(g.lines, deployLine{t: t, seq: len(g.lines), b: append([]byte(nil), g.line.b...), truth: truth})
}

func (g *deployGen) write(w io.Writer, truth func(int, string)) (DeploymentStats, error) {
	sort.SliceStable(g.lines, func(i, j int) bool { return g.lines[i].t.Before(g.lines[j].t) })
	bw := bufio.NewWriterSize(w, 256<<10)
	used := map[string]bool{}
	for i, l := range g.lines {
		if _, err := bw.Write(l.b); err != nil {
			return g.stats, err
		}
		if l.truth != "" {
			g.stats.Failures++
			used[l.truth] = true
			if truth != nil {
				truth(i+1, l.truth)
			}
		}
	}
	g.stats.Lines = len(g.lines)
	for id := range used {
		g.stats.DefectsUsed = append(g.stats.DefectsUsed, id)
	}
	sort.Strings(g.stats.DefectsUsed)
	return g.stats, bw.Flush()
}

// deploySpecs are defects only deployment-shaped logs carry, each varying
// one class of data the way a deployment does: the record's own values
// glued into larger tokens, an enumerated field echoed in the text, one
// text under several events, quoted values that are no code names, logins
// at hosts. Two generic texts under two events stay two defects.
var deploySpecs = []struct {
	s                       spec
	harnesses, vias, events []string
}{
	{s: spec{"session-file-truncated", "session.restore.failed", "error", "queue", "issues", "claude", "queue", 0,
		"restore session {owner}__{reponame}__{issue}.json: unexpected end of JSON input"}},
	{s: spec{"issue-branch-exists", "git.switch.failed", "error", "webhook", "issues", "codex", "queue", 128,
		"git switch -c issue-{issue}-{slug}: exit status 128: fatal: a branch named 'issue-{issue}-{slug}' already exists"}},
	{s: spec{"transcript-quota", "agent.transcript.failed", "error", "queue", "issue_comment", "cursor", "queue", 0,
		"save transcript {tmuxsess}.{n}.log: disk quota exceeded"}},
	{s: spec{"stale-work-lock", "queue.lock.failed", "error", "queue", "issues", "", "queue", 0,
		"lock {owner}.{reponame}.{issue}.lock is stale (held by pid {pid})"}},
	{s: spec{"harness-exec-format", "agent.spawn.failed", "error", "queue", "issues", "claude", "queue", 126,
		"spawn {harness}: exec format error (is the {harness} binary built for this CPU?)"},
		harnesses: []string{"claude", "cursor", "codex", "gemini"}},
	{s: spec{"drain-refused", "dispatch.refused", "error", "webhook", "issues", "", "queue", 0,
		"refusing {via} dispatch while the drain flag is set (set by {actor})"},
		vias: []string{"queue", "direct", "cron"}},
	{s: spec{"gh-binary-missing", "poll.report_failed", "error", "poll", "issues", "", "queue", 0,
		"exec: \"gh\": executable file not found in $PATH (needed to report the run's status)"},
		events: []string{"poll.report_failed", "control.notify_failed", "session.notify_failed"}},
	{s: spec{"heartbeat-canceled", "worker.heartbeat.failed", "error", "queue", "issues", "", "queue", 0, "context canceled"}},
	{s: spec{"ack-canceled", "queue.ack.failed", "error", "queue", "issues", "", "queue", 0, "context canceled"}},
	{s: spec{"worktree-remove-odd-name", "git.worktree.failed", "error", "webhook", "pull_request", "claude", "queue", 128,
		"git worktree remove '{scratch}': exit status 128: fatal: '{scratch}' is not a working tree"}},
	{s: spec{"ssh-publickey-denied", "git.fetch.failed", "error", "webhook", "issues", "cursor", "queue", 128,
		"git fetch origin: exit status 128: {login}: Permission denied (publickey).\nfatal: Could not read from remote repository."}},
}

// Per-record values of deploySpecs' placeholders.
var (
	scratchNames = []string{"~scratch", "~wip", "-rf", "-xdf", "topic/cache-warmup", "wip/retry-loop", "old copy", "tmp\tcopy"}
	loginHosts   = []string{"ci", "build-07.(none)", "runner-3", "bastion", "(none)"}
	// otherLoggerKeys name identity fields as another logger of the same
	// deployment does: the-loop's branch, actor, cwd and host.
	otherLoggerKeys = map[string]string{"branch": "git_branch", "actor": "userLogin", "cwd": "workdir", "host": "hostname"}
)
