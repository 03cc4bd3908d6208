package redact

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// ordinarySnippets generates text a maintainer needs verbatim: ids, stack
// traces of four languages, paths, and prose full of words that are also
// common account and host names (root, admin, dev, runner, loop, ci, api,
// build, server), none of them standing as an account or a machine.
func ordinarySnippets(n int) []string {
	r := rand.New(rand.NewSource(21))
	hex := func(k int) string {
		b := make([]byte, k)
		for i := range b {
			b[i] = "0123456789abcdef"[r.Intn(16)]
		}
		return string(b)
	}
	pick := func(xs ...string) string { return xs[r.Intn(len(xs))] }
	pkg := func() string {
		return pick("queue", "store", "httpx", "sync", "runner", "build", "server", "admin", "loop")
	}
	templates := []func() string{
		func() string { return "commit " + hex(40) + " (HEAD -> main, origin/main)" },
		func() string {
			return fmt.Sprintf("request_id=%s-%s-4%s-a%s-%s status=%d", hex(8), hex(4), hex(3), hex(3), hex(12), 200+r.Intn(400))
		},
		func() string {
			return fmt.Sprintf("goroutine %d [running]:\ngithub.com/acme/widget/internal/%s.(*Runner).Run(0xc000%s)\n\t/usr/local/go/src/runtime/panic.go:%d +0x%s", r.Intn(90), pkg(), hex(6), 100+r.Intn(900), hex(3))
		},
		func() string {
			return fmt.Sprintf("Traceback (most recent call last):\n  File \"src/app/%s/views.py\", line %d, in handle\n    raise ValueError(\"bad input\")\nValueError: bad input", pkg(), r.Intn(500))
		},
		func() string {
			return fmt.Sprintf("java.lang.IllegalStateException: pool closed\n\tat com.acme.%s.Pool.borrow(Pool.java:%d)\n\tat com.acme.%s.Worker.run(Worker.java:%d)", pkg(), r.Intn(400), pkg(), r.Intn(400))
		},
		func() string {
			return fmt.Sprintf("TypeError: Cannot read properties of undefined (reading '%s')\n    at Object.<anonymous> (node_modules/%s/index.js:%d:%d)", pick("id", "root", "user", "build"), pick("express", "dev-server", "loop-utils"), r.Intn(300), r.Intn(40))
		},
		func() string {
			return "Root cause: " + pick("the root directory is full", "a dev server left running", "the build cache was cold", "a retry loop")
		},
		func() string {
			return pick("the dev server restarted", "dev dependencies are missing", "npm run dev exited 1", "devDependencies: 12")
		},
		func() string {
			return pick("the GitHub Actions runner picked up job ", "runner pool exhausted after ", "self-hosted runner offline for ") + fmt.Sprint(r.Intn(500))
		},
		func() string { return "sudo: root privileges required" },
		func() string {
			return pick("build failed", "build succeeded in 4m3s", "Build step 'Execute shell' marked build as failure", "build #"+fmt.Sprint(r.Intn(900)))
		},
		func() string {
			return pick("server error", "Internal Server Error", "server closed idle connection", "the server is shutting down") + fmt.Sprintf(" (%d)", 500+r.Intn(4))
		},
		func() string {
			return "GET https://api.github.com/repos/acme/widget/pulls/" + fmt.Sprint(r.Intn(900)) + ": 502 Bad Gateway"
		},
		func() string {
			return "the-loop " + pick("stop", "status", "watch", "restart") + " was not applied; the-loop v1." + fmt.Sprint(r.Intn(9))
		},
		func() string {
			return pick("cmd > /dev/null 2>&1", "open /dev/null: permission denied", "/dev/shm is full", "mounted /dev/sda1 on /boot")
		},
		func() string {
			return pick("admin panel returned 403", "the admin API rejected the call", "adminUrl not set")
		},
		func() string {
			return pick("ci pipeline #", "CI job ", "circleci config invalid at line ", "jenkins: job ") + fmt.Sprint(r.Intn(999))
		},
		func() string {
			return pick("ubuntu-latest image updated to ", "Ubuntu 24.04 LTS kernel ", "apt on ubuntu: E: Unable to locate package ") + fmt.Sprint(r.Intn(99))
		},
		func() string {
			return pick("infinite loop detected in ", "event loop blocked for ", "loop iteration ") + fmt.Sprint(r.Intn(9000)) + "ms"
		},
		func() string {
			return pick("api gateway timeout", "API rate limit exceeded", "api_version=2024-06-01", "the api returned 429")
		},
		func() string {
			return pick("jenkins", "Jenkinsfile", "jenkins-agent") + " " + pick("pipeline aborted", "stage 'test' failed")
		},
		func() string {
			return fmt.Sprintf("took %dms; retry %d/5 after %ds; exit status %d", r.Intn(9000), r.Intn(5)+1, r.Intn(60), r.Intn(3))
		},
		func() string {
			return fmt.Sprintf("2025-11-%02dT%02d:%02d:%02d.%03dZ INFO scan done lines=%d", 1+r.Intn(28), r.Intn(24), r.Intn(60), r.Intn(60), r.Intn(1000), r.Intn(1e6))
		},
		func() string { return "go: downloading github.com/acme/widget v0.0.0-20251120153012-" + hex(12) },
		func() string { return "pulled ghcr.io/acme/build-" + pkg() + "@sha256:" + hex(64) },
		func() string { return "ts=" + fmt.Sprint(1700000000+r.Intn(1e8)) + " level=warn msg=\"slow query\"" },
		func() string {
			return "internal/queue/runner.go:" + fmt.Sprint(r.Intn(900)) + ": " + pick("context deadline exceeded", "pool closed", "lock held by another build")
		},
		func() string {
			return pick("TestRunnerRetries", "BuildServerConfig", "LoopDetector", "DevServerProxy", "RootCAs", "AdminClient", "CIProvider") + " failed"
		},
		func() string {
			return "dial tcp 140.82.112." + fmt.Sprint(1+r.Intn(6)) + ":443: i/o timeout; nameserver 8.8.8.8; 127.0.0.1:" + fmt.Sprint(1024+r.Intn(60000))
		},
		func() string {
			return "user-agent: " + pick("curl/8.5.0", "Go-http-client/1.1", "the-loop-diagnose/0.1")
		},
		func() string { return "the build server ran out of disk; see docs/runbook.md#build-server" },
		func() string { return "permission denied for the root user is expected on CI" },
	}
	out := make([]string, 0, n)
	for i := 0; len(out) < n; i++ {
		out = append(out, templates[i%len(templates)]())
	}
	return out
}

// TestOrdinaryTextIsKeptWhoeverRunsTheTool runs the ordinary-text set
// under each common account and host name and needs 99% of it unchanged.
func TestOrdinaryTextIsKeptWhoeverRunsTheTool(t *testing.T) {
	snippets := ordinarySnippets(240)
	users := []string{"root", "admin", "dev", "ubuntu", "runner", "loop", "jenkins", "ci"}
	hosts := []string{"build", "api", "server", "ci-runner-7", "web-01.prod.example.com"}
	var table strings.Builder
	fmt.Fprintf(&table, "%-8s", "USER")
	for _, h := range hosts {
		fmt.Fprintf(&table, " %24s", h)
	}
	table.WriteString("\n")
	for _, u := range users {
		fmt.Fprintf(&table, "%-8s", u)
		home := "/home/" + u
		if u == "root" {
			home = "/root"
		}
		for _, h := range hosts {
			r := New(Options{User: u, Host: h, Home: home})
			kept := 0
			for _, s := range snippets {
				if out := r.Scrub(s); out == s {
					kept++
				} else {
					t.Logf("USER=%s HOST=%s changed:\n in: %s\nout: %s", u, h, s, out)
				}
			}
			share := float64(kept) / float64(len(snippets))
			fmt.Fprintf(&table, " %24s", fmt.Sprintf("%d/%d %.3f", kept, len(snippets), share))
			if share < 0.99 {
				t.Errorf("USER=%s HOST=%s: %.3f of ordinary snippets unchanged, want >= 0.99", u, h, share)
			}
		}
		table.WriteString("\n")
	}
	t.Logf("ordinary snippets unchanged per identity:\n%s", table.String())
}

// TestOwnIdentityIsMaskedWhereItStandsAsIdentity: the same names, in the
// slots where they name this account or machine, are masked.
func TestOwnIdentityIsMaskedWhereItStandsAsIdentity(t *testing.T) {
	for _, u := range []string{"root", "dev", "runner", "loop", "ci", "jdoe42"} {
		for _, h := range []string{"build", "api", "ci-runner-7", "web-01.prod.example.com"} {
			r := New(Options{User: u, Host: h})
			short, _, _ := strings.Cut(h, ".")
			for _, text := range []string{
				"ssh " + u + "@" + h + ": Permission denied (publickey)",
				"ssh: Permission denied (publickey) for user " + u + " on bastion",
				"the daemon runs as " + u + ", which cannot read /etc/shadow",
				"sudo: " + u + " is not in the sudoers file.",
				"USER=" + u + " LOGNAME=" + u,
				u + "      93319  0.0  1.2 712344 40812 ?  Ssl  10:01   0:03 the-loop",
				"node " + h + " reported DiskPressure",
				"hostname=" + h + " attempt=2",
				"Nov 29 22:11:05 " + h + " the-loop[9171]: worker exited",
			} {
				out := r.Scrub(text)
				isUser := strings.Contains(text, u) && !strings.Contains(text, h+" ") && !strings.Contains(text, "="+h)
				word := u
				if !isUser || strings.HasPrefix(text, "node ") || strings.HasPrefix(text, "Nov") {
					word = short
				}
				if strings.Contains(" "+out+" ", " "+word+" ") || strings.Contains(out, word+"@") || strings.Contains(out, "="+word) || strings.Contains(out, word+",") {
					t.Errorf("USER=%s HOST=%s: %q survives in %q", u, h, word, out)
				}
			}
		}
	}
}
