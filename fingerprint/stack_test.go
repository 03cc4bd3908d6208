package fingerprint

import (
	"strings"
	"testing"
)

const pyTrace = `Traceback (most recent call last):
  File "/home/alice/src/loop/app/main.py", line 88, in <module>
    main()
  File "/home/alice/src/loop/app/main.py", line 41, in main
    dispatch(job)
  File "/home/alice/src/loop/app/dispatch.py", line 120, in dispatch
    cfg = load_config(path)
  File "/home/alice/.venv/lib/python3.12/site-packages/yaml/__init__.py", line 81, in load
    return loader.get_single_data()
ValueError: invalid value 42 for retries`

func TestPythonTracebackKeepsExceptionAndTopInAppFrame(t *testing.T) {
	got := Normalize(pyTrace)
	want := "ValueError: invalid value <*> for retries\n  at dispatch (dispatch.py)"
	if got != want {
		t.Fatalf("template:\n%s\nwant:\n%s", got, want)
	}
	// Another machine, other line numbers, another caller below the top frame.
	moved := strings.NewReplacer(
		"/home/alice/src/loop", "/srv/ci/checkout-7",
		"/home/alice/.venv/lib/python3.12", "/usr/lib/python3.11",
		"line 120", "line 131", "line 41, in main", "line 12, in run_once", "42", "7",
	).Replace(pyTrace)
	if fp("run.failed", moved) != fp("run.failed", pyTrace) {
		t.Errorf("volatile trace details split the defect:\n%s", Normalize(moved))
	}
	otherTop := strings.Replace(pyTrace, "in dispatch\n", "in retry\n", 1)
	if fp("run.failed", otherTop) == fp("run.failed", pyTrace) {
		t.Error("a different top in-app function must be a different defect")
	}
	otherType := strings.Replace(pyTrace, "ValueError", "KeyError", 1)
	if fp("run.failed", otherType) == fp("run.failed", pyTrace) {
		t.Error("a different exception type must be a different defect")
	}
}

// A wrapper that prints its own message before the traceback, on the same
// line, is common ("aider exited 1: Traceback ..."): the trace must still be
// reduced, or every caller path would be a defect of its own.
func TestPythonTracebackAfterAWrapperMessage(t *testing.T) {
	frames := []string{
		"  File \"/usr/lib/python3.12/asyncio/runners.py\", line 118, in run\n    return self._loop.run_until_complete(task)\n",
		"  File \"/home/eve/.local/lib/python3.12/site-packages/aider/main.py\", line 70, in main\n    coder.run()\n",
		"  File \"/home/eve/.local/lib/python3.12/site-packages/aider/coders/base_coder.py\", line 801, in run_one\n    list(self.send_message(message))\n",
	}
	top := "  File \"/home/eve/.local/lib/python3.12/site-packages/loop_tools/budget.py\", line 41, in allocate\n    limit = MODEL_LIMITS[model]\n            ~~~~~~~~~~~~^^^^^^^\nKeyError: 'gpt-5.1-codex'"
	a := "aider exited 1: Traceback (most recent call last):\n" + frames[0] + frames[1] + frames[2] + top
	b := "aider exited 1: Traceback (most recent call last):\n" + frames[2] + strings.Replace(strings.Replace(top, "line 41", "line 44", 1), "gpt-5.1-codex", "composer-1", 1)
	want := "aider exited 1:\nKeyError: '<*>'\n  at allocate (budget.py)"
	if got := Normalize(a); got != want {
		t.Fatalf("template:\n%s\nwant:\n%s", got, want)
	}
	if fp("e", a) != fp("e", b) {
		t.Errorf("caller frames or the key value split the defect:\n%s\n--\n%s", Normalize(a), Normalize(b))
	}
	if fp("e", a) == fp("e", strings.Replace(a, "in allocate", "in release", 1)) {
		t.Error("a different innermost function must be a different defect")
	}
}

const goPanicText = `panic: runtime error: index out of range [5] with length 3

goroutine 1 [running]:
github.com/acme/loop/internal/queue.(*Queue).Pop(0xc000012345, 0x1)
	/home/bob/go/src/github.com/acme/loop/internal/queue/queue.go:42 +0x1d
main.run(...)
	/home/bob/go/src/github.com/acme/loop/main.go:17
main.main()
	/home/bob/go/src/github.com/acme/loop/main.go:9 +0x25

goroutine 7 [chan receive]:
main.worker()
	/home/bob/go/src/github.com/acme/loop/main.go:30 +0x40
exit status 2`

func TestGoPanicKeepsMessageAndTopFrame(t *testing.T) {
	got := Normalize(goPanicText)
	want := "panic: runtime error: index out of range <*> with length <*>\n  at github.com/acme/loop/internal/queue.(*Queue).Pop (queue.go)"
	if got != want {
		t.Fatalf("template:\n%s\nwant:\n%s", got, want)
	}
	moved := strings.NewReplacer("goroutine 1 ", "goroutine 33 ", "/home/bob/go/src", "/root/work", ":42 +0x1d", ":57 +0x2f",
		"0xc000012345", "0xc0000aa000", "main.main()", "main.loop()").Replace(goPanicText)
	if fp("e", moved) != fp("e", goPanicText) {
		t.Errorf("volatile panic details split the defect:\n%s", Normalize(moved))
	}
}

func TestGoPanicSkipsRuntimeFrames(t *testing.T) {
	text := "panic: boom [recovered]\n\tpanic: boom\n\ngoroutine 5 [running]:\nruntime.gopanic({0x10, 0x20})\n\t/usr/local/go/src/runtime/panic.go:770 +0x132\nmain.handle()\n\t/src/app/h.go:12 +0x9\n"
	if got := Normalize(text); !strings.HasSuffix(got, "at main.handle (h.go)") {
		t.Errorf("top frame should be the first non-runtime one: %q", got)
	}
}

const javaTrace = `java.lang.IllegalStateException: queue 17 is closed
	at java.base/java.util.concurrent.ThreadPoolExecutor.runWorker(ThreadPoolExecutor.java:1136)
	at com.acme.loop.Queue.offer(Queue.java:88)
	at com.acme.loop.Dispatcher.run(Dispatcher.java:41)
	at java.base/java.lang.Thread.run(Thread.java:833)
Caused by: java.io.IOException: Broken pipe
	at java.base/sun.nio.ch.FileDispatcherImpl.write0(Native Method)
	... 3 more`

func TestJavaTraceKeepsExceptionCauseAndTopInAppFrame(t *testing.T) {
	got := Normalize(javaTrace)
	want := "java.lang.IllegalStateException: queue <*> is closed\nCaused by: java.io.IOException: Broken pipe\n  at com.acme.loop.Queue.offer (Queue.java)"
	if got != want {
		t.Fatalf("template:\n%s\nwant:\n%s", got, want)
	}
	below := strings.Replace(javaTrace, "Dispatcher.run(Dispatcher.java:41)", "Scheduler.tick(Scheduler.java:9)", 1)
	if fp("e", below) != fp("e", javaTrace) {
		t.Error("frames below the top in-app frame must not split the defect")
	}
}

func TestNodeTrace(t *testing.T) {
	text := "TypeError: Cannot read properties of undefined (reading 'id')\n    at render (/home/u/app/src/view.js:10:5)\n    at Array.map (<anonymous>)\n    at Module._compile (node:internal/modules/cjs/loader:1256:14)"
	want := "TypeError: Cannot read properties of undefined (reading 'id')\n  at render (view.js)"
	if got := Normalize(text); got != want {
		t.Errorf("template:\n%s\nwant:\n%s", got, want)
	}
}

func TestPlainMultiLineTextIsNormalizedLineByLine(t *testing.T) {
	a := "error: failed to push some refs to 'origin'\nhint: Updates were rejected because the tip is behind (3 commits)\n"
	b := "error: failed to push some refs to 'origin'\n\nhint: Updates were rejected because the tip is behind (12 commits)"
	if fp("e", a) != fp("e", b) {
		t.Errorf("split:\n%s\n--\n%s", Normalize(a), Normalize(b))
	}
}

func TestGoPanicSkipsStandardLibraryInternals(t *testing.T) {
	text := "fatal error: concurrent map writes\n\ngoroutine 9 [running]:\ninternal/runtime/maps.fatal({0x6f1a2b, 0x15})\n\t/usr/local/go/src/runtime/panic.go:1058 +0x18\ngithub.com/acme/loop/internal/dedup.(*Index).Add(0xc000120000, {0xc000014000, 0x28})\n\t/build/internal/dedup/index.go:77 +0x9c\n"
	want := "fatal error: concurrent map writes\n  at github.com/acme/loop/internal/dedup.(*Index).Add (index.go)"
	if got := Normalize(text); got != want {
		t.Errorf("template:\n%s\nwant:\n%s", got, want)
	}
}

// Without an in-app frame, the innermost library frame (which called the
// runtime) names the defect better than the runtime frame every bug shares.
func TestNodeTraceWithoutAppFramesPrefersLibraryToRuntime(t *testing.T) {
	trace := func(file string) string {
		return "Error: ENOENT: no such file or directory, open '/tmp/x/" + file + "'\n" +
			"    at Object.openSync (node:fs:573:3)\n" +
			"    at Object.readFileSync (node:fs:452:35)\n" +
			"    at loadDossier (file:///home/u/.npm/_npx/1a2b/node_modules/@acme/prompt/dist/dossier.js:12:17)\n" +
			"    at async main (file:///home/u/.npm/_npx/1a2b/node_modules/@acme/prompt/dist/cli.js:40:5) {\n" +
			"  errno: -2,\n  code: 'ENOENT',\n  syscall: 'open'\n}"
	}
	want := "Error: ENOENT: no such file or directory, open '<*>/dossier.md'\n  at loadDossier (dossier.js)"
	if got := Normalize(trace("dossier.md")); got != want {
		t.Errorf("template:\n%s\nwant:\n%s", got, want)
	}
	if fp("e", trace("dossier.md")) == fp("e", trace("prompt.md")) {
		t.Error("a different project file must be a different defect")
	}
}

func TestNodeFrameBeforeErrorProperties(t *testing.T) {
	text := "Error: read ECONNRESET\n    at TLSWrap.onStreamRead (node:internal/stream_base_commons:218:20) {\n  errno: -104,\n  code: 'ECONNRESET',\n  syscall: 'read'\n}"
	if got := Normalize(text); !strings.HasSuffix(got, "at TLSWrap.onStreamRead (stream_base_commons)") {
		t.Errorf("the frame before the properties block was not parsed: %q", got)
	}
}

func TestDotNetTraceKeepsMethodAndFile(t *testing.T) {
	text := "System.InvalidOperationException: Sequence contains no elements\n" +
		"   at System.Linq.ThrowHelper.ThrowNoElementsException()\n" +
		"   at Acme.Orders.OrderService.Place(Order order) in C:\\src\\Acme\\Orders\\OrderService.cs:line 42\n" +
		"   at Acme.Api.Program.Main(String[] args) in C:\\src\\Acme\\Api\\Program.cs:line 9"
	want := "System.InvalidOperationException: Sequence contains no elements\n  at Acme.Orders.OrderService.Place (OrderService.cs)"
	if got := Normalize(text); got != want {
		t.Errorf("template:\n%s\nwant:\n%s", got, want)
	}
	moved := strings.NewReplacer("line 42", "line 57", `C:\src`, `D:\agent\_work\3\s`, "Program.Main(String[] args) in C:", "Worker.Run() in C:").Replace(text)
	if fp("e", moved) != fp("e", text) {
		t.Errorf("line numbers, checkout roots or callers split the defect:\n%s", Normalize(moved))
	}
}

func TestRustBacktraceKeepsPanicAndTopAppFrame(t *testing.T) {
	text := "thread 'main' panicked at src/store.rs:41:9:\ncalled `Option::unwrap()` on a `None` value\nstack backtrace:\n" +
		"   0: rust_begin_unwind\n             at /rustc/90b35a6239c3d8bd/library/std/src/panicking.rs:665:5\n" +
		"   1: core::panicking::panic_fmt\n             at /rustc/90b35a6239c3d8bd/library/core/src/panicking.rs:74:14\n" +
		"   2: loopd::store::Store::load\n             at ./src/store.rs:41:9\n" +
		"   3: loopd::main\n             at ./src/main.rs:12:5\n" +
		"note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace."
	want := "thread panicked at src/store.rs:\ncalled `Option::unwrap()` on a `None` value\n  at loopd::store::Store::load (store.rs)"
	if got := Normalize(text); got != want {
		t.Fatalf("template:\n%s\nwant:\n%s", got, want)
	}
	moved := strings.NewReplacer("41:9", "44:13", "   3: loopd::main\n             at ./src/main.rs:12:5\n", "").Replace(text)
	if fp("e", moved) != fp("e", text) {
		t.Errorf("line numbers or callers split the defect:\n%s", Normalize(moved))
	}
}

// Ruby's "from" lines and the numbered frames of PHP and gdb are the call
// path: a deeper or shallower path is the same defect.
func TestCallerFramesOfOtherTracesAreDropped(t *testing.T) {
	pairs := []struct{ name, a, b string }{
		{"ruby",
			"app/models/order.rb:42:in `place': undefined method `total' for nil:NilClass (NoMethodError)\n\tfrom app/services/checkout.rb:17:in `call'\n\tfrom app/controllers/orders_controller.rb:9:in `create'",
			"app/models/order.rb:42:in `place': undefined method `total' for nil:NilClass (NoMethodError)\n\tfrom app/jobs/retry_job.rb:5:in `perform'"},
		{"php",
			"PHP Fatal error:  Uncaught RuntimeException: cart 812 is empty in /var/www/app/src/Cart.php:88\nStack trace:\n#0 /var/www/app/src/Checkout.php(31): App\\Cart->total()\n#1 /var/www/app/public/index.php(12): App\\Checkout->run()\n#2 {main}\n  thrown in /var/www/app/src/Cart.php on line 88",
			"PHP Fatal error:  Uncaught RuntimeException: cart 9 is empty in /srv/app/src/Cart.php:88\nStack trace:\n#0 /srv/app/src/Checkout.php(31): App\\Cart->total()\n#1 {main}\n  thrown in /srv/app/src/Cart.php on line 88"},
	}
	for _, p := range pairs {
		if fp("e", p.a) != fp("e", p.b) {
			t.Errorf("%s: the call path split the defect:\n%s\n--\n%s", p.name, Normalize(p.a), Normalize(p.b))
		}
	}
	php := pairs[1].a
	if fp("e", php) == fp("e", strings.Replace(php, `App\Cart->total()`, `App\Cart->add()`, 1)) {
		t.Error("php: the innermost frame must stay identity")
	}
}

func TestNumberedLinesThatAreNotFramesAreKept(t *testing.T) {
	a := "rebase stopped:\n#4521 merged\n#4522 conflicts in handler.go"
	b := "rebase stopped:\n#4521 merged\n#4522 conflicts in store.go"
	if fp("e", a) == fp("e", b) {
		t.Errorf("a numbered line without a call was dropped as a caller frame: %q", Normalize(a))
	}
}
