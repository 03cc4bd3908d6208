package redact

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// pathGen builds paths the way deployments lay them out: a storage root,
// directories naming a customer, project or person, then the source tree.
type pathGen struct{ r *rand.Rand }

func (g pathGen) pick(xs ...string) string { return xs[g.r.Intn(len(xs))] }

func (g pathGen) private() string {
	org := g.pick("acme", "initech", "globex", "umbrella", "hooli", "wonka")
	return g.pick(org+"-private", "clients/"+org, "customers/"+org+"-eu", org+"/payroll-2025", "projects/"+org+"_secret", org)
}

func (g pathGen) tail() (tail string, sep string) {
	return g.pick("src/app/handlers/auth.py:238", "internal/queue/runner.go:404", "lib/python3.12/site-packages/requests/adapters.py",
		"node_modules/express/lib/router/index.js:284", "pkg/store/db.go:77", "src/main/java/com/x/Billing.java:19", "cmd/server/main.go"), "/"
}

func TestPathsMaskWhoseTheyAreAndKeepTheSourceTail(t *testing.T) {
	r := New(Options{})
	g := pathGen{rand.New(rand.NewSource(8))}
	n := 0
	for i := 0; i < 120; i++ {
		priv := g.private()
		tail, _ := g.tail()
		var path string
		switch i % 6 {
		case 0:
			path = "/" + g.pick("srv", "mnt", "data", "opt", "workspace", "builds") + "/" + priv + "/" + tail
		case 1:
			path = "/home/" + g.pick("nkarimi", "ubuntu", "deploy") + "/" + priv + "/" + tail
		case 2:
			path = "~/" + priv + "/" + tail
		case 3:
			path = `D:\` + strings.ReplaceAll(priv+"/"+tail, "/", `\`)
		case 4:
			path = `\\fileserver\` + strings.ReplaceAll(priv+"/"+tail, "/", `\`)
		default:
			path = `C:\\Users\\jdoe\\` + strings.ReplaceAll(priv+"/"+tail, "/", `\\`)
		}
		text := fmt.Sprintf(g.pick("open %s: permission denied", `  File "%s", line 3`, "at %s", "error in (%s)"), path)
		out := r.Scrub(text)
		n++
		org := strings.Split(strings.Split(priv, "/")[len(strings.Split(priv, "/"))-1], "-")[0]
		org = strings.Split(org, "_")[0]
		keepTail := strings.SplitN(tail, "/", 2)[1]
		if i%6 >= 3 {
			keepTail = strings.ReplaceAll(keepTail, "/", `\`)
			if i%6 == 5 {
				keepTail = strings.ReplaceAll(keepTail, `\`, `\\`)
			}
		}
		if strings.Contains(out, org) || !strings.Contains(out, "<redacted:path>") || !strings.Contains(out, keepTail) {
			t.Errorf("path not masked down to its source tail %q:\n in: %s\nout: %s", keepTail, text, out)
		}
		if again := r.Scrub(out); again != out {
			t.Errorf("not idempotent: %q -> %q", out, again)
		}
	}
	for _, c := range [][2]string{
		{"/srv/acme-private/x.txt", "/srv/<redacted:path>/x.txt"},
		{"cp /mnt/clients/initech/q3-salaries.xlsx /tmp/", "cp /mnt/<redacted:path> /tmp/"},
		{`\\fileserver\share\finance\plan.xlsx`, `\\<redacted:path>`},
		{`D:\Clients\Initech\report.docx`, `D:\<redacted:path>`},
	} {
		if out := r.Scrub(c[0]); out != c[1] {
			t.Errorf("%q -> %q, want %q", c[0], out, c[1])
		}
	}
	t.Logf("%d generated paths", n)
}

func TestSystemAndRelativePathsStay(t *testing.T) {
	r := New(Options{})
	for _, text := range []string{
		"/usr/lib/python3.12/json/decoder.py:355", "/usr/local/go/src/runtime/panic.go:770", "/etc/ssl/certs/ca-certificates.crt",
		"> /dev/null 2>&1", "/proc/self/status", "/tmp", "/var/log/syslog", "/opt/homebrew/bin/git", "/etc/ssh/sshd_config",
		"src/app/handlers/auth.py:238", "internal/queue/runner.go:404", "site-packages/requests/adapters.py",
		"node_modules/x/index.js", "GET /api/v1/users/42 returned 500", "https://github.com/acme/widget/blob/main/src/x.go",
		"attempt 2/5", "i/o timeout", `C:\Windows\System32\drivers\etc\hosts`, `C:\Program Files\Git\bin\git.exe`,
		"/Users/Shared/cache", "/root/go/pkg/mod/github.com/acme/x@v1.2.3/y.go:9", "~/.config/the-loop/config.yaml",
		"/home/<redacted:user>/src/x.go", "/var/lib/docker/overlay2", "/bin/sh: 1: make: not found",
	} {
		if out := r.Scrub(text); out != text {
			t.Errorf("path changed:\n in: %s\nout: %s", text, out)
		}
	}
}

// Issue 36 point 6: paths the-loop masks. Credential stores are masked
// whole; under the-loop's state root the repository's directory is masked
// and its repository-relative tail kept; file:// URLs are paths.
func TestPathsTheLoopMasks(t *testing.T) {
	r := New(Options{StateRoots: []string{"/srv/loop-state/"}})
	for _, c := range []struct{ in, gone, kept string }{
		{"cat: /etc/shadow: Permission denied", "shadow", "cat: "},
		{"reading /etc/passwd for uid 1001", "passwd", "for uid 1001"},
		{"Load key \"~/.ssh/id_ed25519_deploy\": bad permissions", "id_ed25519_deploy", "Load key"},
		{"using ~/.aws/credentials profile ops", "credentials", "profile ops"},
		{`File "/var/lib/the-loop/work/northwind-payroll/app/tasks.py", line 88`, "northwind-payroll", "/app/tasks.py"},
		{"stat .the-loop/worktrees/contoso-hr-17/README.md: no such file", "contoso-hr-17", "/README.md"},
		{"git -C /srv/loop-state/repos/fabrikam-ledger status", "fabrikam-ledger", "/srv/loop-state/repos/"},
		{"open file:///home/mkowalski/drafts/q3-layoffs/plan.md", "q3-layoffs", "plan.md"},
		{"see ~/clients/tailspin/notes.txt", "tailspin", "notes.txt"},
	} {
		out := r.Scrub(c.in)
		if strings.Contains(out, c.gone) || !strings.Contains(out, c.kept) || !strings.Contains(out, "<redacted:") {
			t.Errorf("want %q masked and %q kept:\n in: %s\nout: %s", c.gone, c.kept, c.in, out)
		}
	}
	for _, keep := range []string{"/var/lib/the-loop/logs/events.jsonl", "/etc/hosts", "/etc/ssh/sshd_config"} {
		if out := r.Scrub(keep); out != keep {
			t.Errorf("changed:\n in: %s\nout: %s", keep, out)
		}
	}
}
