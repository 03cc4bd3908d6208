package stages

import (
	"fmt"
	"strings"
	"testing"
)

// The record's own identity (fields the allow-list drops) is masked where
// its error text or the group's template repeats it.
func TestDossierMasksTheRecordsIdentityInItsErrorAndTemplate(t *testing.T) {
	for i, c := range []struct{ owner, repo, num, tmux string }{
		{"initech", "secret-payroll", "12", "loop-payroll-12"},
		{"globex-labs", "hr_portal", "7", "work-hr-7"},
		{"umbrella", "Vault2", "3141", "agent-vault-3141"},
	} {
		g := sampleGroup()
		g.Template = fmt.Sprintf("gh issue view <n> --repo %s/%s failed: HTTP <n>", c.owner, c.repo)
		for k := range g.Samples {
			f := &g.Samples[k].Fields
			f.Set("work_item", fmt.Sprintf("github:%s/%s#%s", c.owner, c.repo, c.num))
			f.Set("tmux_target", c.tmux+":0.0")
			f.Set("error", fmt.Sprintf("gh issue view %s --repo %s/%s failed: HTTP 404 (tmux %s:0.0)", c.num, c.owner, c.repo, c.tmux))
		}
		md := BuildDossier(g, testScrubber, DossierMaxChars)
		for _, leak := range []string{c.owner, c.repo, c.tmux, "view " + c.num} {
			if strings.Contains(md, leak) {
				t.Errorf("case %d: dossier leaks %q:\n%s", i, leak, md)
			}
		}
		if !strings.Contains(md, "HTTP 404") || !strings.Contains(md, "gh issue view") {
			t.Errorf("case %d: the error's ordinary text is gone:\n%s", i, md)
		}
	}
}
