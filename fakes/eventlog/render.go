package eventlog

import (
	"strconv"
	"strings"
	"time"
)

// The people, machines and repositories a log is about. Users differ in
// platform, so home directories differ in shape too (/home/x, /Users/x).
var (
	users = []string{"alice", "bob", "carol", "dmitri", "eve", "farah", "gus", "hiro", "ines", "jun"}
	homes = []string{"/home/alice", "/home/bob", "/Users/carol", "/home/dmitri", "/Users/eve",
		"/home/farah", "/home/gus", "/Users/hiro", "/home/ines", "/srv/runner/jun"}
	emails = []string{"alice@example.com", "bob.k@example.org", "carol+loop@example.com",
		"dmitri@example.net", "eve@example.com", "farah.q@example.org", "gus@example.com",
		"hiro.t@example.net", "ines@example.com", "jun@example.org"}
	repos = []string{"acme/widget", "acme/api-gateway", "globex/billing", "initech/tps-reports",
		"umbrella/lab-portal", "hooli/nucleus", "piedpiper/middle-out", "stark/jarvis"}
	repoNames = []string{"widget", "api-gateway", "billing", "tps-reports",
		"lab-portal", "nucleus", "middle-out", "jarvis"}
	models   = []string{"claude-sonnet-4-5", "claude-opus-4-1", "gpt-5.1-codex", "gpt-5-mini", "composer-1"}
	versions = []string{"1.4.1", "1.4.2"}
	// branchSlugs are issue-title slugs in per-run branch names.
	branchSlugs = []string{"fix-flaky-login", "handle-empty-payload", "bump-deps", "retry-budget",
		"docs-typo", "nil-check-in-claim", "rate-limit-backoff", "support-ghes"}
)

// fakeGitHubToken is a ghp_-shaped token made from a fixed seed, so it is the
// same in every log and tests can assert that redaction removes it. It is not
// a real credential: its checksum suffix is not GitHub's.
var fakeGitHubToken = func() string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	r := newRNG(0x10c0ffee, 7)
	b := []byte("ghp_")
	for range 36 {
		b = append(b, alphabet[r.intn(len(alphabet))])
	}
	return string(b)
}()

// fakePassword is the database password some failures print.
const fakePassword = "hunter2"

// scene is what one line is about. Failures draw their volatile tokens from
// it, so the home directory in an error matches the line's cwd, and so on.
type scene struct {
	now   time.Time
	user  int
	repo  int
	issue int
	id    [2]uint64 // delivery id
	// dep, when set (GenerateDeployment), is the incident's own identity:
	// it replaces the fixed users and repositories above.
	dep *identity
}

// renderer expands a defect template's {placeholders} with fresh volatile
// values: every occurrence of a defect differs only where a real log would.
type renderer struct {
	r  *rng
	sc *scene
}

func (x *renderer) render(b []byte, tmpl string) []byte {
	for {
		i := strings.IndexByte(tmpl, '{')
		if i < 0 {
			return append(b, tmpl...)
		}
		j := strings.IndexByte(tmpl[i:], '}')
		if j < 0 {
			return append(b, tmpl...)
		}
		b = append(b, tmpl[:i]...)
		name := tmpl[i+1 : i+j]
		if !isPlaceholder(name) {
			// A literal brace, as in a JSON body quoted inside an error.
			b = append(b, '{')
			tmpl = tmpl[i+1:]
			continue
		}
		b = x.expand(b, name)
		tmpl = tmpl[i+j+1:]
	}
}

// placeholderDocs describes every placeholder; Catalog shows templates with
// them as <name>. Keep it in step with expand.
var placeholderDocs = map[string]string{
	"tmp":        "per-run temp dir /tmp/the-loop-XXXXXX",
	"pid":        "process id",
	"user":       "login name",
	"home":       "home directory of the line's user",
	"email":      "the user's e-mail address (PII)",
	"port":       "TCP port",
	"ip":         "IPv4 address",
	"host":       "worker host name",
	"ts":         "timestamp inside the message",
	"dur":        "duration like 1.234s, 350ms or 2m3.5s",
	"ms":         "integer milliseconds",
	"size":       "byte size like 12.3 MiB",
	"n":          "small number",
	"big":        "large number",
	"uuid":       "UUID",
	"sha":        "full git SHA",
	"ssha":       "short git SHA",
	"hex6":       "six hex digits",
	"hex16":      "sixteen hex digits",
	"req":        "GitHub request id",
	"reqid":      "API request id req_...",
	"gid":        "goroutine id",
	"line":       "source line number",
	"addr":       "pointer like 0xc000123456",
	"pc":         "program counter offset like +0x1a4",
	"branch":     "per-run branch name",
	"repo":       "owner/name",
	"reponame":   "repository name",
	"issue":      "issue or PR number",
	"tmux":       "the incident's tmux target (session:window.pane)",
	"actor":      "the GitHub account acting on the work item",
	"workitem":   "the work item, owner/name#number",
	"model":      "model name (quoted value)",
	"owner":      "the work item's repository owner",
	"slug":       "an issue-title slug, the same within one record",
	"tmuxsess":   "the incident's tmux session (its target without the pane)",
	"harness":    "the record's own harness",
	"via":        "the record's own via",
	"scratch":    "a quoted name no code has: ~x, -rf, a/b-c, a value with a space or tab",
	"login":      "a login at a host, user@host",
	"token":      "fake GitHub token " + "ghp_… (secret)",
	"password":   "fake database password (secret)",
	"pyframes":   "varying outer Python traceback frames",
	"goroutines": "varying dump of other goroutines",
	"javaframes": "varying outer Java stack frames",
}

func isPlaceholder(name string) bool {
	_, ok := placeholderDocs[name]
	return ok
}

func (x *renderer) expand(b []byte, name string) []byte {
	r, sc := x.r, x.sc
	if d := sc.dep; d != nil {
		switch name {
		case "user":
			return append(b, d.user...)
		case "home":
			return append(b, d.home...)
		case "email":
			return append(b, d.email...)
		case "host":
			return append(b, d.host...)
		case "branch":
			return append(b, d.branch...)
		case "repo":
			return append(b, d.owner+"/"+d.repo...)
		case "reponame":
			return append(b, d.repo...)
		case "issue":
			return strconv.AppendInt(b, int64(d.issue), 10)
		case "tmux":
			return append(b, d.tmux...)
		case "actor":
			return append(b, d.actor...)
		case "workitem":
			b = append(b, d.owner+"/"+d.repo+"#"...)
			return strconv.AppendInt(b, int64(d.issue), 10)
		case "owner":
			return append(b, d.owner...)
		case "slug":
			return append(b, d.slug...)
		case "tmuxsess":
			return append(b, d.tmux[:strings.IndexByte(d.tmux+":", ':')]...)
		case "harness":
			return append(b, d.harness...)
		case "via":
			return append(b, d.via...)
		case "scratch":
			return append(b, d.scratch...)
		case "login":
			return append(b, d.login...)
		}
	}
	switch name {
	case "tmp":
		b = append(b, "/tmp/the-loop-"...)
		return appendHex(b, r.next(), 6)
	case "pid":
		return strconv.AppendInt(b, int64(r.between(1200, 99999)), 10)
	case "user":
		return append(b, users[sc.user]...)
	case "home":
		return append(b, homes[sc.user]...)
	case "email":
		return append(b, emails[sc.user]...)
	case "port":
		return strconv.AppendInt(b, int64(r.between(1024, 65535)), 10)
	case "ip":
		b = append(b, "10."...)
		b = strconv.AppendInt(b, int64(r.intn(256)), 10)
		b = append(b, '.')
		b = strconv.AppendInt(b, int64(r.intn(256)), 10)
		b = append(b, '.')
		return strconv.AppendInt(b, int64(r.between(1, 254)), 10)
	case "host":
		b = append(b, "worker-"...)
		b = strconv.AppendInt(b, int64(r.between(1, 12)), 10)
		return append(b, ".internal"...)
	case "ts":
		t := sc.now.Add(-time.Duration(r.intn(90_000)) * time.Millisecond)
		return t.UTC().AppendFormat(b, time.RFC3339)
	case "dur":
		return appendDuration(b, r)
	case "ms":
		return strconv.AppendInt(b, int64(r.between(3, 30_000)), 10)
	case "size":
		b = strconv.AppendFloat(b, float64(r.between(10, 40_000))/10, 'f', 1, 64)
		return append(b, " MiB"...)
	case "n":
		return strconv.AppendInt(b, int64(r.between(2, 60)), 10)
	case "big":
		return strconv.AppendInt(b, int64(r.between(200_001, 950_000)), 10)
	case "uuid":
		return appendUUID(b, r.next(), r.next())
	case "sha":
		b = appendHex(b, r.next(), 16)
		b = appendHex(b, r.next(), 16)
		return appendHex(b, r.next(), 8)
	case "ssha":
		return appendHex(b, r.next(), 7)
	case "hex6":
		return appendHex(b, r.next(), 6)
	case "hex16":
		return appendHex(b, r.next(), 16)
	case "req":
		return appendRequestID(b, r)
	case "reqid":
		b = append(b, "req_"...)
		b = appendHex(b, r.next(), 12)
		return appendHex(b, r.next(), 12)
	case "gid":
		return strconv.AppendInt(b, int64(r.between(1, 4000)), 10)
	case "line":
		return strconv.AppendInt(b, int64(r.between(12, 900)), 10)
	case "addr":
		b = append(b, "0xc000"...)
		return appendHex(b, r.next(), 6)
	case "pc":
		b = append(b, "+0x"...)
		return appendHex(b, r.next(), 3)
	case "branch":
		// Named after the issue, as the-loop does, so the slug varies too.
		b = append(b, "the-loop/"...)
		b = strconv.AppendInt(b, int64(sc.issue), 10)
		b = append(b, '-')
		b = append(b, r.pick(branchSlugs)...)
		b = append(b, '-')
		return appendHex(b, r.next(), 6)
	case "repo":
		return append(b, repos[sc.repo]...)
	case "reponame":
		return append(b, repoNames[sc.repo]...)
	case "issue":
		return strconv.AppendInt(b, int64(sc.issue), 10)
	case "tmux":
		b = append(b, "loop-"+repoNames[sc.repo]+"-"...)
		b = strconv.AppendInt(b, int64(sc.issue), 10)
		return append(b, ":0.0"...)
	case "actor":
		return append(b, users[sc.user]...)
	case "workitem":
		b = append(b, repos[sc.repo]+"#"...)
		return strconv.AppendInt(b, int64(sc.issue), 10)
	case "model":
		return append(b, r.pick(models)...)
	case "owner":
		return append(b, repos[sc.repo][:strings.IndexByte(repos[sc.repo], '/')]...)
	case "slug":
		return append(b, branchSlugs[sc.issue%len(branchSlugs)]...)
	case "tmuxsess":
		b = append(b, "loop-"+repoNames[sc.repo]+"-"...)
		return strconv.AppendInt(b, int64(sc.issue), 10)
	case "harness":
		return append(b, "claude"...)
	case "via":
		return append(b, "queue"...)
	case "scratch":
		return append(b, scratchNames[sc.issue%len(scratchNames)]...)
	case "login":
		return append(b, users[sc.user]+"@"+loginHosts[sc.user%len(loginHosts)]...)
	case "token":
		return append(b, fakeGitHubToken...)
	case "password":
		return append(b, fakePassword...)
	case "pyframes":
		// The innermost, in-app frame is the defect's identity and is in the
		// template; the callers above it depend on the path that got there.
		n := r.between(1, len(pyCallerFrames))
		first := r.intn(len(pyCallerFrames) - n + 1)
		for _, f := range pyCallerFrames[first : first+n] {
			b = x.render(b, f)
		}
		return b
	case "javaframes":
		n := r.between(2, len(javaCallerFrames))
		for _, f := range javaCallerFrames[:n] {
			b = x.render(b, f)
		}
		return b
	case "goroutines":
		for range r.intn(4) {
			b = x.render(b, r.pick(goroutineDumps))
		}
		return b
	}
	panic("eventlog: unknown placeholder " + name) // isPlaceholder guards this
}

var pyCallerFrames = []string{
	"  File \"/usr/lib/python3.12/asyncio/runners.py\", line {line}, in run\n    return self._loop.run_until_complete(task)\n",
	"  File \"{home}/.local/lib/python3.12/site-packages/aider/main.py\", line {line}, in main\n    coder.run()\n",
	"  File \"{home}/.local/lib/python3.12/site-packages/aider/coders/base_coder.py\", line {line}, in run\n    self.run_one(user_message, preproc)\n",
	"  File \"{home}/.local/lib/python3.12/site-packages/aider/coders/base_coder.py\", line {line}, in run_one\n    list(self.send_message(message))\n",
	"  File \"{home}/.local/lib/python3.12/site-packages/loop_tools/hooks.py\", line {line}, in on_message\n    return self.plugin.handle(msg)\n",
}

var javaCallerFrames = []string{
	"\tat com.jetbrains.ls.imports.WorkspaceImporter.importProject(WorkspaceImporter.java:{line})\n",
	"\tat com.jetbrains.ls.server.LanguageServerImpl.initialize(LanguageServerImpl.java:{line})\n",
	"\tat java.base/jdk.internal.reflect.DirectMethodHandleAccessor.invoke(DirectMethodHandleAccessor.java:{line})\n",
	"\tat java.base/java.lang.reflect.Method.invoke(Method.java:{line})\n",
	"\tat org.eclipse.lsp4j.jsonrpc.services.GenericEndpoint.lambda$recursiveFindRpcMethods$0(GenericEndpoint.java:{line})\n",
	"\tat java.base/java.util.concurrent.ThreadPoolExecutor$Worker.run(ThreadPoolExecutor.java:{line})\n",
	"\tat java.base/java.lang.Thread.run(Thread.java:{line})\n",
}

var goroutineDumps = []string{
	"\ngoroutine {gid} [select]:\ngithub.com/the-loop/the-loop/internal/queue.(*Poller).loop({addr})\n\t/build/internal/queue/poller.go:{line} {pc}\ncreated by github.com/the-loop/the-loop/internal/queue.NewPoller in goroutine 1\n\t/build/internal/queue/poller.go:{line} {pc}\n",
	"\ngoroutine {gid} [IO wait]:\ninternal/poll.runtime_pollWait(0x7f{hex6}, 0x72)\n\t/usr/local/go/src/runtime/netpoll.go:{line} {pc}\nnet/http.(*conn).serve({addr}, {0x{hex6}, {addr}})\n\t/usr/local/go/src/net/http/server.go:{line} {pc}\n",
	"\ngoroutine {gid} [chan receive, {n} minutes]:\ngithub.com/the-loop/the-loop/internal/dispatch.(*Runner).wait({addr})\n\t/build/internal/dispatch/runner.go:{line} {pc}\n",
	"\ngoroutine {gid} [sync.Mutex.Lock]:\nsync.(*Mutex).Lock(...)\n\t/usr/local/go/src/sync/mutex.go:{line}\ngithub.com/the-loop/the-loop/internal/state.(*Store).Save({addr})\n\t/build/internal/state/store.go:{line} {pc}\n",
}

func appendHex(b []byte, v uint64, digits int) []byte {
	for i := digits - 1; i >= 0; i-- {
		b = append(b, hexDigits[(v>>(uint(i%16)*4))&0xf])
	}
	return b
}

func appendUUID(b []byte, hi, lo uint64) []byte {
	b = appendHex(b, hi>>32, 8)
	b = append(b, '-')
	b = appendHex(b, hi>>16, 4)
	b = append(b, '-')
	b = appendHex(b, hi, 4)
	b = append(b, '-')
	b = appendHex(b, lo>>48, 4)
	b = append(b, '-')
	return appendHex(b, lo, 12)
}

// appendRequestID writes GitHub's X-GitHub-Request-Id shape, e.g.
// C8A1:3F2B:1A2B3C:1B2C3D:6734A1B2.
func appendRequestID(b []byte, r *rng) []byte {
	const upperHex = "0123456789ABCDEF"
	for i, n := range [...]int{4, 4, 6, 6, 8} {
		if i > 0 {
			b = append(b, ':')
		}
		v := r.next()
		for j := range n {
			b = append(b, upperHex[(v>>(uint(j)*4))&0xf])
		}
	}
	return b
}

func appendDuration(b []byte, r *rng) []byte {
	switch r.intn(3) {
	case 0:
		b = strconv.AppendInt(b, int64(r.between(5, 999)), 10)
		return append(b, "ms"...)
	case 1:
		b = strconv.AppendFloat(b, float64(r.between(1000, 59999))/1000, 'f', 3, 64)
		return append(b, 's')
	default:
		b = strconv.AppendInt(b, int64(r.between(1, 14)), 10)
		b = append(b, 'm')
		b = strconv.AppendFloat(b, float64(r.between(0, 599))/10, 'f', 1, 64)
		return append(b, 's')
	}
}
