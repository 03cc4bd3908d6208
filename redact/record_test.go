package redact

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// recordGen draws a record's identity fields as deployments vary them.
type recordGen struct{ r *rand.Rand }

func (g recordGen) pick(xs ...string) string { return xs[g.r.Intn(len(xs))] }

type genRecord struct {
	owner, repo, number, tmux, user, delivery, actor, branch string
	fields                                                   map[string]string
}

func (g recordGen) record() genRecord {
	var rec genRecord
	rec.owner = g.pick("initech", "acme", "globex-corp", "umbrella", "hooli", "wonka", "soylent", "tyrell") + g.pick("", "", "-labs", "42")
	rec.repo = g.pick("secret-payroll", "payroll", "billing-core", "private_repo", "ledger", "hr-portal", "Vault") + g.pick("", "", "-v2", "2")
	rec.number = fmt.Sprint(1 + g.r.Intn(4000))
	rec.tmux = g.pick("loop", "work", "agent") + "-" + rec.repo + "-" + rec.number
	rec.user = g.pick("nkarimi", "jdoe", "lena", "svc-loop", "mraman")
	rec.delivery = fmt.Sprintf("%08x-%04x-11ef-%04x-%012x", g.r.Uint32(), g.r.Intn(0xffff), g.r.Intn(0xffff), g.r.Int63n(1<<47))
	rec.actor = g.pick("octocat", "mona-lisa", "dependabot-preview", "kwame99")
	rec.branch = g.pick("fix/"+rec.repo+"-timeout", "feature/sso-"+rec.number, rec.user+"/hotfix")
	rec.fields = map[string]string{
		"work_item":   g.pick("github:", "") + rec.owner + "/" + rec.repo + "#" + rec.number,
		"tmux_target": rec.tmux + ":0.0",
		"cwd":         "/home/" + rec.user + "/work/" + rec.repo,
		"delivery_id": rec.delivery,
		"actor":       rec.actor,
		"branch":      rec.branch,
	}
	return rec
}

func identityOf(fields map[string]string) RecordIdentity {
	var id RecordIdentity
	for k, v := range fields {
		id.Add(k, v)
	}
	return id
}

func TestScrubRecordMasksTheRecordsOwnIdentity(t *testing.T) {
	r := New(Options{})
	g := recordGen{rand.New(rand.NewSource(9))}
	templates := []string{
		"gh issue view %[3]s --repo %[1]s/%[2]s failed: HTTP 404",
		"git push origin %[8]s: remote: Repository not found. fatal: repository 'https://github.com/%[1]s/%[2]s.git/' not found",
		"tmux send-keys -t %[4]s:0.0 failed: can't find session %[4]s",
		"webhook delivery %[6]s for %[1]s/%[2]s#%[3]s rejected: signature mismatch",
		"permission denied: %[7]s cannot push to %[1]s/%[2]s",
		"claude exited 1 in /home/%[5]s/work/%[2]s: not a git repository",
		"fetch https://api.github.com/repos/%[1]s/%[2]s/issues/%[3]s: 403",
	}
	n := 0
	for i := 0; i < 140; i++ {
		rec := g.record()
		id := identityOf(rec.fields)
		text := fmt.Sprintf(templates[i%len(templates)], rec.owner, rec.repo, rec.number, rec.tmux, rec.user, rec.delivery, rec.actor, rec.branch)
		out := r.ScrubRecord(text, id)
		n++
		for _, leak := range []string{rec.owner, rec.repo, rec.tmux, rec.delivery, rec.actor, "/" + rec.user + "/", "#" + rec.number, "issues/" + rec.number, "view " + rec.number} {
			if strings.Contains(strings.ToLower(out), strings.ToLower(leak)) {
				t.Errorf("identity %q survives:\n in: %s\nout: %s", leak, text, out)
			}
		}
		if again := r.ScrubRecord(out, id); again != out {
			t.Errorf("not idempotent: %q -> %q", out, again)
		}
		if plain := r.Scrub(text); strings.Contains(text, rec.owner+"/"+rec.repo) && !strings.Contains(plain, rec.owner+"/"+rec.repo) {
			t.Errorf("Scrub without the record's identity masked its repository: %s", plain)
		}
	}
	t.Logf("%d generated records", n)
}

func TestScrubRecordKeepsWordsAndEnumValues(t *testing.T) {
	r := New(Options{})
	id := identityOf(map[string]string{
		"work_item": "github:the-loop/docs#7", "tmux_target": "loop-docs-134:0.0", "branch": "main",
		"cwd": "/home/runner/work/docs", "harness": "claude", "via": "webhook", "level": "error", "source": "cli",
		"actor": "build", "note": "retry later",
	})
	for _, text := range []string{
		"git push origin main failed: docs build failed after 7 attempts",
		"claude exited 1 via webhook (level error) from cli",
		"runner picked up the work in 134 ms; line 7 of main.go",
		"see the docs; 0.0.0.0:8080 and v1.7.0",
	} {
		if out := r.ScrubRecord(text, id); out != text {
			t.Errorf("ordinary text changed by the record's identity:\n in: %s\nout: %s", text, out)
		}
	}
	if out := r.ScrubRecord("tmux: can't find loop-docs-134:0.0", id); strings.Contains(out, "loop-docs-134") {
		t.Errorf("tmux target survives: %s", out)
	}
}

// A whole value that is a common word (branch main, actor admin) is the
// record's identity only where the text marks it as a value: quoted on its
// own, as the leaf of the ref being pushed, as an option's argument.
// Elsewhere it is prose or code (a function main, a base origin/main).
func TestACommonWordValueIsMaskedOnlyWhereMarkedAsAValue(t *testing.T) {
	r := New(Options{})
	for _, branch := range []string{"main", "master", "develop", "staging"} {
		id := identityOf(map[string]string{"branch": branch, "actor": "admin"})
		for _, text := range []string{
			"fatal: '" + branch + "' is already checked out at '/srv/x'",
			"git worktree add /tmp/wt -b " + branch + ": exit status 128",
			"git push origin --delete " + branch + ": remote ref does not exist",
			"git push origin HEAD:refs/heads/" + branch + ": exit status 1",
			"! [remote rejected] HEAD -> " + branch + " (protected branch hook declined)",
			`checkout "` + branch + `" failed`,
			"A pull request already exists for the-loop-bot:" + branch + ".",
			"ref=" + branch + " rejected",
		} {
			if out := r.ScrubRecord(text, id); strings.Contains(out, branch) {
				t.Errorf("branch %s survives where it stands as a value: %s", branch, out)
			}
		}
		for _, text := range []string{
			"git rebase origin/" + branch + ": exit status 1",
			"git push origin " + branch + " failed: the " + branch + " line is busy",
			"  File \"/app/cli.py\", line 9, in " + branch,
			"admin rights needed to write " + branch + ".go",
		} {
			if out := r.ScrubRecord(text, id); out != text {
				t.Errorf("prose changed by the common value %s:\n in: %s\nout: %s", branch, text, out)
			}
		}
	}
}

func TestRecordIdentityFindAndUnion(t *testing.T) {
	a, b := RecordIdentity{}, RecordIdentity{}
	a.Add("work_item", "github:initech/secret-payroll#12")
	b.Add("delivery_id", "d-7f3a9c21")
	u := a.Union(b)
	text := "gh issue view 12 --repo initech/secret-payroll; delivery d-7f3a9c21"
	got := u.Find(text)
	var runs []string
	for _, sp := range got {
		runs = append(runs, text[sp[0]:sp[1]])
	}
	if want := "12,initech/secret-payroll,d-7f3a9c21"; strings.Join(runs, ",") != want {
		t.Errorf("Find = %q, want %q", strings.Join(runs, ","), want)
	}
	if a.Key() == u.Key() || a.Union(RecordIdentity{}).Key() != a.Key() || !(RecordIdentity{}).Empty() {
		t.Errorf("Key/Union/Empty inconsistent")
	}
}

func FuzzScrubRecord(f *testing.F) {
	f.Add("gh issue view 7 --repo acme/private-repo", "github:acme/private-repo#7")
	f.Add("#7 #7# acme//acme", "acme/x#7")
	f.Add("<redacted:identity>/x", "x/<redacted")
	f.Fuzz(func(t *testing.T, text, workItem string) {
		var id RecordIdentity
		id.Add("work_item", workItem)
		id.Add("cwd", workItem)
		once := testRedactor.ScrubRecord(text, id)
		if twice := testRedactor.ScrubRecord(once, id); twice != once {
			t.Fatalf("not idempotent:\n   in: %q\n once: %q\ntwice: %q", text, once, twice)
		}
		if len(once) > MaxGrowth*len(text) {
			t.Fatalf("output %d bytes for %d input bytes", len(once), len(text))
		}
	})
}

// A working directory may hold spaces (a macOS home named after its owner):
// its user is masked where the path reappears; other free text with spaces
// is not identity.
func TestAPathWithSpacesIsIdentity(t *testing.T) {
	r := New(Options{})
	id := identityOf(map[string]string{"cwd": "/Users/Ana M./work/ledger", "note": "retry later today"})
	out := r.ScrubRecord("open /Users/Ana M./.config/the-loop/config.yaml: too many open files; retry later today", id)
	if strings.Contains(out, "Ana M.") {
		t.Errorf("the home's owner survives: %s", out)
	}
	if !strings.Contains(out, "retry later today") || !strings.Contains(out, "config.yaml") {
		t.Errorf("free text or the file name lost: %s", out)
	}
}
