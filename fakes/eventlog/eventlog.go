// Package eventlog generates realistic, deterministic the-loop event logs
// (events.jsonl) with known ground truth: which lines are failures, which
// defect each failure belongs to, and which lines are corrupt. It streams in
// constant memory, so it serves both small fixtures and multi-gigabyte
// benchmark logs.
//
// A log is ~99% debug/info noise over many event types, a few warnings that
// are not failures, diagnosis.* events (which a reader must ignore), failures
// drawn Zipf-like from a catalogue of defects whose error texts vary only in
// volatile tokens, transient failures that later succeed, operator-environment
// failures, and a few corrupt lines of several kinds.
//
// A failure line is exactly a line the-loop-diagnose must pick: level "error",
// or a give-up ("will_retry": false) that is not a diagnosis.* event. Noise
// never matches that rule.
//
// Defects whose errors carry fake secrets or PII (see Defect.Secrets):
// git-fetch-pull-ref-token and git-push-rpc-400 (a ghp_ token in the remote
// URL), queue-dsn-password (password=hunter2), git-push-email-privacy (the
// user's e-mail address). Every failure line also carries the private fields
// work_item, cwd and delivery_id.
package eventlog

//go:generate go run ./cmd/gen-events --lines 2000 --seed 1 --failure-rate 0.03 --defects 10 --corrupt-rate 0.002 --transients 2 --environment 2 --quiet --out ../../testdata/sample-events.jsonl

import (
	"bufio"
	"errors"
	"io"
	"math"
	"sort"
	"time"
)

// Defaults applied to zero-valued Options fields.
const (
	DefaultFailureRate = 0.01
	DefaultCorruptRate = 0.0005
	DefaultDefects     = 40
)

// DefaultStart is the first line's timestamp when Options.Start is zero.
var DefaultStart = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// Options shape a log. Zero fields take the defaults; a negative
// FailureRate, CorruptRate or Defects means none.
type Options struct {
	Lines       int       // total lines, corrupt ones included
	Seed        int64     // same Options give byte-identical output
	FailureRate float64   // fraction of lines that are failures (0.01)
	Defects     int       // distinct bugs (40)
	CorruptRate float64   // fraction of corrupt lines (0.0005)
	Start       time.Time // first ts (2026-11-01T00:00:00Z); each line is a few hundred ms later
	Transients  int       // defects that heal: a will_retry:true failure, later X.succeeded for the same work item
	Environment int       // operator-environment defects: missing executable, 401, EACCES, ENOSPC, DNS…
}

// Stats describe what Generate wrote.
type Stats struct {
	Lines       int      `json:"lines"`
	Failures    int      `json:"failures"`
	Corrupt     int      `json:"corrupt"`
	DefectsUsed []string `json:"defects_used"` // IDs of defects emitted at least once, in catalogue order
}

// SampleOptions are the options of the committed testdata/sample-events.jsonl.
func SampleOptions() Options {
	return Options{
		Lines:       2000,
		Seed:        1,
		FailureRate: 0.03,
		Defects:     10,
		CorruptRate: 0.002,
		Transients:  2,
		Environment: 2,
	}
}

// Generate writes a log to w.
func Generate(w io.Writer, o Options) (Stats, error) {
	return GenerateWithTruth(w, nil, o)
}

// GenerateWithTruth writes a log to w and calls truth, if not nil, once per
// failure line with its 1-based line number and defect ID. The log itself
// holds no hint of the truth.
func GenerateWithTruth(w io.Writer, truth func(line int, defectID string), o Options) (Stats, error) {
	res, err := resolve(o)
	if err != nil {
		return Stats{}, err
	}
	g := newGenerator(w, res)
	g.truth = truth
	err = g.run()
	return g.stats(), err
}

// Random streams, kept apart so that, say, ranking does not shift content.
const (
	streamRank = iota + 1
	streamLines
)

// overlongLines is the size of the one over-long line a big log gets: just
// past the 1 MiB a reader is expected to cap lines at.
const (
	overlongBytes    = 1<<20 + 64<<10
	overlongMinLines = 100_000
)

type pending struct {
	due     int // earliest line index for the success
	defect  int
	scene   scene
	attempt int
}

type generator struct {
	res   resolved
	w     *bufio.Writer
	r     *rng
	rd    renderer
	truth func(int, string)

	line    jsonLine
	scratch []byte // a rendered value before it is escaped into line
	aux     []byte // a second line, for corrupt lines built from two
	now     time.Time
	sc      scene

	wantFailures, wantCorrupt int // still to place
	failuresDone, corrupt     int
	failuresPlanned           int
	nextCovered               int // next rank guaranteed an occurrence
	used                      []bool
	pending                   []pending
	overlongDone              bool
	lines                     int
}

func newGenerator(w io.Writer, res resolved) *generator {
	g := &generator{
		res:     res,
		w:       bufio.NewWriterSize(w, 256<<10),
		r:       newRNG(res.Seed, streamLines),
		now:     res.Start,
		used:    make([]bool, len(res.catalog)),
		pending: make([]pending, 0, 64),
		line:    jsonLine{b: make([]byte, 0, 8<<10)},
		scratch: make([]byte, 0, 8<<10),
		aux:     make([]byte, 0, 8<<10),
	}
	g.rd = renderer{r: g.r, sc: &g.sc}
	g.wantFailures = int(math.Round(float64(res.Lines) * res.FailureRate))
	g.wantCorrupt = int(math.Round(float64(res.Lines) * res.CorruptRate))
	if len(res.catalog) == 0 {
		g.wantFailures = 0
	}
	g.failuresPlanned = g.wantFailures
	return g
}

func (g *generator) stats() Stats {
	s := Stats{Lines: g.lines, Failures: g.failuresDone, Corrupt: g.corrupt}
	for i, u := range g.used {
		if u {
			s.DefectsUsed = append(s.DefectsUsed, g.res.catalog[i].ID)
		}
	}
	return s
}

func (g *generator) run() error {
	n := g.res.Lines
	for i := range n {
		g.now = g.now.Add(time.Duration(g.r.between(40, 560))*time.Millisecond + time.Duration(g.r.intn(1000))*time.Microsecond)
		remaining := n - i
		// Selection sampling: each kind gets exactly its planned count, spread
		// evenly, without knowing the future.
		switch x := g.r.intn(remaining); {
		case x < g.wantCorrupt:
			g.wantCorrupt--
			g.writeCorrupt(i)
		case x < g.wantCorrupt+g.wantFailures:
			g.wantFailures--
			g.writeFailure(i, remaining)
		default:
			g.writeQuiet(i, remaining)
		}
		if _, err := g.w.Write(g.line.b); err != nil {
			return err
		}
		g.lines++
	}
	return g.w.Flush()
}

// writeQuiet writes a line that is not a failure: a due transient's success,
// or noise. Successes take the place of noise lines, so they are forced out
// before the log runs out of noise lines to replace.
func (g *generator) writeQuiet(i, remaining int) {
	if k := g.duePending(i, remaining); k >= 0 {
		p := g.pending[k]
		g.pending[k] = g.pending[len(g.pending)-1]
		g.pending = g.pending[:len(g.pending)-1]
		g.writeSuccess(p)
		return
	}
	g.writeNoise(i)
}

func (g *generator) duePending(i, remaining int) int {
	quietLeft := remaining - g.wantCorrupt - g.wantFailures
	best := -1
	for k, p := range g.pending {
		if best < 0 || p.due < g.pending[best].due {
			best = k
		}
	}
	if best >= 0 && (g.pending[best].due <= i || quietLeft <= len(g.pending)) {
		return best
	}
	return -1
}

func (g *generator) pickDefect(remaining int) int {
	res := g.res
	var idx int
	// The first occurrences of every defect are spread over the log, so a
	// small log still shows each; later ones follow the Zipf weights.
	if g.nextCovered < len(res.rank) && g.nextCovered*g.failuresPlanned/len(res.rank) <= g.failuresDone {
		idx = res.rank[g.nextCovered]
		g.nextCovered++
	} else {
		x := g.r.float() * res.cumul[len(res.cumul)-1]
		k := sort.SearchFloat64s(res.cumul, x)
		idx = res.rank[min(k, len(res.rank)-1)]
	}
	if res.catalog[idx].Kind == KindTransient {
		// Its success needs a quiet line later on; near the end there may be none.
		quietLeft := remaining - 1 - g.wantCorrupt - g.wantFailures
		if quietLeft <= len(g.pending) {
			for _, j := range res.rank {
				if res.catalog[j].Kind != KindTransient {
					return j
				}
			}
		}
	}
	return idx
}

func (g *generator) newScene(failure bool) {
	g.sc.now = g.now
	g.sc.user = g.r.intn(len(users))
	g.sc.repo = g.r.intn(len(repos))
	// Failures of bugs use issue numbers noise never does, so no unrelated
	// success line can look like their retry succeeding.
	if failure {
		g.sc.issue = g.r.between(4000, 8999)
	} else {
		g.sc.issue = g.r.between(1, 3999)
	}
	g.sc.id = [2]uint64{g.r.next(), g.r.next()}
}

func (g *generator) version(i int) string {
	if i < g.res.Lines*45/100 {
		return versions[0]
	}
	return versions[1]
}

func (g *generator) writeFailure(i, remaining int) {
	idx := g.pickDefect(remaining)
	if idx < 0 || idx >= len(g.res.catalog) {
		panic(errors.New("eventlog: defect index out of range"))
	}
	d := &g.res.catalog[idx]
	g.newScene(true)
	attempts, willRetry := 3, false
	switch {
	case d.Kind == KindTransient:
		attempts, willRetry = g.r.between(1, 2), true
		g.sc.issue = g.r.between(1, 3999)
	case d.Level == "error":
		attempts = g.r.between(1, 3)
		willRetry = attempts < 3
	}
	g.writeFailureLine(i, d, attempts, willRetry)
	if d.Kind == KindTransient {
		g.pending = append(g.pending, pending{due: i + g.r.between(3, 120), defect: idx, scene: g.sc, attempt: attempts + 1})
	}
	g.used[idx] = true
	g.failuresDone++
	if g.truth != nil {
		g.truth(i+1, d.ID)
	}
}

func (g *generator) writeFailureLine(i int, d *Defect, attempts int, willRetry bool) {
	l := &g.line
	l.begin(g.now, d.Event, d.Level)
	l.defectFields(d, attempts, willRetry, "")
	if d.tmpl != "" {
		g.scratch = g.rd.render(g.scratch[:0], d.tmpl)
		l.bytes("error", g.scratch)
	}
	if d.Source != "cli" && d.Source != "scheduler" {
		g.appendWorkItem()
		g.appendDelivery()
	}
	g.appendCwd()
	l.int("duration_ms", g.r.between(40, 600_000))
	l.str("version", g.version(i))
	l.end()
}

func (g *generator) writeSuccess(p pending) {
	d := &g.res.catalog[p.defect]
	g.sc = p.scene
	l := &g.line
	l.begin(g.now, d.success, "info")
	l.str("source", d.Source)
	if d.GhEvent != "" {
		l.str("gh_event", d.GhEvent)
	}
	if d.Harness != "" {
		l.str("harness", d.Harness)
	}
	l.str("via", d.Via)
	l.int("attempts", p.attempt)
	g.appendWorkItem()
	g.appendDelivery()
	g.appendCwd()
	l.int("duration_ms", g.r.between(400, 900_000))
	l.str("version", g.version(g.lines))
	l.end()
}

// successEvent maps "x.failed" to "x.succeeded".
func successEvent(failed string) string {
	const suffix = ".failed"
	if len(failed) > len(suffix) && failed[len(failed)-len(suffix):] == suffix {
		return failed[:len(failed)-len(suffix)] + ".succeeded"
	}
	return failed + ".succeeded"
}

func (g *generator) appendWorkItem() {
	l := &g.line
	l.start("work_item")
	l.b = append(l.b, repos[g.sc.repo]...)
	l.b = append(l.b, '#')
	l.b = appendInt(l.b, g.sc.issue)
	l.closeStr()
}

func (g *generator) appendDelivery() {
	l := &g.line
	l.start("delivery_id")
	l.b = appendUUID(l.b, g.sc.id[0], g.sc.id[1])
	l.closeStr()
}

func (g *generator) appendCwd() {
	l := &g.line
	l.start("cwd")
	l.b = append(l.b, homes[g.sc.user]...)
	l.b = append(l.b, "/work/"...)
	l.b = append(l.b, repoNames[g.sc.repo]...)
	l.closeStr()
}

// defectFields writes the enum fields every failure record of d carries,
// in the-loop's order; harnessVersion is written after the harness when set.
func (l *jsonLine) defectFields(d *Defect, attempts int, willRetry bool, harnessVersion string) {
	l.str("source", d.Source)
	if d.GhEvent != "" {
		l.str("gh_event", d.GhEvent)
	}
	if d.Harness != "" {
		l.str("harness", d.Harness)
		if harnessVersion != "" {
			l.str("harness_version", harnessVersion)
		}
	}
	l.str("via", d.Via)
	l.int("attempts", attempts)
	l.bool("will_retry", willRetry)
	if d.ExitCode != 0 {
		l.int("exit_code", d.ExitCode)
	}
}
