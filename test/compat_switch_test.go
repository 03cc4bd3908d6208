package test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	fakegh "github.com/the-loop/the-loop-diagnose/fakes/github"
)

// The tests here run the tool on a deployment the-loop ran (its
// cli-config.yaml found by itself, state under state.root, the-loop's
// installed package on PATH) and assert what the-loop does there: what a
// deployment switching over must not lose (issue 36).

// switchOpts shapes a switched deployment beyond theLoopOpts.
type switchOpts struct {
	theLoopOpts
	extra    string   // more selfDiagnosis YAML lines
	agentEnv []string // more agentEnv names than FAKE_AGENT_MODE
	env      []string // more environment
}

// newSwitchedDeployment is a the-loop deployment under state.root
// "state" with the config in ./.the-loop/cli-config.yaml.
func newSwitchedDeployment(t *testing.T, gh *fakegh.Server, o switchOpts) *deployment {
	t.Helper()
	if o.root == "" {
		o.root = "state"
	}
	d := newTheLoopDeployment(t, gh, o.theLoopOpts)
	path := filepath.Join(d.dir, d.config)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(b), "agentEnv: [FAKE_AGENT_MODE]",
		"agentEnv: ["+strings.Join(append([]string{"FAKE_AGENT_MODE"}, o.agentEnv...), ", ")+"]", 1)
	writeFile(t, path, cfg+o.extra)
	d.env = append(d.env, o.env...)
	return d
}

// 7. While a scan holds the state lock the lock file holds its PID, as
// the-loop's lock does: a person can `cat` it, and a scan that finds the
// lock held names the holder. Released, the file is removed.
func TestSwitchedLockFileHoldsTheHoldersPID(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newSwitchedDeployment(t, gh, switchOpts{agentEnv: []string{"FAKE_AGENT_DELAY"}, env: []string{"FAKE_AGENT_DELAY=3s"}})
	d.appendLog(failure(t0, "worker.crashed", "worker crashed on nil config"))
	lock := d.state + ".lock"

	holder := d.command("run", "--now", t0.Add(time.Hour).Format(time.RFC3339))
	var out, errb bytes.Buffer
	holder.Stdout, holder.Stderr = &out, &errb
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	// Started here, waited for there: holder.Process is read below without
	// racing the goroutine that would have set it.
	var done = make(chan result, 1)
	go func() {
		code := 0
		if err := holder.Wait(); err != nil {
			code = -1
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
		}
		done <- result{code: code, stdout: out.String(), stderr: errb.String()}
	}()
	var seen string
	if !eventually(func() bool {
		b, _ := os.ReadFile(lock)
		seen = string(b)
		return seen != ""
	}) {
		t.Fatal("the lock file never held anything while the scan ran")
	}
	if want := strconv.Itoa(holder.Process.Pid) + "\n"; seen != want {
		t.Fatalf("lock file holds %q, want the holder's PID %q", seen, want)
	}
	second := d.run("run", "--now", t0.Add(time.Hour).Format(time.RFC3339))
	if second.code != 0 || !strings.Contains(second.stderr, "skipping") ||
		!strings.Contains(second.stderr, "(pid "+strconv.Itoa(holder.Process.Pid)+")") {
		t.Errorf("a second scan: exit %d, stderr %q: want a skip naming the holder's PID", second.code, second.stderr)
	}
	if res := <-done; res.code != 0 {
		t.Fatalf("the holding scan: exit %d\n%s", res.code, res.stderr)
	}
	if b, err := os.ReadFile(lock); !os.IsNotExist(err) {
		t.Errorf("after the scan the lock file holds %q (%v), want it removed as the-loop removes it", b, err)
	}
	if gh.CountCreates() != 1 {
		t.Errorf("%d issues filed, want 1", gh.CountCreates())
	}
}

// 3. maxRetries caps the agent runs a defect costs, as in the-loop: each
// answer that is no finding counts at once, and at the maxRetries-th
// (the-loop's default 3, or the configured 2) the defect is abandoned with
// the-loop's reason and the agent never runs for it again, in however many
// hourly scans. Scans where the agent was down (it exits on the first
// dossier) count nothing and charge nothing.
func TestSwitchedMaxRetriesCapsAgentRunsPerDefect(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		extra string
		runs  int
	}{
		{"default", "", 3},
		{"maxRetries 2", "  maxRetries: 2\n", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			gh := newGitHub(t)
			record := filepath.Join(t.TempDir(), "agent-runs.jsonl")
			d := newSwitchedDeployment(t, gh, switchOpts{extra: tc.extra,
				agentEnv: []string{"FAKE_AGENT_RECORD"}, env: []string{"FAKE_AGENT_RECORD=" + record}})
			d.appendLog(failure(t0, "worker.crashed", "worker crashed on nil config"))
			scan := func(h int) result {
				return d.run("run", "--now", t0.Add(time.Duration(h)*time.Hour).Format(time.RFC3339))
			}
			d.env = append(d.env, "FAKE_AGENT_MODE=exit") // the agent is down
			for h := 1; h <= 2; h++ {
				if res := scan(h); !strings.Contains(res.stderr, "agent") {
					t.Fatalf("scan %d with the agent down: exit %d\n%s", h, res.code, res.stderr)
				}
			}
			if a := d.stateMap("attempts"); len(a) != 0 || ownEntries(d, "abandoned") != 0 {
				t.Fatalf("an outage counted: attempts %v, abandoned %s", a, d.readState()["abandoned"])
			}
			down := agentRuns(t, record)
			d.env = append(d.env, "FAKE_AGENT_MODE=prose") // answers, but no finding
			for h := 3; h <= 8; h++ {
				scan(h)
			}
			if got := agentRuns(t, record) - down; got != tc.runs {
				t.Errorf("the agent ran %d times for the defect in 6 hourly scans, want %d", got, tc.runs)
			}
			own, _ := reportedKinds(d)
			if len(own) != 0 || gh.CountCreates() != 0 {
				t.Fatalf("a defect with no finding was filed")
			}
			want := "agent failed " + strconv.Itoa(tc.runs) + " times"
			found := false
			for _, raw := range d.stateMap("abandoned") {
				found = found || strings.Contains(string(raw), `"reason":"`+want+`"`) || strings.Contains(string(raw), `"reason": "`+want+`"`)
			}
			if !found {
				t.Errorf("abandoned = %s, want the-loop's reason %q", d.readState()["abandoned"], want)
			}
			if n := len(d.events("diagnosis.failed")); n != tc.runs {
				t.Errorf("%d diagnosis.failed events, want one per failed run (%d)", n, tc.runs)
			}
		})
	}
}

// fakeInstall lays out the-loop installed as pip installs it into a venv:
// bin/the-loop whose shebang names the venv's python, and the_loop (version
// 11.2.0) in lib/python3.12/site-packages. With layout false the package is
// elsewhere (an editable install's checkout) and the python, a stub, answers
// where; with layout true the stub fails, so only reading the layout finds
// it. It returns the venv's bin and the_loop's directory.
func fakeInstall(t *testing.T, layout bool) (bin, pkg string) {
	t.Helper()
	venv := filepath.Join(t.TempDir(), "venv")
	bin = filepath.Join(venv, "bin")
	pkg = filepath.Join(venv, "lib", "python3.12", "site-packages", "the_loop")
	stub := "#!/bin/sh\nexit 1\n"
	if !layout {
		pkg = filepath.Join(t.TempDir(), "src", "the_loop")
		stub = "#!/bin/sh\nprintf '%s\\n' " + quote(pkg) + " 11.2.0\n"
	}
	writeFile(t, filepath.Join(pkg, "__init__.py"), "\"\"\"the-loop.\"\"\"\n\n__version__ = \"11.2.0\"\n")
	writeFile(t, filepath.Join(pkg, "core", "poller.py"), "def poll(ledger):\n    if ledger.read_only:\n        raise RuntimeError(\"poll ledger is read-only\")\n    return ledger.next()\n")
	writeFile(t, filepath.Join(bin, "python3"), stub)
	writeFile(t, filepath.Join(bin, "the-loop"), "#!"+filepath.Join(bin, "python3")+"\n# -*- coding: utf-8 -*-\nimport sys\nfrom the_loop.cli import main\nif __name__ == \"__main__\":\n    sys.exit(main())\n")
	for _, f := range []string{"python3", "the-loop"} {
		if err := os.Chmod(filepath.Join(bin, f), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin, pkg
}

// 2. The agent reads the-loop's installed source by default, as the-loop's
// prompt points its agent at its own package: found from the `the-loop` on
// PATH (its shebang's python, that venv's site-packages, else the python
// asked), named with its version in the prompt as the-loop names it, quoted
// in the dossier's Source section, and said by status. sourcePath
// overrides it; with no the-loop on PATH status says there is none and why.
func TestSwitchedAgentReadsTheInstalledSource(t *testing.T) {
	t.Parallel()
	const sysPath = "PATH=/usr/bin:/bin"
	trace := "poll failed: Traceback (most recent call last):\n  File \"/opt/loop/venv/lib/python3.12/site-packages/the_loop/core/poller.py\", line 3, in poll\n    raise RuntimeError(\"poll ledger is read-only\")\nRuntimeError: poll ledger is read-only"
	layoutBin, layoutPkg := fakeInstall(t, true)
	askedBin, askedPkg := fakeInstall(t, false)
	override := filepath.Join(t.TempDir(), "checkout", "the_loop")
	writeFile(t, filepath.Join(override, "__init__.py"), "__version__ = \"11.3.0.dev0\"\n")
	writeFile(t, filepath.Join(override, "core", "poller.py"), "def poll(ledger):\n    # checkout\n    raise RuntimeError(\"poll ledger is read-only\")\n")

	for _, tc := range []struct {
		name, path, extra string
		want, version     string // the source the agent sees ("": none)
		from              string
	}{
		{"venv layout", "PATH=" + layoutBin + ":/usr/bin:/bin", "", layoutPkg, "11.2.0", "installed the-loop: " + filepath.Join(layoutBin, "the-loop")},
		{"python asked", "PATH=" + askedBin + ":/usr/bin:/bin", "", askedPkg, "11.2.0", "installed the-loop: " + filepath.Join(askedBin, "the-loop")},
		{"sourcePath overrides", "PATH=" + layoutBin + ":/usr/bin:/bin", "  sourcePath: " + quote(override) + "\n", override, "11.3.0.dev0", "selfDiagnosis.sourcePath"},
		{"not installed", sysPath, "", "", "", "no the-loop on PATH"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			gh := newGitHub(t)
			record := filepath.Join(t.TempDir(), "agent-runs.jsonl")
			d := newSwitchedDeployment(t, gh, switchOpts{extra: tc.extra,
				agentEnv: []string{"FAKE_AGENT_RECORD"}, env: []string{"FAKE_AGENT_RECORD=" + record, tc.path}})
			d.appendLog(failure(t0, "poll.failed", trace))

			st := d.run("status")
			line := ""
			for _, l := range strings.Split(st.stdout, "\n") {
				if strings.HasPrefix(l, "agent source: ") {
					line = l
				}
			}
			if tc.want == "" {
				if !strings.HasPrefix(line, "agent source: none (no the-loop on PATH") || !strings.Contains(line, "selfDiagnosis.sourcePath") {
					t.Errorf("status says %q, want none and how to set one", line)
				}
			} else if want := "agent source: " + tc.want + " (the-loop " + tc.version + ", " + tc.from; !strings.HasPrefix(line, want) {
				t.Errorf("status says %q, want it to start %q", line, want)
			}

			if res := d.run("run", "--now", t0.Add(time.Hour).Format(time.RFC3339)); res.code != 0 {
				t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
			}
			b, err := os.ReadFile(record)
			if err != nil {
				t.Fatal(err)
			}
			prompt := string(b)
			named := "the-loop version: " + tc.version + ". Its installed source is at: " + tc.want
			if tc.want == "" {
				if strings.Contains(prompt, "Its installed source is at") {
					t.Errorf("the prompt names a source although none was found")
				}
				return
			}
			if !strings.Contains(prompt, quoteInner(named)) || !strings.Contains(prompt, "Read that source to find the root cause") {
				t.Errorf("the prompt does not name the source as the-loop's does (%q)", named)
			}
			if !strings.Contains(prompt, "core/poller.py:3") {
				t.Errorf("the dossier's Source section does not quote the frame's line")
			}
			if body := gh.Issues()[0].Body; !strings.Contains(body, "core/poller.py:3") || strings.Contains(body, tc.want) {
				t.Errorf("the body should quote core/poller.py:3, relative, never the local path:\n%s", body)
			}
		})
	}
}

// quoteInner is s as it appears inside a JSON string.
func quoteInner(s string) string { q := quote(s); return q[1 : len(q)-1] }

// 4. A dry run previews everything it diagnosed: with maxIssuesPerDay 1
// and 8 defects it shows the body of each of the 5 it diagnosed
// (maxDiagnosesPerScan), says which 4 the daily cap would hold back, and
// files, charges and writes nothing. the-loop's dry run shows each
// diagnosis whatever the cap.
func TestSwitchedDryRunPreviewsEveryDiagnosis(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newSwitchedDeployment(t, gh, switchOpts{theLoopOpts: theLoopOpts{maxPerDay: 1}})
	for i := range 8 {
		d.appendLog(failure(t0.Add(time.Duration(i)*time.Minute), "worker.crashed"+strconv.Itoa(i), "worker "+strings.Repeat("x", i+1)+" crashed on a nil config"))
	}
	res := d.run("run", "--dry-run", "--now", t0.Add(time.Hour).Format(time.RFC3339))
	if res.code != 0 {
		t.Fatalf("dry run: exit %d\n%s", res.code, res.stderr)
	}
	shown := strings.Count(res.stdout, "--- would file on acme/widgets")
	held := strings.Count(res.stdout, "--- would file on acme/widgets (held back: daily issue cap reached")
	if shown != 5 || held != 4 {
		t.Errorf("the dry run showed %d bodies, %d marked held back by the cap; want 5 and 4:\n%s", shown, held, res.stdout)
	}
	if n := strings.Count(res.stdout, "## Root cause"); n != 5 {
		t.Errorf("%d bodies printed whole, want 5", n)
	}
	if gh.CountCreates() != 0 {
		t.Errorf("a dry run filed %d issues", gh.CountCreates())
	}
	if _, err := os.Stat(d.state); !os.IsNotExist(err) {
		t.Errorf("a dry run wrote the state (%v)", err)
	}
	if n := strings.Count(res.stdout, "— diagnosis budget reached"); n != 3 {
		t.Errorf("%d defects said to wait for the diagnosis budget, want the 3 not diagnosed:\n%s", n, res.stdout)
	}
}

// 5. The prompt sees no more of the log than the issue: the dossier quoted
// in the prompt is the body's Evidence section, exactly, and within
// the-loop's limits: the error cut at 800 characters, the dossier at most
// 6,000, however long and many the records.
func TestSwitchedPromptSeesNoMoreThanTheIssue(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	record := filepath.Join(t.TempDir(), "agent-runs.jsonl")
	d := newSwitchedDeployment(t, gh, switchOpts{agentEnv: []string{"FAKE_AGENT_RECORD"}, env: []string{"FAKE_AGENT_RECORD=" + record}})
	long := "worker crashed on nil config: " + strings.Repeat("the ledger row was empty and ", 180)
	for i := range 20 {
		d.appendLog(failure(t0.Add(time.Duration(i)*time.Minute), "worker.crashed", long,
			"harness", "claude-"+strconv.Itoa(i%4), "source", strings.Repeat("webhook-", 40)+strconv.Itoa(i)))
	}
	if res := d.run("run", "--now", t0.Add(time.Hour).Format(time.RFC3339)); res.code != 0 || len(gh.Issues()) != 1 {
		t.Fatalf("run: exit %d, %d issues\n%s", res.code, len(gh.Issues()), res.stderr)
	}
	b, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Prompt string `json:"prompt"`
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(rec.Prompt, "\nBEGIN DOSSIER-DATA-")
	_, rest, _ = strings.Cut(rest, "\n")
	dossier, _, ok := strings.Cut(rest, "\nEND DOSSIER-DATA-")
	if !ok {
		t.Fatalf("no dossier quoted in the prompt:\n%s", rec.Prompt)
	}
	_, ev, _ := strings.Cut(gh.Issues()[0].Body, "## Evidence\n")
	ev, _, _ = strings.Cut(ev, "\n## Environment")
	// Before it, the agent's own verdict: not the log's.
	if i := strings.Index(ev, "- Event: "); i >= 0 {
		ev = ev[i:]
	}
	if strings.TrimSpace(ev) != strings.TrimSpace(dossier) {
		t.Errorf("the prompt's dossier is not the body's Evidence:\n--- prompt\n%s\n--- body\n%s", dossier, ev)
	}
	if n := utf8.RuneCountInString(dossier); n > 6000 {
		t.Errorf("the dossier is %d characters, over the-loop's 6,000", n)
	}
	t.Logf("the prompt's dossier: %d characters, equal to the body's Evidence; the error %d characters, cut at 800",
		utf8.RuneCountInString(dossier), utf8.RuneCountInString(long))
	cut := fmt.Sprintf("[... %d more characters cut]", utf8.RuneCountInString(long)-800)
	if !strings.Contains(dossier, cut) || strings.Count(dossier, "the ledger row was empty") > 800/len("the ledger row was empty and ")+1 {
		t.Errorf("the error is not cut at 800 characters (want %q)", cut)
	}
}
