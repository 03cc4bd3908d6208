package fingerprint

import (
	"strings"
	"testing"
)

// v3Same lists, per class of what varies across environments and versions,
// messages of one defect: each group must give one NormalizeV3 template.
var v3Same = []struct {
	class string
	texts []string
}{
	{"test runner tallies", []string{
		"FAILED tests/test_orders.py::test_refund - assert 404 == 201",
		"FAILED tests/test_orders.py::test_refund - assert 404 == 201\n========= 1 failed, 3 passed in 2.13s =========",
		"FAILED tests/test_orders.py::test_refund - assert 404 == 201\n=== 1 failed, 41 passed, 2 warnings in 17.02s ===",
	}},
	{"jest tallies", []string{
		"● cart › adds an item\n  expect(received).toBe(expected)\n  Expected: 3\n  Received: 2",
		"● cart › adds an item\n  expect(received).toBe(expected)\n  Expected: 3\n  Received: 2\nTest Suites: 1 failed, 4 total\nTests:       1 failed, 12 passed, 13 total\nSnapshots:   0 total\nTime:        3.2 s\nRan all test suites.",
	}},
	{"unittest and rspec tallies", []string{
		"AssertionError: 'draft' != 'sent'",
		"AssertionError: 'draft' != 'sent'\nRan 12 tests in 0.031s\nFAILED (failures=1)",
		"AssertionError: 'draft' != 'sent'\n5 examples, 1 failure",
	}},
	{"SQL statement echo and caret", []string{
		`ERROR:  column "totl" does not exist`,
		"ERROR:  column \"totl\" does not exist\nLINE 1: SELECT totl FROM invoices WHERE id = 7\n               ^",
		"ERROR:  column \"totl\" does not exist\nLINE 3:   SELECT totl, name\n                 ^\nSTATEMENT:  SELECT totl, name FROM invoices",
	}},
	{"Node property read", []string{
		"TypeError: Cannot read property 'email' of undefined",
		"TypeError: Cannot read properties of undefined (reading 'email')",
	}},
	{"Node property read of null", []string{
		"TypeError: Cannot read property 'length' of null",
		"TypeError: Cannot read properties of null (reading 'length')",
	}},
	{"Node property set", []string{
		"TypeError: Cannot set property 'innerHTML' of null",
		"TypeError: Cannot set properties of null (setting 'innerHTML')",
	}},
	{"Node JSON.parse", []string{
		"SyntaxError: Unexpected token < in JSON at position 0",
		`SyntaxError: Unexpected token '<', "<!DOCTYPE "... is not valid JSON`,
		`SyntaxError: Unexpected token '<', "<html><bo"... is not valid JSON`,
	}},
	{"Python module not found", []string{
		"ImportError: No module named yaml",
		"ImportError: No module named 'yaml'",
		"ModuleNotFoundError: No module named 'yaml'",
	}},
	{"Python subscripting None", []string{
		"TypeError: 'NoneType' object has no attribute '__getitem__'",
		"TypeError: 'NoneType' object is not subscriptable",
	}},
	{"Python suggestions", []string{
		"NameError: name 'reqeust' is not defined",
		"NameError: name 'reqeust' is not defined. Did you mean: 'request'?",
	}},
	{"Java thread names", []string{
		`Exception in thread "main" java.lang.IllegalStateException: pool closed`,
		`Exception in thread "http-nio-8080-exec-11" java.lang.IllegalStateException: pool closed`,
		`Exception in thread "pool-3-thread-1" java.lang.IllegalStateException: pool closed`,
		`Exception in thread "Thread-7" java.lang.IllegalStateException: pool closed`,
	}},
	{"Python thread names", []string{
		"Exception in thread Thread-3:\nValueError: bad frame",
		"Exception in thread Thread-12 (consume):\nValueError: bad frame",
		"Exception in thread worker-2:\nValueError: bad frame",
	}},
	{"pod names", []string{
		"Back-off restarting failed container in pod api-7d4b9c8f6d-x2k9p",
		"Back-off restarting failed container in pod api-5c9f7b8d4-bvqzt",
		"Back-off restarting failed container in pod api-6d8f4b7c5-mkwxp",
	}},
	{"pod suffixes of letters", []string{
		`pods "worker-5f6c7-abcde" is forbidden: exceeded quota`,
		`pods "worker-8d9b2-qrtxz" is forbidden: exceeded quota`,
		`pods "worker-bcdfgkqz-wxlmn" is forbidden: exceeded quota`,
	}},
	{"namespaces", []string{
		`secrets "db-creds" is forbidden: User "system:serviceaccount:ci:deployer" cannot get resource "secrets" in API group "" in the namespace "team-a-prod"`,
		`secrets "db-creds" is forbidden: User "system:serviceaccount:ci:deployer" cannot get resource "secrets" in API group "" in the namespace "default"`,
	}},
	{"kind/namespace", []string{
		"namespace/prod-eu unchanged: quota exceeded",
		"namespace/staging unchanged: quota exceeded",
	}},
	{"letters-only generated ids", []string{
		"mkdir tmp-nimZWk: file exists",
		"mkdir tmp-QxWvBn: file exists",
		"mkdir tmp-a8x3kq: file exists",
	}},
	{"GitHub node ids", []string{
		"Could not resolve to a node with the global id of 'I_kwDOAbCdEf'",
		"Could not resolve to a node with the global id of 'PR_kwDOHxyzAB'",
		"Could not resolve to a node with the global id of 'MDU6SXNzdWUxMjM0NTY3ODk='",
	}},
	{"shell prefixes", []string{
		"/__w/_temp/2f1c9a3e-77b1-4c1e-9d1a-0b6e1f2a3c4d.sh: line 21: jq: command not found",
		"bash: line 22: jq: command not found",
		"sh: 1: jq: not found",
		"/home/runner/work/_temp/deploy.sh: line 3: jq: command not found",
		"zsh:1: command not found: jq",
	}},
	{"host forms", []string{
		"dial tcp localhost:5432: connect: connection refused",
		"dial tcp 127.0.0.1:5432: connect: connection refused",
		"dial tcp db.internal:5432: connect: connection refused",
		"dial tcp [::1]:5432: connect: connection refused",
		"dial tcp postgres:5432: connect: connection refused",
	}},
	{"quoted host forms", []string{
		`connection to server at "localhost" (127.0.0.1), port 5432 failed: Connection refused`,
		`connection to server at "postgres" (172.18.0.3), port 5432 failed: Connection refused`,
		`connection to server at "db.internal" (10.0.4.17), port 5432 failed: Connection refused`,
	}},
	{"resolver hosts", []string{
		"dial tcp: lookup postgres on 127.0.0.11:53: no such host",
		"dial tcp: lookup db.internal: no such host",
		"dial tcp: lookup redis-master on [fd00::1]:53: no such host",
	}},
	{"getaddrinfo hosts", []string{
		"Error: getaddrinfo ENOTFOUND postgres",
		"Error: getaddrinfo ENOTFOUND db.prod.internal",
	}},
	{"scheduler tallies", []string{
		"0/5 nodes are available: 1 Insufficient memory, 4 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }. preemption: 0/5 nodes are available: 1 No preemption victims found for incoming pod, 4 Preemption is not helpful for scheduling.",
		"0/3 nodes are available: 3 Insufficient memory.",
		"0/7 nodes are available: 2 node(s) didn't match Pod's node affinity/selector, 5 Insufficient memory.",
		"0/4 nodes are available: 1 node(s) had taint {node-role.kubernetes.io/master: }, that the pod didn't tolerate, 3 Insufficient memory.",
	}},
	{"counts and plurals", []string{
		"1 of 3 replicas unavailable",
		"2 of 2 replicas unavailable",
		"1 of 1 replica unavailable",
	}},
	{"paths with spaces", []string{
		"open /Users/John Smith/Library/Application Support/Acme/state.db: permission denied",
		"open /home/bob/.local/share/acme/state.db: permission denied",
		`open C:\Users\bob\AppData\Roaming\Acme\state.db: permission denied`,
	}},
	{"Windows program files", []string{
		`LoadLibrary C:\Program Files\Acme\bin\codec.dll: The specified module could not be found`,
		`LoadLibrary C:\Program Files (x86)\Acme\bin\codec.dll: The specified module could not be found`,
		`LoadLibrary D:\apps\acme\codec.dll: The specified module could not be found`,
	}},
	{"Windows and POSIX separators", []string{
		`SyntaxError: invalid syntax (C:\Users\bob\proj\src\app.py, line 12)`,
		"SyntaxError: invalid syntax (/home/bob/proj/src/app.py, line 40)",
	}},
	{"Jackson locations", []string{
		`com.fasterxml.jackson.databind.exc.MismatchedInputException: Cannot deserialize value of type ` + "`int`" + ` from String "abc": not a valid int value`,
		`com.fasterxml.jackson.databind.exc.MismatchedInputException: Cannot deserialize value of type ` + "`int`" + ` from String "abc": not a valid int value` + "\n" + ` at [Source: (String)"{"qty": "abc", "sku": "A-1"}"; line: 1, column: 243]`,
		`com.fasterxml.jackson.databind.exc.MismatchedInputException: Cannot deserialize value of type ` + "`int`" + ` from String "abc": not a valid int value at [Source: REDACTED (` + "`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION`" + ` disabled); line: 1, column: 9]`,
	}},
	{"user@host", []string{
		"ssh: deploy@ip-10-0-3-7: Permission denied (publickey)",
		"ssh: ubuntu@web-01: Permission denied (publickey)",
		"ssh: git@github.com: Permission denied (publickey)",
	}},
	{"shell prompts", []string{
		"ubuntu@web-01:~$ make: *** [deploy] Error 2",
		"deploy@ip-10-0-3-7:/srv/app$ make: *** [deploy] Error 2",
	}},
	{"routes keep words, mask ids", []string{
		"GET https://api.example.com/users/123: 500 Internal Server Error",
		"GET https://api.example.com/users/9871?expand=orders: 500 Internal Server Error",
		"GET https://api.internal:8443/users/550e8400-e29b-41d4-a716-446655440000: 500 Internal Server Error",
	}},
	{"GitHub owner and repo", []string{
		"GET https://api.github.com/repos/acme/widgets/commits/9fceb02d0ae598e95dc970b74767f19372d61af8/check-runs: 404 Not Found",
		"GET https://ghe.corp.example/api/v3/repos/globex/billing-api/commits/1b2c3d4/check-runs: 404 Not Found",
	}},
	{"GitLab projects", []string{
		"POST https://gitlab.com/api/v4/projects/acme%2Fwidgets/merge_requests: 409 Conflict",
		"POST https://gitlab.example.com/api/v4/projects/4521/merge_requests: 409 Conflict",
	}},
}

// v3Distinct lists messages of different defects that look alike: each
// must keep its own template.
var v3Distinct = []struct {
	class string
	texts []string
}{
	{"assertion values", []string{
		"assert 404 == 201",
		"assert 500 == 201",
		"AssertionError: assert 500 == 200",
	}},
	{"jest received values", []string{
		"Expected: 201\n    Received: 400",
		"Expected: 201\n    Received: 500",
	}},
	{"Go got/want", []string{
		"order_test.go:41: total: got 3, want 4",
		"order_test.go:41: total: got 5, want 4",
	}},
	{"pytest where", []string{
		"E       assert 500 == 200\nE        +  where 500 = <Response [500]>.status_code",
		"E       assert 503 == 200\nE        +  where 503 = <Response [503]>.status_code",
	}},
	{"JUnit expected/was", []string{
		"org.opentest4j.AssertionFailedError: expected:<201> but was:<400>",
		"org.opentest4j.AssertionFailedError: expected:<201> but was:<409>",
	}},
	{"routes", []string{
		"GET https://api.example.com/users/123: 500",
		"GET https://api.example.com/orders/456: 500",
		"GET https://api.example.com/users/123/orders: 500",
	}},
	{"exception classes", []string{
		`Exception in thread "main" java.lang.IllegalStateException: pool closed`,
		`Exception in thread "main" java.lang.IllegalArgumentException: pool closed`,
	}},
	{"error codes", []string{
		"ERROR:  duplicate key value violates unique constraint \"users_email_key\" (SQLSTATE 23505)\nLINE 1: INSERT INTO users",
		"ERROR:  duplicate key value violates unique constraint \"users_email_key\" (SQLSTATE 23503)\nLINE 1: INSERT INTO users",
	}},
	{"source file names", []string{
		`SyntaxError: invalid syntax (C:\Users\bob\proj\src\app.py, line 12)`,
		"SyntaxError: invalid syntax (/home/bob/proj/src/cli.py, line 40)",
	}},
	{"commands not found", []string{
		"bash: line 22: jq: command not found",
		"bash: line 22: yq: command not found",
		"sh: 1: jq: Permission denied",
	}},
	{"scheduler reasons", []string{
		"0/3 nodes are available: 3 Insufficient memory.",
		"0/3 nodes are available: 3 Insufficient cpu.",
		"0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.",
	}},
	{"Node property names", []string{
		"TypeError: Cannot read properties of undefined (reading 'email')",
		"TypeError: Cannot read properties of undefined (reading 'name')",
		"TypeError: Cannot set properties of undefined (setting 'email')",
	}},
	{"identifiers are not generated ids", []string{
		"unknown field getUserName",
		"unknown field HTTPServer",
		"unknown field XMLHttpRequest",
		"unknown field IOError",
		"unknown field findByIdAndUpdate",
	}},
	{"package versions are not user@host", []string{
		"npm ERR! notarget No matching version found for lodash@latest",
		"npm ERR! notarget No matching version found for eslint@latest",
	}},
	{"thread pool vs thread names", []string{
		"thread pool exhausted",
		"thread queue exhausted",
	}},
	{"status after route", []string{
		"POST https://api.github.com/repos/acme/widgets/issues: 403 Forbidden",
		"POST https://api.github.com/repos/acme/widgets/issues: 422 Unprocessable Entity",
		"POST https://api.github.com/repos/acme/widgets/labels: 422 Unprocessable Entity",
	}},
}

func TestNormalizeV3GroupsWhatVariesAcrossEnvironments(t *testing.T) {
	for _, g := range v3Same {
		want := NormalizeV3(g.texts[0])
		for _, s := range g.texts[1:] {
			if got := NormalizeV3(s); got != want {
				t.Errorf("%s: one defect, two templates:\n  %q\n  -> %q\n  %q\n  -> %q", g.class, g.texts[0], want, s, got)
			}
		}
	}
}

func TestNormalizeV3KeepsDefectsApart(t *testing.T) {
	for _, g := range v3Distinct {
		seen := map[string]string{}
		for _, s := range g.texts {
			tmpl := NormalizeV3(s)
			if other, ok := seen[tmpl]; ok {
				t.Errorf("%s: two defects merged into %q:\n  %q\n  %q", g.class, tmpl, other, s)
			}
			seen[tmpl] = s
		}
	}
}

// v2's outputs are aliases of released fingerprints: v3's rules must not
// reach it.
func TestNormalizeV2IsUntouchedByV3Rules(t *testing.T) {
	cases := map[string]string{
		"GET https://api.example.com/users/123: 500":                 "GET https://<*>: 500",
		"TypeError: Cannot read property 'email' of undefined":       "TypeError: Cannot read property 'email' of undefined",
		`Exception in thread "main" java.lang.IllegalStateException`: `Exception in thread "main" java.lang.IllegalStateException`,
		"assert 404 == 201":                         "assert <*> == <*>",
		`open C:\Users\bob\proj\src\app.py: denied`: `open <*>\app.py: denied`,
	}
	for in, want := range cases {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q (v2 is frozen)", in, got, want)
		}
	}
}

func TestNormalizeV3Templates(t *testing.T) {
	cases := []struct{ in, want string }{
		{"GET https://api.example.com/users/123?x=1: 500", "GET https://<*>/users/<*>: 500"},
		{"GET https://api.github.com/repos/acme/widgets/commits/9fceb02/check-runs: 404 Not Found", "GET https://<*>/repos/<*>/<*>/commits/<*>/check-runs: 404 Not Found"},
		{"sh: 1: jq: not found", "sh: jq: command not found"},
		{"TypeError: Cannot read property 'email' of undefined", "TypeError: Cannot read properties of undefined (reading 'email')"},
		{"Back-off restarting failed container in pod api-64f7d8c9bk-xz2lp", "Back-off restarting failed container in pod api-<*>"},
		{"GET https://ghe.example.com/api/v3/users/12?page=2: 500", "GET https://<*>/users/<*>: 500"},
	}
	for _, c := range cases {
		if got := NormalizeV3(c.in); got != c.want {
			t.Errorf("NormalizeV3(%q)\n  = %q\n want %q", c.in, got, c.want)
		}
	}
	if !strings.Contains(NormalizeV3("mkdir tmp-nimZWk: file exists"), Mask) {
		t.Error("a generated mixed-case suffix was kept")
	}
}
