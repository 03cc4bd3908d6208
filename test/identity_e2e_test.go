package test

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// A private repository named by a record's work_item never reaches the
// public issue, though the record's error repeats it: whichever agent
// writes the issue (the builtin one quotes the error, a careless one echoes
// the whole dossier), and whatever the repository is called.
func TestAPrivateRepositoryNamedByTheWorkItemNeverReachesTheIssue(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewSource(13))
	owners := []string{"initech", "globex-labs", "umbrella", "hooli", "vandelay", "wonka-industries"}
	repos := []string{"secret-payroll", "hr_portal", "merger-plans", "payroll", "Ledger2", "client-x-data"}
	rng.Shuffle(len(repos), func(i, j int) { repos[i], repos[j] = repos[j], repos[i] })
	for k := range owners {
		agent := []deployOpts{{harness: "builtin"}, {agentMode: "injection"}}[k%2]
		owner, repo := owners[k], repos[k]
		num := fmt.Sprint(2 + rng.Intn(3000))
		t.Run(owner+"/"+repo, func(t *testing.T) {
			t.Parallel()
			gh := newGitHub(t)
			d := newDeployment(t, gh, agent)
			errText := fmt.Sprintf("gh issue view %s --repo %s/%s failed: HTTP 404: Not Found (https://api.github.com/repos/%s/%s/issues/%s)", num, owner, repo, owner, repo, num)
			d.appendLog(failure(t0, "issue.fetch.failed", errText, "work_item", fmt.Sprintf("github:%s/%s#%s", owner, repo, num),
				"tmux_target", fmt.Sprintf("loop-%s-%s:0.0", repo, num)))
			if res := d.run("run"); res.code != 0 {
				t.Fatalf("run exit %d\n%s", res.code, res.stderr)
			}
			issues := gh.Issues()
			if len(issues) != 1 {
				t.Fatalf("filed %d issues, want 1", len(issues))
			}
			public := issues[0].Title + "\n" + issues[0].Body
			for _, leak := range []string{owner, repo, "view " + num, "#" + num, "issues/" + num} {
				if strings.Contains(strings.ToLower(public), strings.ToLower(leak)) {
					t.Errorf("the issue names the private work item (%q):\n%s", leak, public)
				}
			}
			if !strings.Contains(public, "HTTP 404") {
				t.Errorf("the issue lost the error's ordinary text:\n%s", public)
			}
		})
	}
}
