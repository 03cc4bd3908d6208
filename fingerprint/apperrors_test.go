package fingerprint

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"
)

// A generator of application-error messages with ground truth: each defect
// is rendered the many ways one defect shows up across deployments — Linux,
// macOS (homes with spaces) and Windows paths, hosts spelt as localhost, an
// address, a DNS or compose name, users, thread and pod names, namespaces,
// runtime and library versions whose messages were reworded, line numbers,
// optional trailing lines (test tallies, SQL echoes), cluster sizes. Pairs
// of different defects that look alike (assertion values, routes, field
// names, exception classes, codes, file names) are included so merging
// them is caught.

// appEnv is one occurrence's environment.
type appEnv struct {
	r    *rand.Rand
	os   string // linux, mac, windows
	root string // the checkout, in the OS's form
	sep  string
}

func newAppEnv(r *rand.Rand) *appEnv {
	e := &appEnv{r: r}
	switch r.Intn(3) {
	case 0:
		e.os, e.sep = "linux", "/"
		e.root = pick(r, "/srv/app", "/home/"+pick(r, "bob", "deploy", "ci")+"/shop", "/__w/shop/shop", "/opt/acme/releases/2024"+e.digits(4))
	case 1:
		e.os, e.sep = "mac", "/"
		e.root = "/Users/" + pick(r, "John Smith", "ana", "Mary Ann Lee", "k.tanaka") + "/" + pick(r, "src/shop", "Code/shop", "Library/Application Support/shop")
	default:
		e.os, e.sep = "windows", `\`
		e.root = pick(r, `C:\Users\bob\shop`, `D:\a\shop\shop`, `C:\Program Files\Acme\shop`, `C:\Users\Mary Ann\source\repos\shop`)
	}
	return e
}

func pick(r *rand.Rand, xs ...string) string { return xs[r.Intn(len(xs))] }

func (e *appEnv) n(lo, hi int) int { return lo + e.r.Intn(hi-lo+1) }

func (e *appEnv) digits(k int) string {
	b := make([]byte, k)
	for i := range b {
		b[i] = byte('0' + e.r.Intn(10))
	}
	return string(b)
}

func (e *appEnv) from(alphabet string, k int) string {
	b := make([]byte, k)
	for i := range b {
		b[i] = alphabet[e.r.Intn(len(alphabet))]
	}
	return string(b)
}

// path joins the checkout root and a relative path in the OS's form.
func (e *appEnv) path(rel string) string {
	return e.root + e.sep + strings.ReplaceAll(rel, "/", e.sep)
}

func (e *appEnv) dbHost() string {
	return pick(e.r, "localhost", "127.0.0.1", "db.internal", "[::1]", "postgres", fmt.Sprintf("10.%d.%d.%d", e.n(0, 255), e.n(0, 255), e.n(1, 254)),
		"db-primary.prod.svc.cluster.local", "pg-"+e.digits(2))
}

func (e *appEnv) thread() string {
	return pick(e.r, "main", fmt.Sprintf("http-nio-8080-exec-%d", e.n(1, 200)), fmt.Sprintf("pool-%d-thread-%d", e.n(1, 9), e.n(1, 64)),
		fmt.Sprintf("Thread-%d", e.n(0, 99)), fmt.Sprintf("ForkJoinPool.commonPool-worker-%d", e.n(1, 16)), fmt.Sprintf("scheduling-%d", e.n(1, 4)))
}

const k8sAlphabet = "bcdfghjklmnpqrstvwxz2456789"

func (e *appEnv) pod(workload string) string {
	return workload + "-" + e.from(k8sAlphabet, e.n(8, 10)) + "-" + e.from(k8sAlphabet, 5)
}

func (e *appEnv) namespace() string {
	return pick(e.r, "default", "team-a-prod", "prod-eu", "staging", "ci-"+e.digits(4), "payments")
}

func (e *appEnv) login() string {
	return pick(e.r, "deploy", "ubuntu", "ec2-user", "git", "runner", "alice") + "@" +
		pick(e.r, fmt.Sprintf("ip-10-0-%d-%d", e.n(0, 9), e.n(1, 254)), "web-"+e.digits(2), "github.com", "bastion.corp.example", "build-agent-"+e.digits(1))
}

// tally is a test runner's summary line, sometimes absent.
func (e *appEnv) tally(runner string) string {
	if e.r.Intn(3) == 0 {
		return ""
	}
	failed, passed := e.n(1, 3), e.n(0, 200)
	switch runner {
	case "pytest":
		return fmt.Sprintf("\n%s %d failed, %d passed in %d.%02ds %s", strings.Repeat("=", e.n(3, 30)), failed, passed, e.n(0, 90), e.n(0, 99), strings.Repeat("=", e.n(3, 30)))
	case "jest":
		return fmt.Sprintf("\nTest Suites: %d failed, %d total\nTests:       %d failed, %d passed, %d total\nSnapshots:   0 total\nTime:        %d.%d s\nRan all test suites.", failed, failed+e.n(0, 9), failed, passed, failed+passed, e.n(0, 40), e.n(0, 9))
	case "unittest":
		return fmt.Sprintf("\nRan %d tests in %d.%03ds\n\nFAILED (failures=%d)", passed+failed, e.n(0, 9), e.n(0, 999), failed)
	}
	return ""
}

// pyTrace renders a Python traceback: library frames from a virtualenv or
// the standard library, then the application's frame, then the exception.
func (e *appEnv) pyTrace(appFile, fn, exc string) string {
	venv := e.path(pick(e.r, ".venv/lib/python3.11/site-packages", "venv/Lib/site-packages", ".tox/py39/lib/python3.9/site-packages"))
	var b strings.Builder
	b.WriteString("Traceback (most recent call last):\n")
	if e.r.Intn(2) == 0 {
		fmt.Fprintf(&b, "  File \"%s\", line %d, in wsgi_app\n    response = self.full_dispatch_request()\n", venv+e.sep+"flask"+e.sep+"app.py", e.n(100, 2500))
	}
	fmt.Fprintf(&b, "  File \"%s\", line %d, in %s\n    x = payload[key]\n", e.path(appFile), e.n(5, 400), fn)
	b.WriteString(exc)
	return b.String()
}

// nodeTrace renders a Node.js error with an application frame and library
// frames below it.
func (e *appEnv) nodeTrace(msg, fn, appFile string) string {
	return fmt.Sprintf("%s\n    at %s (%s:%d:%d)\n    at Layer.handle [as handle_request] (%s:95:5)\n    at next (%s:149:13)",
		msg, fn, e.path(appFile), e.n(1, 300), e.n(1, 80),
		e.path("node_modules/express/lib/router/layer.js"), e.path("node_modules/express/lib/router/route.js"))
}

// nodeVersionRead is a property read on undefined/null as Node < 16.9 or
// Node >= 16.9 words it.
func (e *appEnv) nodeVersionRead(prop, of string) string {
	if e.r.Intn(2) == 0 {
		return fmt.Sprintf("TypeError: Cannot read property '%s' of %s", prop, of)
	}
	return fmt.Sprintf("TypeError: Cannot read properties of %s (reading '%s')", of, prop)
}

func (e *appEnv) javaTrace(exc, frame, file string) string {
	head := exc
	if e.r.Intn(3) > 0 {
		head = fmt.Sprintf("Exception in thread \"%s\" %s", e.thread(), exc)
	}
	return fmt.Sprintf("%s\n\tat %s(%s:%d)\n\tat com.acme.api.OrderController.show(OrderController.java:%d)\n\tat java.base/java.lang.Thread.run(Thread.java:%s)",
		head, frame, file, e.n(10, 900), e.n(10, 300), pick(e.r, "829", "833", "1583"))
}

func (e *appEnv) shellPrefix() string {
	switch e.r.Intn(5) {
	case 0:
		return fmt.Sprintf("/__w/_temp/%08x-%04x-%04x-%04x-%012x.sh: line %d: ", e.r.Uint32(), e.r.Intn(1<<16), e.r.Intn(1<<16), e.r.Intn(1<<16), e.r.Int63n(1<<48), e.n(1, 80))
	case 1:
		return fmt.Sprintf("bash: line %d: ", e.n(1, 80))
	case 2:
		return fmt.Sprintf("%s: line %d: ", e.path("scripts/"+pick(e.r, "deploy.sh", "ci.sh", "release.sh")), e.n(1, 80))
	case 3:
		return fmt.Sprintf("/home/runner/work/_temp/%s.sh: line %d: ", e.digits(6), e.n(1, 80))
	}
	return ""
}

// commandNotFound: bash's, dash's and zsh's forms.
func (e *appEnv) commandNotFound(cmd string) string {
	switch e.r.Intn(4) {
	case 0:
		return fmt.Sprintf("sh: %d: %s: not found", e.n(1, 40), cmd)
	case 1:
		return fmt.Sprintf("zsh:%d: command not found: %s", e.n(1, 40), cmd)
	}
	p := e.shellPrefix()
	if p == "" {
		p = "bash: "
	}
	return p + cmd + ": command not found"
}

// nodeTally is the scheduler's tally for pods that need more of resource:
// the cluster's size and its tainted or other-pool nodes vary.
func (e *appEnv) nodeTally(resource string) string {
	fit, tainted, other := e.n(1, 12), e.n(0, 3), e.n(0, 4)*e.r.Intn(2)
	total := fit + tainted + other
	clauses := []string{fmt.Sprintf("%d Insufficient %s", fit, resource)}
	if tainted > 0 {
		clauses = append(clauses, fmt.Sprintf("%d node(s) had %s", tainted, pick(e.r, "untolerated taint {node-role.kubernetes.io/control-plane: }", "taint {node-role.kubernetes.io/master: }, that the pod didn't tolerate")))
	}
	if other > 0 {
		clauses = append(clauses, fmt.Sprintf("%d node(s) didn't match Pod's node affinity/selector", other))
	}
	sort.Strings(clauses)
	s := fmt.Sprintf("0/%d nodes are available: %s.", total, strings.Join(clauses, ", "))
	if e.r.Intn(2) == 0 {
		s += fmt.Sprintf(" preemption: 0/%d nodes are available: %d No preemption victims found for incoming pod, %d Preemption is not helpful for scheduling.", total, fit, total-fit)
	}
	return s
}

func (e *appEnv) apiHost() string {
	return pick(e.r, "api.example.com", "api.internal:8443", "10.1.2.3:8080", "localhost:3000", "orders-svc.shop.svc.cluster.local")
}

func (e *appEnv) ghAPI() string {
	return pick(e.r, "https://api.github.com", "https://ghe.corp.example/api/v3", "https://github.acme.io/api/v3")
}

func (e *appEnv) owner() string { return pick(e.r, "acme", "globex", "initech", "stark-industries") }
func (e *appEnv) repo() string  { return pick(e.r, "widgets", "billing-api", "shop", "tps-reports") }

func (e *appEnv) jsonSnippet() string {
	return pick(e.r, `{"qty": "abc"}`, `{"sku":"A-`+e.digits(3)+`","qty":"abc","note":"rush order, call first"}`, `[{"qty":"abc"}]`)
}

func (e *appEnv) ghNodeID() string {
	a := "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	switch e.r.Intn(3) {
	case 0:
		return "I_kwDO" + e.from(a, e.n(6, 10))
	case 1:
		return "PR_kwDO" + e.from(a+"0123456789", e.n(6, 12))
	}
	return "MDU6SXNzdWU" + e.digits(9)
}

// appDefect renders one occurrence of a defect.
type appDefect struct {
	id     string
	render func(e *appEnv) string
}

var appDefects = []appDefect{
	{"py-keyerror-user", func(e *appEnv) string {
		return e.pyTrace("app/handlers.py", "create_order", "KeyError: 'user_id'") + e.tally("pytest")
	}},
	{"py-keyerror-account", func(e *appEnv) string {
		return e.pyTrace("app/handlers.py", "create_order", "KeyError: 'account_id'") + e.tally("pytest")
	}},
	{"py-none-subscript", func(e *appEnv) string {
		exc := pick(e.r, "TypeError: 'NoneType' object is not subscriptable", "TypeError: 'NoneType' object has no attribute '__getitem__'")
		return e.pyTrace("app/billing.py", "invoice_total", exc)
	}},
	{"py-module-yaml", func(e *appEnv) string {
		exc := pick(e.r, "ModuleNotFoundError: No module named 'yaml'", "ImportError: No module named yaml", "ImportError: No module named 'yaml'")
		return e.pyTrace("app/config.py", "load", exc)
	}},
	{"py-nameerror", func(e *appEnv) string {
		exc := "NameError: name 'reqeust' is not defined"
		if e.r.Intn(2) == 0 {
			exc += ". Did you mean: 'request'?"
		}
		return e.pyTrace("app/views.py", "index", exc)
	}},
	{"py-settings-missing", func(e *appEnv) string {
		return fmt.Sprintf("FileNotFoundError: [Errno 2] No such file or directory: '%s'", e.path("config/settings.yaml"))
	}},
	{"py-secrets-missing", func(e *appEnv) string {
		return fmt.Sprintf("FileNotFoundError: [Errno 2] No such file or directory: '%s'", e.path("config/secrets.yaml"))
	}},
	{"pytest-404", func(e *appEnv) string {
		return "FAILED tests/test_orders.py::test_create_order - assert 404 == 201" + e.tally("pytest")
	}},
	{"pytest-500", func(e *appEnv) string {
		return "FAILED tests/test_orders.py::test_create_order - assert 500 == 201" + e.tally("pytest")
	}},
	{"pytest-where-500", func(e *appEnv) string {
		return "E       assert 500 == 200\nE        +  where 500 = <Response [500]>.status_code" + e.tally("pytest")
	}},
	{"pytest-where-503", func(e *appEnv) string {
		return "E       assert 503 == 200\nE        +  where 503 = <Response [503]>.status_code" + e.tally("pytest")
	}},
	{"unittest-state", func(e *appEnv) string {
		return "AssertionError: 'draft' != 'sent'" + e.tally("unittest")
	}},
	{"node-read-email", func(e *appEnv) string {
		return e.nodeTrace(e.nodeVersionRead("email", "undefined"), "getEmail", "src/users.js")
	}},
	{"node-read-name", func(e *appEnv) string {
		return e.nodeTrace(e.nodeVersionRead("name", "undefined"), "getEmail", "src/users.js")
	}},
	{"node-set-html", func(e *appEnv) string {
		msg := pick(e.r, "TypeError: Cannot set property 'innerHTML' of null", "TypeError: Cannot set properties of null (setting 'innerHTML')")
		return e.nodeTrace(msg, "render", "src/view.js")
	}},
	{"node-json", func(e *appEnv) string {
		msg := "SyntaxError: Unexpected token < in JSON at position 0"
		if e.r.Intn(2) == 0 {
			msg = `SyntaxError: Unexpected token '<', "` + pick(e.r, "<!DOCTYPE ", "<html><bo", "<h1>502 B") + `"... is not valid JSON`
		}
		return e.nodeTrace(msg, "fetchPrices", "src/prices.js")
	}},
	{"node-redis-refused", func(e *appEnv) string {
		return fmt.Sprintf("Error: connect ECONNREFUSED %s:6379\n    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:%d:16)",
			pick(e.r, "127.0.0.1", "::1", fmt.Sprintf("172.18.0.%d", e.n(2, 9))), e.n(1400, 1600))
	}},
	{"jest-400", func(e *appEnv) string {
		return "● orders › creates an order\n\n    expect(received).toBe(expected) // Object.is equality\n\n    Expected: 201\n    Received: 400" + e.tally("jest")
	}},
	{"jest-500", func(e *appEnv) string {
		return "● orders › creates an order\n\n    expect(received).toBe(expected) // Object.is equality\n\n    Expected: 201\n    Received: 500" + e.tally("jest")
	}},
	{"java-pool-closed", func(e *appEnv) string {
		return e.javaTrace("java.lang.IllegalStateException: connection pool closed", "com.acme.db.Pool.get", "Pool.java")
	}},
	{"java-pool-arg", func(e *appEnv) string {
		return e.javaTrace("java.lang.IllegalArgumentException: connection pool closed", "com.acme.db.Pool.get", "Pool.java")
	}},
	{"java-jackson", func(e *appEnv) string {
		s := "com.fasterxml.jackson.databind.exc.MismatchedInputException: Cannot deserialize value of type `int` from String \"abc\": not a valid `int` value"
		switch e.r.Intn(3) {
		case 0:
			s += fmt.Sprintf("\n at [Source: (String)\"%s\"; line: 1, column: %d]", e.jsonSnippet(), e.n(5, 300))
		case 1:
			s += fmt.Sprintf(" at [Source: REDACTED (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled); line: 1, column: %d]", e.n(5, 300))
		}
		return s + " (through reference chain: com.acme.api.OrderLine[\"qty\"])"
	}},
	{"go-got-3", func(e *appEnv) string {
		return fmt.Sprintf("--- FAIL: TestTotal (%d.%02ds)\n    order_test.go:41: total: got 3, want 4", e.n(0, 2), e.n(0, 99))
	}},
	{"go-got-5", func(e *appEnv) string {
		return fmt.Sprintf("--- FAIL: TestTotal (%d.%02ds)\n    order_test.go:41: total: got 5, want 4", e.n(0, 2), e.n(0, 99))
	}},
	{"go-pg-refused", func(e *appEnv) string {
		return fmt.Sprintf("store: ping: dial tcp %s:5432: connect: connection refused", e.dbHost())
	}},
	{"go-pg-lookup", func(e *appEnv) string {
		h := pick(e.r, "postgres", "db.internal", "pg-primary")
		if e.r.Intn(2) == 0 {
			return fmt.Sprintf("store: ping: dial tcp: lookup %s on %s:53: no such host", h, pick(e.r, "127.0.0.11", "10.96.0.10", "[fd00::a]"))
		}
		return fmt.Sprintf("store: ping: dial tcp: lookup %s: no such host", h)
	}},
	{"py-pg-refused", func(e *appEnv) string {
		h := pick(e.r, "localhost", "postgres", "db.internal")
		return fmt.Sprintf("psycopg2.OperationalError: connection to server at \"%s\" (%d.%d.%d.%d), port 5432 failed: Connection refused", h, e.n(10, 192), e.n(0, 255), e.n(0, 255), e.n(1, 254))
	}},
	{"pg-column-missing", func(e *appEnv) string {
		s := `ERROR:  column "totl" does not exist`
		if e.r.Intn(2) == 0 {
			q := pick(e.r, "SELECT totl FROM invoices WHERE id = "+e.digits(3), "SELECT id, totl, name FROM invoices ORDER BY id")
			s += fmt.Sprintf("\nLINE 1: %s\n%s^", q, strings.Repeat(" ", e.n(8, 30)))
		}
		return s
	}},
	{"pg-relation-missing", func(e *appEnv) string {
		s := `ERROR:  relation "invoices" does not exist`
		if e.r.Intn(2) == 0 {
			s += fmt.Sprintf("\nLINE 1: SELECT * FROM invoices WHERE id = %s\n                      ^", e.digits(3))
		}
		return s
	}},
	{"shell-jq", func(e *appEnv) string { return e.commandNotFound("jq") }},
	{"shell-yq", func(e *appEnv) string { return e.commandNotFound("yq") }},
	{"k8s-memory", func(e *appEnv) string {
		return fmt.Sprintf("pod %s in namespace \"%s\" unschedulable: %s", e.pod("api"), e.namespace(), e.nodeTally("memory"))
	}},
	{"k8s-cpu", func(e *appEnv) string {
		return fmt.Sprintf("pod %s in namespace \"%s\" unschedulable: %s", e.pod("api"), e.namespace(), e.nodeTally("cpu"))
	}},
	{"k8s-crashloop", func(e *appEnv) string {
		return fmt.Sprintf("Back-off restarting failed container %s in pod %s_%s", pick(e.r, "worker"), e.pod("worker"), e.namespace())
	}},
	{"api-users-500", func(e *appEnv) string {
		return fmt.Sprintf("GET https://%s/users/%d%s: 500 Internal Server Error", e.apiHost(), e.n(1, 99999), pick(e.r, "", "?expand=orders", "?page=2&per_page=50"))
	}},
	{"api-orders-500", func(e *appEnv) string {
		return fmt.Sprintf("GET https://%s/orders/%d%s: 500 Internal Server Error", e.apiHost(), e.n(1, 99999), pick(e.r, "", "?expand=lines"))
	}},
	{"gh-check-runs-404", func(e *appEnv) string {
		return fmt.Sprintf("GET %s/repos/%s/%s/commits/%s/check-runs: 404 Not Found", e.ghAPI(), e.owner(), e.repo(), e.from("0123456789abcdef", pick2(e.r, 7, 40)))
	}},
	{"gh-statuses-404", func(e *appEnv) string {
		return fmt.Sprintf("GET %s/repos/%s/%s/commits/%s/statuses: 404 Not Found", e.ghAPI(), e.owner(), e.repo(), e.from("0123456789abcdef", pick2(e.r, 7, 40)))
	}},
	{"gh-node-missing", func(e *appEnv) string {
		return fmt.Sprintf("graphql: Could not resolve to a node with the global id of '%s'", e.ghNodeID())
	}},
	{"ssh-denied", func(e *appEnv) string {
		return fmt.Sprintf("%s: Permission denied (publickey).", e.login())
	}},
	{"ruby-nomethod", func(e *appEnv) string {
		s := fmt.Sprintf("NoMethodError: undefined method `total' for nil:NilClass\n  app/models/order.rb:%d:in `summary'", e.n(5, 90))
		for i := e.n(0, 3); i > 0; i-- {
			s += fmt.Sprintf("\n  from %s:%d:in `%s'", pick(e.r, "app/controllers/orders_controller.rb", "app/jobs/report_job.rb", "lib/tasks/report.rake"), e.n(1, 200), pick(e.r, "show", "perform", "block in <main>"))
		}
		return s
	}},
	{"tmp-exists", func(e *appEnv) string {
		gen := pick(e.r, "tmp-"+e.from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", 6), "tmp-"+e.from("bcdfghjklmnpqrstvwxz", 6), "tmp-"+e.from("abcdefghijklmnopqrstuvwxyz0123456789", 6))
		return fmt.Sprintf("build: mkdir %s: file exists", gen)
	}},
	{"dll-missing", func(e *appEnv) string {
		return fmt.Sprintf("LoadLibrary %s: The specified module could not be found", pick(e.r, `C:\Program Files\Acme\bin\codec.dll`, `C:\Program Files (x86)\Acme\codec.dll`, `D:\apps\acme\bin\codec.dll`))
	}},
}

func pick2(r *rand.Rand, a, b int) int {
	if r.Intn(2) == 0 {
		return a
	}
	return b
}

// generateAppErrors renders n occurrences, defects drawn uniformly.
func generateAppErrors(seed int64, n int) (texts, labels []string) {
	r := rand.New(rand.NewSource(seed))
	for i := 0; i < n; i++ {
		d := appDefects[r.Intn(len(appDefects))]
		texts = append(texts, d.render(newAppEnv(r)))
		labels = append(labels, d.id)
	}
	return texts, labels
}

// appGrouping scores a normalizer on generated lines: grouping accuracy and
// the templates holding more than one defect.
func appGrouping(norm func(string) string, texts, labels []string) (ga float64, merged map[string][]string, split map[string][]string) {
	tmpls := make([]string, len(texts))
	byTmpl := map[string]map[string]bool{}
	byDefect := map[string]map[string]bool{}
	for i, s := range texts {
		tmpls[i] = norm(s)
		if byTmpl[tmpls[i]] == nil {
			byTmpl[tmpls[i]] = map[string]bool{}
		}
		byTmpl[tmpls[i]][labels[i]] = true
		if byDefect[labels[i]] == nil {
			byDefect[labels[i]] = map[string]bool{}
		}
		byDefect[labels[i]][tmpls[i]] = true
	}
	merged, split = map[string][]string{}, map[string][]string{}
	for t, ds := range byTmpl {
		if len(ds) > 1 {
			for d := range ds {
				merged[t] = append(merged[t], d)
			}
			sort.Strings(merged[t])
		}
	}
	for d, ts := range byDefect {
		if len(ts) > 1 {
			for t := range ts {
				split[d] = append(split[d], t)
			}
			sort.Strings(split[d])
		}
	}
	return groupingAccuracy(labels, tmpls), merged, split
}

func TestGroupingOnGeneratedAppErrors(t *testing.T) {
	texts, labels := generateAppErrors(42, 4000)
	ga, merged, split := appGrouping(NormalizeV4, texts, labels)
	gaV3, mergedV3, _ := appGrouping(NormalizeV3, texts, labels)
	gaV2, mergedV2, _ := appGrouping(Normalize, texts, labels)
	t.Logf("%d lines, %d defects: v4 GA %.4f (%d templates merge defects), v3 GA %.4f (%d), v2 GA %.4f (%d)",
		len(texts), len(appDefects), ga, len(merged), gaV3, len(mergedV3), gaV2, len(mergedV2))
	for tmpl, ds := range merged {
		t.Errorf("defects %v merged into %q", ds, tmpl)
	}
	if ga < 0.95 {
		var ids []string
		for d := range split {
			ids = append(ids, d)
		}
		sort.Strings(ids)
		for _, d := range ids {
			t.Logf("%s split into %d templates:\n  %s", d, len(split[d]), strings.Join(split[d], "\n  "))
		}
		t.Errorf("grouping accuracy %.4f, want >= 0.95", ga)
	}
}

// The generator is deterministic: a seed gives the same lines.
func TestAppErrorGeneratorIsDeterministic(t *testing.T) {
	a, _ := generateAppErrors(7, 200)
	b, _ := generateAppErrors(7, 200)
	if strings.Join(a, "\x00") != strings.Join(b, "\x00") {
		t.Fatal("the same seed gave different lines")
	}
}
