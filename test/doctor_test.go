package test

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	fakegh "github.com/the-loop/the-loop-diagnose/fakes/github"
	"github.com/the-loop/the-loop-diagnose/store/pgtest"
)

// doctor checks a setup end to end and files nothing: each broken setup
// fails with exit 1 on the line that names what is wrong (and its fix); a
// working one passes with exit 0.
func TestDoctorNamesWhatIsWrongAndFilesNothing(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		gh      fakegh.Options
		opts    deployOpts
		env     []string
		args    []string
		code    int
		failing string // the check that fails (or passes), with what it says
		fails   int    // checks that fail (default: code)
	}{
		{name: "a working setup", code: 0},
		{name: "the probe's cost is shown", opts: deployOpts{agentMode: "valid",
			harness: "command\n  command: [" + quote(fakeAgent) + `, --prompt-file, "{promptFile}", --output-format, json]`},
			code: 0, failing: "ok    agent probe    harness command answered valid JSON in"},
		{name: "--no-agent skips the probe", opts: deployOpts{agentMode: "garbage"}, args: []string{"--no-agent"}, code: 0},
		{name: "a rejected token", env: []string{"GH_TOKEN=revoked-token"}, code: 1, failing: "FAIL  token          the GitHub token was rejected (Bad credentials)"},
		{name: "no token", env: []string{"GH_TOKEN="}, code: 1, failing: "FAIL  token"},
		{name: "issues disabled", gh: fakegh.Options{IssuesDisabled: true}, code: 1, failing: "FAIL  repository     issues are disabled for acme/widgets"},
		{name: "a token that may not create issues", env: []string{"GH_TOKEN=reader-token"}, code: 1, fails: 2, // nor may it create the label
			failing: "FAIL  create issues  the token may not create issues in acme/widgets"},
		{name: "a missing agent binary", opts: deployOpts{harness: "command\n  command: [/nonexistent/agent-cli, \"{promptFile}\"]"}, code: 1,
			failing: "FAIL  agent binary   harness command: /nonexistent/agent-cli is not found"},
		{name: "an agent answering garbage", opts: deployOpts{agentMode: "garbage"}, code: 1, failing: "FAIL  agent probe    harness command did not return a valid JSON answer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			gh := fakegh.New(tc.gh)
			t.Cleanup(gh.Close)
			gh.AddToken("reader-token", fakegh.Token{Login: "reader", ReadOnly: true})
			d := newDeployment(t, gh, tc.opts)
			d.appendLog(info(t0, "job.completed"), failure(t0, "job.failed", "job crashed: nil map write"))
			d.env = append(d.env, tc.env...)
			res := d.run(append([]string{"doctor"}, tc.args...)...)
			if res.code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", res.code, tc.code, res.stdout, res.stderr)
			}
			if tc.name == "the probe's cost is shown" && !strings.Contains(res.stdout, "(cost $0.0421, 6500 tokens in, 450 out)") {
				t.Fatalf("the probe's cost is not shown:\n%s", res.stdout)
			}
			if tc.failing != "" && !strings.Contains(res.stdout, tc.failing) {
				t.Fatalf("doctor does not say %q:\n%s", tc.failing, res.stdout)
			}
			if tc.code == 0 && !strings.Contains(res.stdout, "every check passed") {
				t.Fatalf("a working setup:\n%s", res.stdout)
			}
			t.Logf("doctor %v: exit %d\n%s", tc.args, res.code, res.stdout)
			if n := strings.Count(res.stdout, "FAIL"); n != max(tc.fails, tc.code) {
				t.Fatalf("%d failing checks, want %d:\n%s", n, max(tc.fails, tc.code), res.stdout)
			}
			for _, line := range strings.Split(res.stdout, "\n") {
				if strings.HasPrefix(line, "FAIL") {
					if i := strings.Index(res.stdout, line) + len(line); !strings.HasPrefix(res.stdout[i:], "\n      fix: ") {
						t.Fatalf("a failing check without its fix: %q", line)
					}
				}
			}
			if len(gh.Issues()) != 0 || gh.CountCreates() != 0 {
				t.Fatalf("doctor filed %d issues", len(gh.Issues()))
			}
		})
	}
}

// doctor --json is the same checks for a machine; a bad config is a usage
// error (exit 2) naming the key.
func TestDoctorJSONAndConfigErrors(t *testing.T) {
	t.Parallel()
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{})
	d.appendLog(info(t0, "job.completed"))
	res := d.run("doctor", "--json", "--no-agent")
	var out struct {
		OK     bool `json:"ok"`
		Checks []struct {
			Name    string `json:"name"`
			OK      bool   `json:"ok"`
			Skipped bool   `json:"skipped"`
			Detail  string `json:"detail"`
		} `json:"checks"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil || res.code != 0 || !out.OK {
		t.Fatalf("exit %d, %v:\n%s%s", res.code, err, res.stdout, res.stderr)
	}
	names := []string{}
	for _, c := range out.Checks {
		names = append(names, c.Name)
		if c.Name == "store" && !strings.Contains(c.Detail, "schema version") {
			t.Fatalf("the store check does not give the schema version: %q", c.Detail)
		}
		if c.Name == "token" && !strings.Contains(c.Detail, "loop-bot") {
			t.Fatalf("the token check does not say whose it is: %q", c.Detail)
		}
	}
	want := "config event log events store token repository create issues label agent binary agent sandbox agent source agent probe"
	if strings.Join(names, " ") != want {
		t.Fatalf("checks %v, want %s", names, want)
	}
	cfg, _ := os.ReadFile(d.config)
	os.WriteFile(d.config, append(cfg, []byte("  maxIssuesPerDya: 3\n")...), 0o644)
	if res := d.run("doctor"); res.code != 2 || !strings.Contains(res.stderr, "maxIssuesPerDya") {
		t.Fatalf("a config error: exit %d, want 2 naming the key\n%s", res.code, res.stderr)
	}
}

// On PostgreSQL the store check opens the database, writes nothing that
// stays, and names its schema version; an unreachable one fails with its
// fix.
func TestDoctorChecksAPostgreSQLStore(t *testing.T) {
	t.Parallel()
	url := pgtest.Start(t)
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{extra: fmt.Sprintf("  store: %s\n", quote(url))})
	d.appendLog(info(t0, "job.completed"))
	res := d.run("doctor", "--no-agent")
	if res.code != 0 || !regexp.MustCompile(`ok    store +postgres \S+ opens and is writable \(schema version \d+\)`).MatchString(res.stdout) {
		t.Fatalf("exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	dead := newDeployment(t, gh, deployOpts{extra: "  store: \"postgres://nobody@127.0.0.1:1/none?connect_timeout=2\"\n"})
	dead.appendLog(info(t0, "job.completed"))
	res = dead.run("doctor", "--no-agent")
	if res.code != 1 || !strings.Contains(res.stdout, "FAIL  store") || !strings.Contains(res.stdout, "fix: ") {
		t.Fatalf("an unreachable store: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}
