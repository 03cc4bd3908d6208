package test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	fakegh "github.com/the-loop/the-loop-diagnose/fakes/github"
	"github.com/the-loop/the-loop-diagnose/store"
)

// The kill-point test SIGKILLs a real run at many moments around its GitHub
// calls, reruns it without faults, and checks the invariant the issue asks
// for: every defect in the log ends with exactly one issue. Kills are placed
// by a proxy between the binary and the fake GitHub, which sees each request
// arrive, each answer come back from GitHub, and each answer go out to the
// binary, and can kill the process at exactly one of those moments (or a
// measured delay after it). Timing jitter can only move a kill to a
// neighbouring phase; the verdict must hold for any of them.

// killMoment is when, relative to one request, the proxy kills the run.
type killMoment int

const (
	onArrive   killMoment = iota // the request reached the proxy; GitHub never sees it
	onUpstream                   // GitHub served it (an issue exists); the answer is held back
	onRelayed                    // the answer went out to the binary; kill after delay
)

func (m killMoment) String() string {
	return [...]string{"arrive", "upstream", "relayed"}[m]
}

// killTrigger names the nth request (1-based, counted by the proxy) to a
// route, and the moment around it at which to kill.
type killTrigger struct {
	route  fakegh.Route
	nth    int
	moment killMoment
	delay  time.Duration // after the moment (onRelayed only)
}

// killProxy forwards the binary's API calls to the fake GitHub and kills the
// run when its armed trigger fires. It also records how far each request got,
// for classifying where a kill landed.
type killProxy struct {
	srv      *httptest.Server
	upstream string

	mu       sync.Mutex
	proc     *os.Process
	started  chan struct{}
	trigger  *killTrigger
	counts   map[fakegh.Route]int
	killed   bool
	gen      int      // which run is armed: a timer left from an earlier run must not kill a later one
	inFlight []flight // requests of the current run, in arrival order
	active   int      // handlers still running
}

type flight struct {
	route       fakegh.Route
	fingerprint string // a create's marker
	upstream    bool   // GitHub answered
	relayed     bool   // the answer was written to the binary
}

func newKillProxy(t *testing.T, gh *fakegh.Server) *killProxy {
	p := &killProxy{upstream: gh.URL(), counts: map[fakegh.Route]int{}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

// arm makes the next run killable by trig (nil: never killed) and forgets
// the previous run's requests. It returns the run's generation.
func (p *killProxy) arm(trig *killTrigger) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gen++
	p.trigger, p.proc, p.killed = trig, nil, false
	p.started = make(chan struct{})
	p.counts = map[fakegh.Route]int{}
	p.inFlight = nil
	return p.gen
}

// attach tells the proxy which process to kill.
func (p *killProxy) attach(proc *os.Process) {
	p.mu.Lock()
	p.proc = proc
	close(p.started)
	p.mu.Unlock()
}

// kill SIGKILLs the run's whole process group (the binary and any agent it
// spawned), as a supervisor's kill -9 of the unit would. The leader is
// killed through os.Process first, which fails once it has been reaped, so
// the group id can never be a recycled one.
func (p *killProxy) kill(gen int) {
	p.mu.Lock()
	if p.killed || gen != p.gen {
		// A timer left from an earlier run, or the run is over: waiting
		// for a later run's start would outlive the test (goleak).
		p.mu.Unlock()
		return
	}
	started := p.started
	p.mu.Unlock()
	<-started
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.killed || gen != p.gen {
		return
	}
	p.killed = true
	if p.proc.Kill() == nil {
		syscall.Kill(-p.proc.Pid, syscall.SIGKILL)
	}
}

// disarm stops any pending kill once the run is over.
func (p *killProxy) disarm() {
	p.mu.Lock()
	p.killed = true
	p.mu.Unlock()
}

func (p *killProxy) wasKilled() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.killed
}

// fires reports whether this request, at this moment, is the armed trigger,
// and the generation to kill.
func (p *killProxy) fires(route fakegh.Route, nth int, m killMoment) (bool, time.Duration, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.trigger
	if t == nil || p.killed || t.route != route || t.nth != nth || t.moment != m {
		return false, 0, 0
	}
	return true, t.delay, p.gen
}

// waitIdle waits for the handlers of a killed run to finish recording.
func (p *killProxy) waitIdle() {
	within(10*time.Second, time.Millisecond, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.active == 0
	})
}

func (p *killProxy) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.active++
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.active--
		p.mu.Unlock()
	}()
	body, _ := io.ReadAll(r.Body)
	route := routeOf(r.Method, r.URL.EscapedPath())
	p.mu.Lock()
	if p.killed {
		p.mu.Unlock()
		http.Error(w, "the run was killed", http.StatusServiceUnavailable)
		return
	}
	p.counts[route]++
	nth := p.counts[route]
	p.inFlight = append(p.inFlight, flight{route: route, fingerprint: markerOf(string(body))})
	idx := len(p.inFlight) - 1
	p.mu.Unlock()

	if ok, _, gen := p.fires(route, nth, onArrive); ok {
		p.kill(gen)
		return
	}
	// Not tied to r's context: once sent, a request is GitHub's to finish,
	// whatever happens to the caller.
	req, _ := http.NewRequest(r.Method, p.upstream+r.URL.RequestURI(), bytes.NewReader(body))
	req.Header = r.Header.Clone()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	p.mu.Lock()
	p.inFlight[idx].upstream = true
	p.mu.Unlock()
	if ok, _, gen := p.fires(route, nth, onUpstream); ok {
		p.kill(gen)
		return
	}
	if p.wasKilled() {
		return
	}
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(answer)))
	w.WriteHeader(resp.StatusCode)
	w.Write(answer)
	w.(http.Flusher).Flush()
	p.mu.Lock()
	p.inFlight[idx].relayed = true
	p.mu.Unlock()
	if ok, delay, gen := p.fires(route, nth, onRelayed); ok {
		if delay == 0 {
			p.kill(gen)
		} else {
			time.AfterFunc(delay, func() { p.kill(gen) })
		}
	}
}

func (p *killProxy) flights() []flight {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]flight(nil), p.inFlight...)
}

// routeOf names the fake's route for a request path under the API prefix.
func routeOf(method, path string) fakegh.Route {
	path = strings.TrimPrefix(path, fakegh.Prefix)
	segs := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case path == "/user":
		return fakegh.RouteUser
	case len(segs) == 4 && segs[3] == "issues" && method == http.MethodGet:
		return fakegh.RouteListIssues
	case len(segs) == 4 && segs[3] == "issues" && method == http.MethodPost:
		return fakegh.RouteCreateIssue
	case len(segs) == 5 && segs[3] == "labels":
		return fakegh.RouteGetLabel
	case len(segs) == 4 && segs[3] == "labels":
		return fakegh.RouteCreateLabel
	case len(segs) == 5 && segs[3] == "issues" && method == http.MethodGet:
		return fakegh.RouteGetIssue
	case len(segs) == 6 && segs[5] == "comments" && method == http.MethodGet:
		return fakegh.RouteListComments
	case len(segs) == 6 && segs[5] == "comments":
		return fakegh.RouteCreateComment
	case len(segs) == 6 && segs[4] == "comments":
		return fakegh.RouteEditComment
	case len(segs) == 5 && method == http.MethodPatch:
		return fakegh.RouteEditIssue
	}
	return fakegh.Route(method + " " + path)
}

// pointAt rewrites a deployment's config to reach GitHub through url.
func pointAt(t *testing.T, d *deployment, url string) {
	t.Helper()
	cfg, err := os.ReadFile(d.config)
	if err != nil {
		t.Fatal(err)
	}
	cfg = bytes.Replace(cfg, []byte(d.gh.URL()), []byte(url), 1)
	if err := os.WriteFile(d.config, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
}

// killDefects are the three distinct defects every kill-point run must file.
func killDefects() []string {
	return []string{
		failure(t0, "git.failed", "git push failed: exit status 128: remote rejected refs/heads/loop/fix-1"),
		failure(t0.Add(time.Second), "queue.failed", "queue full: dropped work item after 3 attempts"),
		failure(t0.Add(2*time.Second), "worker.crashed", "worker crashed: nil pointer dereference in scheduler.pick"),
	}
}

// classifyKill names the phase a kill landed in, from what the proxy saw of
// the run's requests and what the state file holds right after it. The
// leading digit orders phases along a run.
func classifyKill(d *deployment, p *killProxy, exitedFirst bool) string {
	if exitedFirst {
		return "9 run finished before the kill"
	}
	p.waitIdle()
	var intents, reported map[string]json.RawMessage
	if _, err := os.Stat(store.DefaultDSN(d.state)); err == nil {
		intents, reported = d.stateMap("intents"), d.stateMap("reported")
	}
	fl := p.flights()
	phase := ""
	for _, f := range fl {
		if f.route != fakegh.RouteCreateIssue {
			continue
		}
		_, saved := reported[f.fingerprint]
		switch {
		case !f.upstream:
			phase = "4 create sent, GitHub has not recorded it"
		case !f.relayed:
			phase = "5 GitHub created the issue, its answer never arrived"
		case !saved:
			phase = "6 answer delivered, not yet saved"
		}
	}
	switch {
	case phase != "":
		return phase
	case len(fl) == 0:
		return "1 before any GitHub request"
	case len(intents) > 0:
		return "3 intent saved, create not yet sent"
	case len(reported) == 3:
		return "8 every issue saved, scan not yet finished"
	case len(reported) > 0:
		return "7 an issue saved, before the next defect"
	}
	return "2 during the marker lookup or label set-up"
}

// killPoint is one way to kill a run.
type killPoint struct {
	name   string
	first  *killTrigger         // fired by the proxy during the first run
	after  time.Duration        // else: kill this long after the start
	faults func(*fakegh.Server) // injected into the fake before the first run
	second *killTrigger         // kill the first rerun too
}

func killPoints() []killPoint {
	var pts []killPoint
	add := func(name string, trig killTrigger) {
		pts = append(pts, killPoint{name: name, first: &trig})
	}
	// Around every call of the first defect's lookup and label set-up.
	for _, m := range []killMoment{onArrive, onUpstream} {
		add("user/"+m.String(), killTrigger{route: fakegh.RouteUser, nth: 1, moment: m})
		add("get-label/"+m.String(), killTrigger{route: fakegh.RouteGetLabel, nth: 1, moment: m})
		add("create-label/"+m.String(), killTrigger{route: fakegh.RouteCreateLabel, nth: 1, moment: m})
	}
	for n := 1; n <= 3; n++ {
		for _, m := range []killMoment{onArrive, onUpstream, onRelayed} {
			add(fmt.Sprintf("list%d/%s", n, m), killTrigger{route: fakegh.RouteListIssues, nth: n, moment: m})
		}
	}
	// Around each create: before GitHub sees it, after GitHub made the issue
	// but before the answer, and at growing delays after the answer went
	// out (before and after the state is saved).
	for n := 1; n <= 3; n++ {
		add(fmt.Sprintf("create%d/arrive", n), killTrigger{route: fakegh.RouteCreateIssue, nth: n, moment: onArrive})
		add(fmt.Sprintf("create%d/upstream", n), killTrigger{route: fakegh.RouteCreateIssue, nth: n, moment: onUpstream})
		for _, delay := range []time.Duration{0, 200 * time.Microsecond, time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond} {
			add(fmt.Sprintf("create%d/relayed+%v", n, delay), killTrigger{route: fakegh.RouteCreateIssue, nth: n, moment: onRelayed, delay: delay})
		}
	}
	// Blind kills at fixed times: start-up, reading, the agent runs.
	for _, ms := range []int{0, 5, 15, 30, 45, 55, 65, 75, 90, 120} {
		pts = append(pts, killPoint{name: fmt.Sprintf("at%dms", ms), after: time.Duration(ms) * time.Millisecond})
	}
	// Blind kills across a run stretched by a slow GitHub: slow lists, and
	// creates that either stall before the write or after it (SlowAfter: the
	// issue exists while the answer is held back).
	slow := func(gh *fakegh.Server) {
		gh.Inject(fakegh.RouteListIssues, fakegh.Slow(40*time.Millisecond), fakegh.Slow(40*time.Millisecond), fakegh.Slow(40*time.Millisecond))
		gh.Inject(fakegh.RouteCreateIssue, fakegh.SlowAfter(60*time.Millisecond), fakegh.Slow(60*time.Millisecond), fakegh.SlowAfter(60*time.Millisecond))
	}
	for ms := 40; ms <= 400; ms += 40 {
		pts = append(pts, killPoint{name: fmt.Sprintf("slow/at%dms", ms), after: time.Duration(ms) * time.Millisecond, faults: slow})
	}
	// Killed twice: the first run dies with defect 2's issue made but
	// unanswered, then the rerun dies too, mid-reconciliation.
	first := killTrigger{route: fakegh.RouteCreateIssue, nth: 2, moment: onUpstream}
	for name, second := range map[string]killTrigger{
		"user/arrive":         {route: fakegh.RouteUser, nth: 1, moment: onArrive},
		"get-issue/upstream":  {route: fakegh.RouteGetIssue, nth: 1, moment: onUpstream},
		"list1/relayed":       {route: fakegh.RouteListIssues, nth: 1, moment: onRelayed},
		"create1/arrive":      {route: fakegh.RouteCreateIssue, nth: 1, moment: onArrive},
		"create1/upstream":    {route: fakegh.RouteCreateIssue, nth: 1, moment: onUpstream},
		"create1/relayed+1ms": {route: fakegh.RouteCreateIssue, nth: 1, moment: onRelayed, delay: time.Millisecond},
	} {
		pts = append(pts, killPoint{name: "twice/" + name, first: &first, second: &second})
	}
	return pts
}

func TestKillAnywhereThenRerunFilesEachDefectExactlyOnce(t *testing.T) {
	t.Parallel()
	want := expectedFingerprints(t, killDefects())
	if len(want) != 3 {
		t.Fatalf("the fixture should hold 3 distinct defects, fingerprints: %v", want)
	}
	points := killPoints()
	if len(points) < 50 {
		t.Fatalf("only %d kill points", len(points))
	}
	var mu sync.Mutex
	phases := map[string][]string{}
	// t.Run from several goroutines: the runs mostly wait on processes and
	// sockets, so more than GOMAXPROCS of them overlap usefully.
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for _, kp := range points {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			t.Run(kp.name, func(t *testing.T) {
				landed := exerciseKillPoint(t, kp, want)
				mu.Lock()
				defer mu.Unlock()
				for _, ph := range landed {
					phases[ph] = append(phases[ph], kp.name)
				}
			})
		}()
	}
	wg.Wait()
	var names []string
	total := 0
	for ph, pts := range phases {
		names = append(names, ph)
		total += len(pts)
	}
	sort.Strings(names)
	t.Logf("%d kill points, %d kills; where they landed:", len(points), total)
	for _, ph := range names {
		t.Logf("  %-55s %3d  e.g. %s", ph, len(phases[ph]), phases[ph][0])
	}
	// Kills pinned to a request land in their phase whatever the timing;
	// losing one means the test stopped exercising it.
	for _, ph := range []string{
		"1 before any GitHub request",
		"2 during the marker lookup or label set-up",
		"3 intent saved, create not yet sent",
		"4 create sent, GitHub has not recorded it",
		"5 GitHub created the issue, its answer never arrived",
	} {
		if len(phases[ph]) == 0 {
			t.Errorf("no kill landed in phase %q", ph)
		}
	}
}

// exerciseKillPoint runs a fresh deployment, kills it as kp says, reruns it
// to completion and asserts one issue per defect. It returns the phases its
// kills landed in.
func exerciseKillPoint(t *testing.T, kp killPoint, want []string) []string {
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{})
	p := newKillProxy(t, gh)
	pointAt(t, d, p.srv.URL)
	d.appendLog(killDefects()...)
	if kp.faults != nil {
		kp.faults(gh)
	}
	var landed []string
	landed = append(landed, killRun(t, d, p, kp.first, kp.after))
	if kp.second != nil {
		landed = append(landed, "rerun: "+killRun(t, d, p, kp.second, 0))
	}
	p.arm(nil)
	res := d.run("run")
	if res.code != 0 {
		t.Fatalf("rerun after %v: exit %d\n%s", landed, res.code, res.stderr)
	}
	assertOneIssuePerDefect(t, d, gh, want, landed)
	// And once more: nothing changes.
	if res := d.run("run"); res.code != 0 || gh.CountCreates() != len(want) {
		t.Fatalf("second rerun: exit %d, %d creates\n%s", res.code, gh.CountCreates(), res.stderr)
	}
	return landed
}

// killRun starts a run and kills it at trig, or after the delay; it returns
// the phase the kill landed in.
func killRun(t *testing.T, d *deployment, p *killProxy, trig *killTrigger, after time.Duration) string {
	t.Helper()
	gen := p.arm(trig)
	cmd := d.command("run")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.attach(cmd.Process)
	timed := time.AfterFunc(time.Minute, func() { p.kill(gen) }) // a guard against a hung run
	if trig == nil {
		timed.Reset(after)
	}
	err := cmd.Wait()
	timed.Stop()
	p.disarm()
	killed := false
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			killed = true
		}
	}
	if !killed && err != nil {
		t.Fatalf("the run failed on its own: %v\n%s", err, stderr.String())
	}
	return classifyKill(d, p, !killed)
}

// assertOneIssuePerDefect checks GitHub and the state after the reruns.
func assertOneIssuePerDefect(t *testing.T, d *deployment, gh *fakegh.Server, want []string, landed []string) {
	t.Helper()
	issues := gh.Issues()
	if gh.CountCreates() != len(want) || len(issues) != len(want) {
		t.Fatalf("after kills in %v: %d issues created, want %d (one per defect)", landed, gh.CountCreates(), len(want))
	}
	byFP := map[string]int{}
	for _, is := range issues {
		fp := markerOf(is.Body)
		if fp == "" {
			t.Fatalf("issue #%d has no fingerprint marker", is.Number)
		}
		if byFP[fp] != 0 {
			t.Fatalf("after kills in %v: defect %s filed twice (#%d and #%d)", landed, fp, byFP[fp], is.Number)
		}
		byFP[fp] = is.Number
	}
	reported := d.stateMap("reported")
	for _, fp := range want {
		if byFP[fp] == 0 {
			t.Fatalf("after kills in %v: defect %s was lost (no issue)", landed, fp)
		}
		if _, ok := reported[fp]; !ok {
			t.Fatalf("after kills in %v: defect %s has issue #%d but the state does not record it", landed, fp, byFP[fp])
		}
	}
	if in := d.stateMap("intents"); len(in) != 0 {
		t.Fatalf("after kills in %v: intents left behind: %v", landed, in)
	}
	// Each filed issue told once, and counted once against the cap: the
	// issue, its event and its count commit together.
	posted := map[string]int{}
	for _, e := range d.events("diagnosis.posted") {
		fp, _ := e["fingerprint"].(string)
		posted[fp]++
	}
	for _, fp := range want {
		if posted[fp] != 1 {
			t.Fatalf("after kills in %v: defect %s has %d diagnosis.posted events, want 1 (all: %v)", landed, fp, posted[fp], posted)
		}
	}
	var times []string
	json.Unmarshal(d.readState()["posted"], &times)
	if len(times) != len(want) {
		t.Fatalf("after kills in %v: %d posts counted against the cap for %d issues: %v", landed, len(times), len(want), times)
	}
}

// SIGKILL anywhere, many times, with more defects than the daily cap: the
// cap is never exceeded, and once a run ends every issue filed has its one
// diagnosis.posted event and its one count in the state (the issue, its
// event and its count commit together; the create's intent and its
// reservation before the create).
func TestKilledManyTimesTheDailyCapHoldsAndEveryIssueIsTold(t *testing.T) {
	t.Parallel()
	defects := append(killDefects(),
		failure(t0.Add(3*time.Second), "db.failed", "db query failed: deadlock detected on table jobs"),
		failure(t0.Add(4*time.Second), "auth.failed", "token refresh failed: unexpected end of JSON input"))
	const maxPerDay = 3
	seeds := []int64{1, 2, 3, 4}
	if testing.Short() {
		seeds = seeds[:1]
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewSource(seed))
			gh := newGitHub(t)
			d := newDeployment(t, gh, deployOpts{maxPerDay: maxPerDay})
			p := newKillProxy(t, gh)
			pointAt(t, d, p.srv.URL)
			d.appendLog(defects...)
			var landed []string
			for range 8 {
				landed = append(landed, killRun(t, d, p, nil, time.Duration(5+rng.Intn(200))*time.Millisecond))
				if n := gh.CountCreates(); n > maxPerDay {
					t.Fatalf("after kills in %v: %d issues created, the cap is %d", landed, n, maxPerDay)
				}
			}
			p.arm(nil)
			if res := d.run("run"); res.code != 0 {
				t.Fatalf("rerun after %v: exit %d\n%s", landed, res.code, res.stderr)
			}
			created := gh.CountCreates()
			if created > maxPerDay || created == 0 {
				t.Fatalf("after kills in %v: %d issues created, the cap is %d", landed, created, maxPerDay)
			}
			posted := map[string]int{}
			for _, e := range d.events("diagnosis.posted") {
				fp, _ := e["fingerprint"].(string)
				posted[fp]++
			}
			reported := d.stateMap("reported")
			for _, is := range gh.Issues() {
				fp := markerOf(is.Body)
				if posted[fp] != 1 {
					t.Fatalf("after kills in %v: issue #%d (%s) has %d diagnosis.posted events, want 1", landed, is.Number, fp, posted[fp])
				}
				if _, ok := reported[fp]; !ok {
					t.Fatalf("after kills in %v: issue #%d (%s) is not recorded", landed, is.Number, fp)
				}
			}
			var times []string
			json.Unmarshal(d.readState()["posted"], &times)
			if len(times) != created {
				t.Fatalf("after kills in %v: %d posts counted for %d issues", landed, len(times), len(gh.Issues()))
			}
			t.Logf("kills landed in %v; %d issues created, %d posts counted", landed, created, len(times))
		})
	}
}
