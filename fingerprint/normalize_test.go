package fingerprint

import (
	"strings"
	"testing"
)

func fp(event, errText string) string {
	return Compute(Input{Event: event, Error: errText}).Fingerprint
}

// Each pair differs only in something volatile: one defect, one fingerprint.
var volatilePairs = []struct{ rule, a, b string }{
	{"line numbers", "config.go:12: unexpected token", "config.go:97: unexpected token"},
	{"pids", "worker pid 4121 exited", "worker pid 77 exited"},
	{"ports", "dial tcp 127.0.0.1:41234: connect: connection refused", "dial tcp 127.0.0.1:5432: connect: connection refused"},
	{"ipv4", "connect to 10.0.0.7 failed", "connect to 192.168.1.20 failed"},
	{"ipv6", "connect to [fe80::1%eth0]:443 failed", "connect to [2001:db8::ff00:42:8329]:80 failed"},
	{"host names", "lookup api.github.com: no such host", "lookup ghe.corp.example.org: no such host"},
	{"host:port", "connect ghe-7:8443 refused", "connect buildbox:22 refused"},
	{"pod suffixes", "pod runner-7f9c8d5b6-xk2p9 evicted", "pod runner-5d4b9c7f8-q8wzt evicted"},
	{"user names", "session opened for user alice", "session opened for user bob"},
	{"home dirs", "open /home/alice/.the-loop/config.yaml: permission denied", "open /Users/bob/.the-loop/config.yaml: permission denied"},
	{"checkout roots", "read /srv/ci/work-81/repo/go.mod: no such file", "read /tmp/tmp.XyZ12/repo/go.mod: no such file"},
	{"temp dirs", "mkdir /tmp/the-loop-123456/work: file exists", "mkdir /tmp/the-loop-9/work: file exists"},
	{"windows paths", `open C:\Users\bob\AppData\x.tmp: denied`, `open D:\build\agent\y.tmp: denied`},
	{"rfc3339", "lease expired at 2026-01-02T03:04:05.123Z", "lease expired at 2025-12-31T23:59:59+02:00"},
	{"syslog time", "restarted at Sun Jul  3 10:05:25 2005 by cron", "restarted at Mon Jun 20 03:40:59 2005 by cron"},
	{"durations", "context deadline exceeded after 1.5s", "context deadline exceeded after 300ms"},
	{"compound durations", "timed out after 2m30.5s", "timed out after 45s"},
	{"sizes", "body too large: 10 MB", "body too large: 512 KB"},
	{"sizes in brackets", "sent 1190 bytes (1.16 KB) to peer", "sent 0 bytes to peer"},
	{"counts", "3 of 7 checks failed", "12 of 40 checks failed"},
	{"uuids", "job 550e8400-e29b-41d4-a716-446655440000 failed", "job b9000564-fe1a-409b-b8cc-1e88b294cd1d failed"},
	{"full shas", "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 not found", "commit 1b2c3d4e5f60718293a4b5c6d7e8f90112233445 not found"},
	{"short shas", "checkout of a1b2c3d failed", "checkout of 0f9e8d7 failed"},
	{"hex addresses", "nil pointer at 0xc000123abc", "nil pointer at 0x7f"},
	{"request ids", "request req_8f3a9b2c1d7e failed", "request req_1234567890ab failed"},
	{"trace ids", "trace_id=4bf92f3577b34da6a3ce929d0e0e4736 upstream error", "trace_id=00f067aa0ba902b7 upstream error"},
	{"tokens in key=value", "auth failed token=ghp_abc123XYZ", "auth failed token=ghs_zzz"},
	{"query strings", "GET https://api.github.com/repos/o/r/issues?page=2&per_page=100: 502 Bad Gateway", "GET https://ghe.example.com/api/v3/x?page=9: 502 Bad Gateway"},
	{"duplicate key values", `duplicate key value violates unique constraint "users_email_key": Key (email)=(a@b.c) already exists`, `duplicate key value violates unique constraint "users_email_key": Key (email)=(zed@x.org) already exists`},
	{"invalid literals", `strconv.Atoi: parsing "12x": invalid syntax`, `strconv.Atoi: parsing "9 9": invalid syntax`},
	{"quoted prose", `unexpected reply "The request timed out."`, `unexpected reply "connection reset by peer"`},
	{"negative numbers", "offset -5 out of range", "offset 17 out of range"},
	{"goroutine ids", "goroutine 1234 blocked on chan", "goroutine 7 blocked on chan"},
	{"booleans", "flag ready:true not honoured", "flag ready:false not honoured"},
	{"id lists", "cannot delete blk_-514 blk_876 blk_12", "cannot delete blk_99"},
	{"numbers in symbols", "synchronized to #3#", "synchronized to 10.100.20.250"},
	{"per-run branch names", "git push origin HEAD:refs/heads/the-loop/4521-fix-flaky-login-3fa9c1: rejected", "git push origin HEAD:refs/heads/the-loop/977-bump-deps-0be2aa: rejected"},
	{"quoted branch names", "fatal: 'fix/4521-login' is already checked out", "fatal: 'feat/12-docs-typo' is already checked out"},
	{"e-mail addresses", "push declined (author alice@example.com): private", "push declined (author bob.k+loop@corp.example.org): private"},
	{"quoted data values", "KeyError: 'gpt-5.1-codex'", "KeyError: 'claude-opus-4-1'"},
	{"ids in file names", "read /home/user0/.cache/the-loop/run-abc0.json: unexpected EOF", "read /home/user1/.cache/the-loop/run-abc1.json: unexpected EOF"},
	{"short shas of letters only", "error: could not apply bcadcab... address review", "error: could not apply 3f9a2c1... address review"},
	{"hex ids ending in a digit", "invalid literal for int() with base 10: 'fbcef7'", "invalid literal for int() with base 10: '0a9b3c'"},
	{"ids in relative file names", "write cache/run-abc0.json: unexpected EOF", "write cache/run-abc1.json: unexpected EOF"},
	{"object ids after @", "com.acme.Store@6d06d69c is closed", "com.acme.Store@1b2c3d4e is closed"},
	{"quoted input after parsing", `strconv.ParseInt: parsing "abc": invalid syntax`, `strconv.ParseInt: parsing "zzz": invalid syntax`},
	{"machine names after host", "lock held on host build-agent-07 since boot", "lock held on host ci-3 since boot"},
	{"unresolved host names", "Could not resolve host: ghe.corp", "Could not resolve host: github.com"},
	{"scp-style git remotes", "failed to push some refs to 'git@github.com:acme/widget.git'", "failed to push some refs to 'git@github.com:stark/jarvis.git'"},
	{"ssh endpoints", "dial git@10.0.0.4:22 refused", "dial git@ghe.example.com:2222 refused"},
	{"quoted pod names", `pods "api-7d9f8b-x2k4p" not found`, `pods "api-5c6b7d-q9w8e" not found`},
	{"relative dirs holding data", "load logs/2026-01-02/run-17/config.yaml: bad indent", "load logs/2025-12-31/run-3/config.yaml: bad indent"},
}

// Each pair differs in something that names the defect.
var identityPairs = []struct{ rule, a, b string }{
	{"HTTP status", "gh api: HTTP 410", "gh api: HTTP 422"},
	{"HTTP status line", "HTTP/1.1 404 Not Found", "HTTP/1.1 500 Not Found"},
	{"exit status", "agent exited: exit 137", "agent exited: exit 143"},
	{"exit status words", "exit status 1", "exit status 2"},
	{"status key", "post failed status=401", "post failed status=403"},
	{"exit_code key", "harness exit_code=137", "harness exit_code=1"},
	{"signal", "killed by signal 9", "killed by signal 15"},
	{"errno", "[Errno 2] No such file or directory", "[Errno 13] No such file or directory"},
	{"sqlstate", "insert failed (SQLSTATE 23505)", "insert failed (SQLSTATE 23503)"},
	{"vendor code", "ORA-00942: table or view does not exist", "ORA-01017: table or view does not exist"},
	{"vendor code E", "E11000 duplicate key error", "E11001 duplicate key error"},
	{"error class", "ValueError: bad input", "TypeError: bad input"},
	{"errno name", "open x: ENOENT", "open x: EACCES"},
	{"signal name", "terminated by SIGKILL", "terminated by SIGTERM"},
	{"operation open/write", "open config: permission denied", "write config: permission denied"},
	{"operation connect/read", "dial tcp 10.0.0.1:443: connect: connection refused", "dial tcp 10.0.0.1:443: read: connection refused"},
	{"operation push/fetch", "git push origin: rejected", "git fetch origin: rejected"},
	{"project file", "open /home/u/.the-loop/config.yaml: permission denied", "open /home/u/.the-loop/state.db: permission denied"},
	{"env var", "GITHUB_TOKEN is not set", "GH_TOKEN is not set"},
	{"json field", `json: unknown field "retries"`, `json: unknown field "timeout"`},
	{"table", `relation "issues" does not exist`, `relation "repos" does not exist`},
	{"constraint", `violates unique constraint "users_email_key"`, `violates unique constraint "users_name_key"`},
	{"cli tool", `exec: "gh": executable file not found in $PATH`, `exec: "git": executable file not found in $PATH`},
	{"module", "ModuleNotFoundError: No module named 'yaml'", "ModuleNotFoundError: No module named 'requests'"},
	{"route template", "POST /repos/{owner}/{repo}/issues: 403", "POST /repos/{owner}/{repo}/labels: 403"},
	{"code names with digits", "cannot unmarshal string into int64", "cannot unmarshal string into int32"},
	{"interface", "link down on eth0", "link down on wlan1"},
	{"enum values", "dispatch action=ACTION_DOWN rejected", "dispatch action=ACTION_UP rejected"},
	{"status after a URL", "POST https://api.github.com/repos/o/r/issues: 403 You have exceeded a secondary rate limit", "POST https://api.github.com/repos/o/r/issues: 429 You have exceeded a secondary rate limit"},
	{"error code", "The requested URL returned error: 502", "The requested URL returned error: 503"},
	{"http method", `"GET /v2/x HTTP/1.1" failed`, `"POST /v2/x HTTP/1.1" failed`},
	{"exit status after exited", "claude exited 1: boom", "claude exited 2: boom"},
	{"project file after a relative dir with data", "open run-17/config.yaml: denied", "open run-17/state.db: denied"},
	{"capitalised names of hex letters", "unknown type 'Facade'", "unknown type 'Decade'"},
	{"package paths with a major version", "cannot find package github.com/acme/loop/v2/internal/queue", "cannot find package github.com/acme/loop/v2/internal/store"},
	{"routes with an API version", "GET api/v2/users: 404 Not Found", "GET api/v2/orders: 404 Not Found"},
	{"class before an object id", "com.acme.Store@6d06d69c is closed", "com.acme.Cache@6d06d69c is closed"},
	{"plain word after host", "host key mismatch", "host name mismatch"},
	{"flag after a quoted value", `invalid value "abc" for flag -n: parse error`, `invalid value "abc" for flag -m: parse error`},
	{"scoped module names", "Error: Cannot find module '@acme/prompt'", "Error: Cannot find module '@acme/dossier'"},
	{"quoted identifier with digits", `unknown field "retries2"`, `unknown field "timeout2"`},
}

func TestVolatileTokensDoNotSplitADefect(t *testing.T) {
	for _, p := range volatilePairs {
		if a, b := fp("e", p.a), fp("e", p.b); a != b {
			t.Errorf("%s: split one defect:\n  %q -> %q\n  %q -> %q", p.rule, p.a, Normalize(p.a), p.b, Normalize(p.b))
		}
	}
}

func TestIdentityTokensSeparateDefects(t *testing.T) {
	for _, p := range identityPairs {
		if a, b := fp("e", p.a), fp("e", p.b); a == b {
			t.Errorf("%s: merged two defects into %q", p.rule, Normalize(p.a))
		}
	}
}

func TestEventIsIdentity(t *testing.T) {
	if fp("dispatch.failed", "boom") == fp("agent.failed", "boom") {
		t.Error("the same text under two events must be two defects")
	}
}

func TestLegacyMergesWhatV2Keeps(t *testing.T) {
	// The known failure of the-loop's normalizer that v2 fixes.
	if Legacy("e", "HTTP 410") != Legacy("e", "HTTP 422") {
		t.Fatal("expected the legacy normalizer to merge status codes")
	}
	if fp("e", "HTTP 410") == fp("e", "HTTP 422") {
		t.Error("v2 must keep HTTP status codes apart")
	}
}

func TestTemplatesReadWell(t *testing.T) {
	cases := []struct{ in, want string }{
		{"dial tcp 10.0.0.1:5432: connect: connection refused", "dial tcp <*>: connect: connection refused"},
		{"agent exited: exit 137 after 4.2s", "agent exited: exit 137 after <*>"},
		{"open /home/u/.the-loop/config.yaml: permission denied", "open <*>/config.yaml: permission denied"},
		{"job 550e8400-e29b-41d4-a716-446655440000 failed at 2026-01-02T03:04:05Z", "job <*> failed at <*>"},
		{"acquire lock=233570404, tag=\"View Lock\", uid=10037", "acquire lock=<*>, tag=<*>, uid=<*>"},
		{"POST https://api.github.com/repos/o/r/issues?x=1: 422 Unprocessable", "POST https://<*>: 422 Unprocessable"},
		{"", ""},
	}
	for _, c := range cases {
		if got := Normalize(c.in); got != c.want {
			t.Errorf("Normalize(%q)\n  = %q\n want %q", c.in, got, c.want)
		}
	}
}

func TestFingerprintFormat(t *testing.T) {
	r := Compute(Input{Event: "dispatch.failed", Error: "boom 42"})
	if !strings.HasPrefix(r.Fingerprint, "v4:") || len(r.Fingerprint) != len("v4:")+16 {
		t.Errorf("fingerprint %q: want v4: and 16 hex digits", r.Fingerprint)
	}
	if strings.Trim(r.Fingerprint[3:], "0123456789abcdef") != "" {
		t.Errorf("fingerprint %q is not lowercase hex", r.Fingerprint)
	}
}

func TestLongTextIsCappedDeterministically(t *testing.T) {
	long := strings.Repeat("disk full on volume 7 ", 500)
	longer := strings.Repeat("disk full on volume 12345 ", 500)
	if got := Normalize(long); len(got) > maxTemplate {
		t.Errorf("template of %d bytes exceeds the %d cap", len(got), maxTemplate)
	}
	if Normalize(long) != Normalize(longer) {
		t.Error("cap must apply to the masked text, so volatile lengths don't move it")
	}
}

func TestRustPanicsGroupOnTheirMessageNotTheirThread(t *testing.T) {
	fp := func(e string) string { return Compute(Input{Event: "rs.failed", Error: e}).Fingerprint }
	a := fp("thread 'main' panicked at 'called `Option::unwrap()` on a `None` value', src/main.rs:10:5")
	b := fp("thread 'worker-3' panicked at 'called `Option::unwrap()` on a `None` value', src/main.rs:12:9")
	c := fp("thread 'main' panicked at 'index out of bounds: the len is 3 but the index is 7', src/main.rs:10:5")
	d := fp("thread 'tokio-runtime-worker' panicked at src/sync.rs:44:13:\ncalled `Result::unwrap()` on an `Err` value: NotFound")
	e := fp("thread 'main' panicked at src/sync.rs:50:1:\ncalled `Result::unwrap()` on an `Err` value: NotFound")
	if a != b || d != e {
		t.Error("the thread name or the line split one panic")
	}
	if a == c {
		t.Error("two different panic messages in one file merged")
	}
}

func TestRailsBacktracesGroupOnTheInnermostFrame(t *testing.T) {
	fp := func(e string) string { return Compute(Input{Event: "app.failed", Error: e}).Fingerprint }
	a := fp("NoMethodError: undefined method `name' for nil:NilClass\n  app/models/order.rb:12:in `summary'\n  app/controllers/orders_controller.rb:8:in `show'")
	b := fp("NoMethodError: undefined method `name' for nil:NilClass\n  app/models/order.rb:14:in `summary'\n  app/jobs/report_job.rb:20:in `perform'")
	c := fp("NoMethodError: undefined method `name' for nil:NilClass\n  app/models/invoice.rb:12:in `summary'\n  app/jobs/report_job.rb:20:in `perform'")
	if a != b {
		t.Error("callers below the innermost frame split one defect")
	}
	if a == c {
		t.Error("different innermost frames merged")
	}
}

func TestAnEchoedValueAfterAValueWordIsDataButAQuotedNameIsNot(t *testing.T) {
	fp := func(e string) string { return Compute(Input{Event: "app.failed", Error: e}).Fingerprint }
	if fp("ValueError: invalid literal for int() with base 10: 'abc'") != fp("ValueError: invalid literal for int() with base 10: '12x'") {
		t.Error("the echoed literal split one defect")
	}
	if fp("KeyError: 'user_id'") == fp("KeyError: 'account_id'") {
		t.Error("two missing keys (field names: identity) merged")
	}
	if fp("invalid value for field 'timeout': 'abc'") == fp("invalid value for field 'retries': 'abc'") {
		t.Error("the field name before the echoed value was masked")
	}
}
