package test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/the-loop/the-loop-diagnose/redact/redacttest"
	"github.com/the-loop/the-loop-diagnose/stages/agent/sandbox"
	"github.com/the-loop/the-loop-diagnose/store"
)

// The host's secrets, under names a deny-list would have to guess; none
// may reach the agent. ANTHROPIC_API_KEY is listed in selfDiagnosis.agentEnv
// (harness_test.go) and does.
var hostSecrets = map[string]string{
	"GITHUB_PAT":            "github_pat_11AAAAAAA0abcdefghijklmn_opqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRS",
	"AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzzSECRETzz",
	"DATABASE_URL":          "postgres://app:Tr0ub4dor-and-3@db.prod.internal:5432/billing",
	"SLACK_BOT_TOKEN":       "xoxb-2222-3333-zzSLACKSECRETzz",
	"OPENAI_API_KEY":        "sk-proj-zzOPENAISECRETzzABCDEFGHIJKLMNOP",
}

const anthropicKey = "sk-ant-api03-zzLISTEDzzKEYzz-ABCDEFGHIJKLMNOPQRSTUVWXYZ012345"

// What the fake agent plants (fakes/agent LeakedToken, LeakedKey).
var planted = []string{"ghp_Zq8VvX2mN4bR7tY1uK3wE6sA9dF0gH5jL2pQ", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"}

func secretsEnv(extra ...string) []string {
	env := append([]string{"ANTHROPIC_API_KEY=" + anthropicKey}, extra...)
	for k, v := range hostSecrets {
		env = append(env, k+"="+v)
	}
	return env
}

// everythingWritten is every file the tool wrote or appended to, and the
// issues it filed, as one text to search.
func everythingWritten(t *testing.T, d *deployment, extra ...string) string {
	t.Helper()
	var b strings.Builder
	// The store's pages hold its text as it was written, the export as
	// the state reads back.
	db := store.DefaultDSN(d.state)
	for _, p := range []string{db, db + "-wal", d.log} {
		data, _ := os.ReadFile(p)
		b.Write(data)
	}
	if store.Exists(d.state, "") {
		b.Write(d.stateJSON())
	}
	if d.gh != nil {
		for _, is := range d.gh.Issues() {
			b.WriteString(is.Title + "\n" + is.Body + "\n")
		}
	}
	for _, s := range extra {
		b.WriteString(s)
	}
	return b.String()
}

func agentRecords(t *testing.T, path string) []struct {
	Env         []string `json:"env"`
	Cwd         string   `json:"cwd"`
	GitHubToken bool     `json:"github_token"`
} {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the agent never ran: %v", err)
	}
	var out []struct {
		Env         []string `json:"env"`
		Cwd         string   `json:"cwd"`
		GitHubToken bool     `json:"github_token"`
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r struct {
			Env         []string `json:"env"`
			Cwd         string   `json:"cwd"`
			GitHubToken bool     `json:"github_token"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// A compromised agent (it echoes attacker text, invents evidence and answers
// "environment" with confidence 0.99) cannot suppress the defect: it is
// filed. The agent saw none of the host's secrets, nor the GitHub token,
// nor PWD, and nothing it printed leaks a secret anywhere the tool writes.
func TestACompromisedAgentCannotSuppressADefectOrSeeSecrets(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	runs := filepath.Join(t.TempDir(), "agent-runs.jsonl")
	d := newDeployment(t, gh, deployOpts{agentMode: "compromised", env: secretsEnv("FAKE_AGENT_RECORD=" + runs)})
	d.appendLog(failure(t0, "dispatch.failed", "handler panicked: index out of range [3] with length 3"))
	res := d.run("run")
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	if gh.CountCreates() != 1 {
		t.Fatalf("the compromised agent's environment verdict kept the defect from a human: %d issues filed\n%s", gh.CountCreates(), res.stderr)
	}
	// What it wrote reached the issue inert: it notifies no one, links no
	// other issue, fetches nothing, hides nothing, and forges no marker.
	for _, is := range gh.Issues() {
		for what, text := range map[string]string{"title": is.Title, "body": redacttest.WithoutMarkers(is.Body)} {
			if kind, m := redacttest.LiveConstruct(text); kind != "" {
				t.Errorf("issue %s keeps a live %s %q from the agent:\n%s", what, kind, m, text)
			}
		}
		if n := strings.Count(is.Body, "<!-- the-loop-diagnose fingerprint:"); n != 1 {
			t.Errorf("issue body carries %d fingerprint markers, want only its own", n)
		}
	}
	if n := len(ledger(t, d)); n != 0 {
		t.Errorf("the ledger recorded %d settlements of an invented verdict", n)
	}
	if ev := d.events("diagnosis.settled"); len(ev) != 0 {
		t.Errorf("diagnosis.settled on an invented verdict: %v", ev)
	}

	recs := agentRecords(t, runs)
	if len(recs) != 1 {
		t.Fatalf("agent ran %d times", len(recs))
	}
	env := map[string]string{}
	for _, kv := range recs[0].Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	for k := range hostSecrets {
		if _, ok := env[k]; ok {
			t.Errorf("the agent saw %s", k)
		}
	}
	for _, k := range []string{"GH_TOKEN", "GITHUB_TOKEN", "PWD", "OLDPWD"} {
		if _, ok := env[k]; ok {
			t.Errorf("the agent saw %s=%s", k, env[k])
		}
	}
	if recs[0].GitHubToken {
		t.Error("a GitHub token reached the agent")
	}
	if env["ANTHROPIC_API_KEY"] != anthropicKey {
		t.Errorf("the listed ANTHROPIC_API_KEY did not reach the agent")
	}
	if strings.HasPrefix(recs[0].Cwd, d.dir) {
		t.Errorf("the agent ran in %s, inside the deployment", recs[0].Cwd)
	}

	all := everythingWritten(t, d, res.stdout, res.stderr)
	for k, v := range hostSecrets {
		if strings.Contains(all, v) {
			t.Errorf("%s's value reached what the tool wrote", k)
		}
	}
	for _, s := range append([]string{anthropicKey}, planted...) {
		if strings.Contains(all, s) {
			t.Errorf("%q reached what the tool wrote", s)
		}
	}
}

// Agent text that is kept (evidence in the ledger, the state and the
// diagnosis.settled event) is scrubbed; the tool's files are 0600.
func TestSettledAgentEvidenceIsScrubbedInLedgerStateAndEvents(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	evidence, _ := json.Marshal([]string{
		"`git fetch failed: could not resolve host github.com` shows DNS is down; I used " + planted[0],
		"`could not resolve host github.com` and the key\n-----BEGIN OPENSSH PRIVATE KEY-----\n" + planted[1] + "AAAAAAAAAAAAAAAAAAAAAAAAAAAA\n-----END OPENSSH PRIVATE KEY-----",
	})
	d := newDeployment(t, gh, deployOpts{agentMode: "verdict", env: []string{
		"FAKE_AGENT_VERDICT=environment", "FAKE_AGENT_CONFIDENCE=0.95", "FAKE_AGENT_EVIDENCE=" + string(evidence)}})
	d.appendLog(failure(t0, "git.failed", "git fetch failed: could not resolve host github.com (attempt 2, worker w-17)"))
	res := d.run("run")
	if res.code != 0 || gh.CountCreates() != 0 {
		t.Fatalf("exit %d, %d issues: a verified environment verdict should settle\n%s", res.code, gh.CountCreates(), res.stderr)
	}
	l := ledger(t, d)
	if len(l) != 1 || l[0]["verdict"] != "environment" {
		t.Fatalf("ledger = %v", l)
	}
	if len(d.events("diagnosis.settled")) != 1 || len(d.stateMap("settled")) != 1 {
		t.Fatalf("settlement missing from events or state")
	}
	all := everythingWritten(t, d, res.stdout, res.stderr)
	for _, s := range planted {
		if strings.Contains(all, s) {
			t.Errorf("%q was kept unscrubbed", s)
		}
	}
	if !strings.Contains(all, "could not resolve host github.com") {
		t.Error("the verified quote itself should be kept")
	}
	if fi, err := os.Stat(store.DefaultDSN(d.state)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: %v %v, want mode 0600", store.DefaultDSN(d.state), fi.Mode(), err)
	}
	if _, err := os.Lstat(d.state + ".lock"); !os.IsNotExist(err) {
		t.Errorf("the state lock is left behind (%v); the-loop's lock is removed on release", err)
	}
}

// A failing agent's stderr (a private key whose BEGIN line is cut off by
// the tail kept, and a token) is scrubbed in the failure reason the tool
// prints, keeps in the state and appends as diagnosis.failed.
func TestAFailingAgentsStderrIsScrubbedEverywhere(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{agentMode: "leak-exit"})
	d.appendLog(failure(t0, "dispatch.failed", "handler panicked: nil map write"))
	res := d.run("run")
	if res.code != 1 || !strings.Contains(res.stderr, "agent exited with exit status 2") {
		t.Fatalf("exit %d, want 1 with the agent's failure\n%s", res.code, res.stderr)
	}
	// An agent that fails with no dossier diagnosed is the agent's outage:
	// the defect waits, its reason kept.
	if w := d.stateMap("deferred"); len(w) != 1 || !strings.Contains(string(slices.Collect(maps.Values(w))[0]), "waiting for the agent") {
		t.Fatalf("the wait was not recorded: %s", d.readState()["deferred"])
	}
	all := everythingWritten(t, d, res.stdout, res.stderr)
	for _, s := range planted {
		if strings.Contains(all, s) {
			t.Errorf("%q reached the output, state or events", s)
		}
	}
	if !strings.Contains(res.stderr, "<redacted:private-key>") {
		t.Errorf("the failure does not show that a key was masked:\n%s", res.stderr)
	}
}

// A symbolic link at the state path or the ledger path is refused with an
// error naming it; what it points at is left as it was.
func TestSymlinkedStateOrLedgerIsRefused(t *testing.T) {
	t.Parallel()
	for _, which := range []string{"state", "ledger"} {
		t.Run(which, func(t *testing.T) {
			t.Parallel()
			gh := newGitHub(t)
			d := newDeployment(t, gh, deployOpts{agentMode: "verdict", env: []string{
				"FAKE_AGENT_VERDICT=environment", "FAKE_AGENT_CONFIDENCE=0.95",
				"FAKE_AGENT_EVIDENCE=[\"`could not resolve host github.com`\"]"}})
			d.appendLog(failure(t0, "git.failed", "git fetch failed: could not resolve host github.com"))
			target := filepath.Join(t.TempDir(), "someone-elses.json")
			const content = `{"attempts":{}}`
			os.WriteFile(target, []byte(content), 0o644)
			link := d.state
			if which == "ledger" {
				link = filepath.Join(filepath.Dir(d.state), "diagnoses.jsonl")
			}
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			res := d.run("run", "--now", t0.Add(time.Hour).Format(time.RFC3339))
			if res.code == 0 || !strings.Contains(res.stderr, link+" is a symbolic link") {
				t.Fatalf("exit %d, want an error saying %s is a symbolic link:\n%s", res.code, link, res.stderr)
			}
			if which == "state" && !strings.Contains(res.stderr, "point --state at the real file") {
				t.Errorf("the error does not say how to fix it:\n%s", res.stderr)
			}
			if b, _ := os.ReadFile(target); string(b) != content {
				t.Errorf("the link's target was changed: %q", b)
			}
			if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Error("the link was replaced")
			}
		})
	}
}

// status says whether the kernel confines the agent: for a known CLI, the
// Landlock ABI or that there is none; an operator's command, not at all.
func TestStatusSaysWhetherTheKernelConfinesTheAgent(t *testing.T) {
	t.Parallel()
	ok, detail := sandbox.Available()
	d := newDeployment(t, nil, deployOpts{harness: "claude"})
	res := d.run("status")
	if res.code != 0 || !strings.Contains(res.stdout, "agent confinement by the kernel: "+detail) {
		t.Fatalf("status does not say how the agent is confined (%s):\n%s\n%s", detail, res.stdout, res.stderr)
	}
	if ok && !strings.Contains(detail, "Landlock ABI") {
		t.Errorf("detail %q names no ABI", detail)
	}
	if res := newDeployment(t, nil, deployOpts{}).run("status"); strings.Contains(res.stdout, "agent confinement") {
		t.Errorf("status claims a confinement for an operator's command:\n%s", res.stdout)
	}
}
