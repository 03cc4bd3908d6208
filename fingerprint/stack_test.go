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
