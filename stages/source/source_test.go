package source

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/redact"
)

func TestSourceFramesOfFourLanguages(t *testing.T) {
	for name, c := range map[string]struct {
		text string
		want []sourceFrame
	}{
		"python": {"Traceback (most recent call last):\n  File \"/srv/app/the_loop/worker.py\", line 42, in run\n    x()\nValueError: no", []sourceFrame{{"/srv/app/the_loop/worker.py", 42}}},
		"go":     {"panic: boom\n\ngoroutine 1 [running]:\nmain.run()\n\t/home/u/src/the-loop/internal/x/run.go:17 +0x1d", []sourceFrame{{"/home/u/src/the-loop/internal/x/run.go", 17}}},
		"java":   {"java.lang.IllegalStateException: no\n\tat com.acme.loop.Worker.run(Worker.java:88)", []sourceFrame{{"com/acme/loop/Worker.java", 88}}},
		"node":   {"Error: no\n    at run (/opt/app/lib/worker.js:10:5)\n    at file:///opt/app/lib/main.mjs:3:1", []sourceFrame{{"/opt/app/lib/worker.js", 10}, {"/opt/app/lib/main.mjs", 3}}},
	} {
		if got := sourceFrames(c.text); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", name, got, c.want)
		}
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSourceResolvesTheLongestSuffixInsideTheTreeOnly(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	write(t, filepath.Join(root, "internal", "x", "run.go"), "package x\n")
	write(t, filepath.Join(root, "run.go"), "package main\n")
	write(t, filepath.Join(outside, "secret.go"), "package secret\n")
	write(t, filepath.Join(root, "passwd"), "not the one\n")
	if err := os.Symlink(filepath.Join(outside, "secret.go"), filepath.Join(root, "link.go")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	sf, err := NewFinder(root)
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		"/home/u/src/the-loop/internal/x/run.go":                  "internal/x/run.go",
		"/elsewhere/run.go":                                       "run.go",
		"../../../../etc/passwd":                                  "passwd", // the tree's own, never /etc's
		"internal/../../" + filepath.Base(outside) + "/secret.go": "",
		"/a/link.go":       "",
		"/a/out/secret.go": "",
		"/nowhere/none.go": "",
	} {
		if got, _ := sf.resolve(file); got != want {
			t.Errorf("resolve(%q) = %q, want %q", file, got, want)
		}
	}
}

func TestSourceNeedlesAreTheTemplatesLongestLiteralRuns(t *testing.T) {
	got := sourceNeedles("lease <*> on node-b lost: etcd txn aborted (revision <*>)")
	if !slices.Contains(got, "lost: etcd txn aborted") || len(got) > sourceMaxNeedles {
		t.Fatalf("needles %q", got)
	}
	for _, n := range sourceNeedles("<*> a <*> bb <*>") {
		t.Fatalf("a short run is a needle: %q", n)
	}
}

func sourceGroup(errText, template string) pipeline.Group {
	r := pipeline.Record{Fields: pipeline.Fields{{Key: "error", Value: errText}}}
	return pipeline.Group{Template: template, Samples: []pipeline.Occurrence{{Candidate: pipeline.Candidate{Record: r}}}}
}

func TestSourceSectionFindsTheLineAMessageComesFromAndReadsNothingOutside(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	write(t, filepath.Join(root, "pkg", "lease.go"), "package pkg\n\nfunc f() error {\n\treturn fmt.Errorf(\"lease %d on %s lost: etcd txn aborted\", id, n)\n}\n")
	write(t, filepath.Join(root, ".git", "objects", "x"), "lost: etcd txn aborted\n")
	write(t, filepath.Join(root, "vendor", "v.go"), "lost: etcd txn aborted\n")
	write(t, filepath.Join(root, "bin.dat"), "\x00lost: etcd txn aborted\n")
	write(t, filepath.Join(outside, "leak.go"), "lost: etcd txn aborted // outside\n")
	if err := os.Symlink(filepath.Join(outside, "leak.go"), filepath.Join(root, "leak.go")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "outdir")); err != nil {
		t.Fatal(err)
	}
	sf, _ := NewFinder(root)
	g := sourceGroup("lease 77 on node-b lost: etcd txn aborted (revision 4411)", "lease <*> on node-b lost: etcd txn aborted (revision <*>)")
	sec := sf.Section(g, redact.New(redact.Options{}))
	if !strings.HasPrefix(sec, Heading) || !strings.Contains(sec, "`pkg/lease.go:4`") || !strings.Contains(sec, "> 4: \treturn fmt.Errorf(") {
		t.Fatalf("section:\n%s", sec)
	}
	for _, bad := range []string{"outside", ".git", "vendor", "bin.dat", root} {
		if strings.Contains(sec, bad) {
			t.Errorf("the section holds %q:\n%s", bad, sec)
		}
	}
}

func TestSourceSectionQuotesStackFramesAndKeepsItsCaps(t *testing.T) {
	root := t.TempDir()
	var many strings.Builder
	for i := 0; i < 30; i++ {
		many.WriteString("log(\"the same long message text\")\n")
	}
	write(t, filepath.Join(root, "a", "many.py"), many.String())
	write(t, filepath.Join(root, "a", "big.py"), strings.Repeat("x", 2000)+"\nthe same long message text\n")
	write(t, filepath.Join(root, "the_loop", "worker.py"), "def run():\n    x = 1\n    raise ValueError('no')\n")
	sf, _ := NewFinder(root)
	sf.FileMax = 1500
	g := sourceGroup("Traceback (most recent call last):\n  File \"/usr/lib/python3/site-packages/the_loop/worker.py\", line 3, in run\nValueError: the same long message text", "ValueError: the same long message text")
	sec := sf.Section(g, redact.New(redact.Options{}))
	if !strings.Contains(sec, "Stack frames:") || !strings.Contains(sec, "`the_loop/worker.py:3`") || !strings.Contains(sec, "> 3:     raise ValueError('no')") {
		t.Fatalf("section:\n%s", sec)
	}
	if n := strings.Count(sec, "`a/many.py:"); n != sourceMaxHits-1 {
		t.Errorf("%d hits in many.py, want the cap's %d less the frame", n, sourceMaxHits-1)
	}
	if strings.Contains(sec, "big.py") {
		t.Errorf("a file over the size cap was read:\n%s", sec)
	}
	if strings.Contains(sec, "/usr/lib") {
		t.Errorf("the frame's absolute path leaked:\n%s", sec)
	}
	sf.MaxBytes = 400
	if small := sf.Section(g, redact.New(redact.Options{})); len(small) > 400+len(Heading)+100 {
		t.Errorf("section of %d bytes over a 400-byte cap:\n%s", len(small), small)
	}
	sf.TotalMax = 10
	if none := sf.Section(sourceGroup("x", "the same long message text"), redact.New(redact.Options{})); none != "" {
		t.Errorf("read past the total byte budget:\n%s", none)
	}
}
