// Command bench measures the-loop-diagnose at scale (issues #7, #20) and
// prints the figures next to their targets: full dry-run scans of three
// 1M-line logs — the generated the-loop log, the same records with false and
// 0 on most lines and keys reordered, and as a pino log — each against
// `grep -c` on the same file, their peak RSS, and an
// incremental rescan after the log grows by 1,000 more lines — inside a
// running watcher (the target), and as a cron run with its process start
// shown. With --huge-gb it streams a generated log of that size through a
// pipe instead, to show memory does not grow with the log. Run it through
// `make bench` / `make bench-huge`.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/the-loop/the-loop-diagnose/fakes/eventlog"
	fakegh "github.com/the-loop/the-loop-diagnose/fakes/github"
)

func main() {
	bin := flag.String("bin", "bin/the-loop-diagnose", "binary under test")
	out := flag.String("out", "bench-out", "scratch directory for generated logs and state")
	lines := flag.Int("lines", 1_000_000, "lines in the generated log")
	runs := flag.Int("runs", 7, "runs of each timing; the median of the full scans is kept, the best of the rest (the machines are shared)")
	hugeGB := flag.Float64("huge-gb", 0, "instead: stream a generated log of this many GB through a pipe")
	flag.Parse()
	var err error
	if *hugeGB > 0 {
		err = huge(*bin, *hugeGB)
	} else {
		err = scale(*bin, *out, *lines, *runs)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// measured is one run of a command: its wall time and peak RSS.
type measured struct {
	wall time.Duration
	rss  int64 // bytes
}

// run executes argv with stdout read and discarded and returns its cost; the child's
// own rusage gives the peak RSS, so nothing else in this process counts.
func run(env []string, stdin io.Reader, argv ...string) (measured, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = stdin
	// A pipe, not /dev/null: GNU grep stops at the first match when its
	// output is /dev/null, which would time nothing.
	cmd.Stdout = io.Discard
	var stderr limitedBuffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && argv[0] == "grep" && ee.ExitCode() == 1) {
		return measured{}, fmt.Errorf("%v: %w\n%s", argv, err, stderr.b)
	}
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	m := measured{wall: wall}
	if ru != nil {
		m.rss = ru.Maxrss * 1024 // kilobytes on Linux
	}
	return m, nil
}

// best runs argv n times and keeps the fastest (the page cache is warm after
// the first) and the largest RSS.
func best(n int, env []string, argv ...string) (measured, error) {
	var b measured
	for i := 0; i < n; i++ {
		m, err := run(env, nil, argv...)
		if err != nil {
			return b, err
		}
		if i == 0 || m.wall < b.wall {
			b.wall = m.wall
		}
		b.rss = max(b.rss, m.rss)
	}
	return b, nil
}

type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if len(l.b) < 64<<10 {
		l.b = append(l.b, p[:min(len(p), 64<<10-len(l.b))]...)
	}
	return len(p), nil
}

// splitWriter sends the first n lines to head and the rest to tail.
type splitWriter struct {
	n          int
	head, tail io.Writer
}

func (w *splitWriter) Write(p []byte) (int, error) {
	written := 0
	for w.n > 0 && len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			i = len(p) - 1
		} else {
			w.n--
		}
		k, err := w.head.Write(p[:i+1])
		written += k
		if err != nil {
			return written, err
		}
		p = p[i+1:]
	}
	k, err := w.tail.Write(p)
	return written + k, err
}

// generateSplit writes the first lines of a generated log to path and
// returns the following more lines in batches of batch lines: what the log
// will grow by, from the same service (the same defects recurring).
func generateSplit(path string, o eventlog.Options, lines, batch, batches int) ([][]byte, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	head := bufio.NewWriterSize(f, 1<<20)
	var tail bytes.Buffer
	o.Lines = lines + batch*batches
	if _, err := eventlog.Generate(&splitWriter{n: lines, head: head, tail: &tail}, o); err != nil {
		f.Close()
		return nil, err
	}
	if err := head.Flush(); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	var out [][]byte
	rest := tail.Bytes()
	for i := 0; i < batches; i++ {
		end := 0
		for n := 0; n < batch && end < len(rest); n++ {
			end += bytes.IndexByte(rest[end:], '\n') + 1
		}
		out = append(out, rest[:end])
		rest = rest[end:]
	}
	return out, nil
}

func appendBytes(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func scale(bin, out string, lines, runs int) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	logPath := filepath.Join(out, "events.jsonl")
	fmt.Printf("generating %d lines (fakes/eventlog, seed 7) into %s ...\n", lines, logPath)
	// The log as it will grow: 1,000 more lines of the same service per
	// incremental scan measured (its defects recurring, now and then a new one).
	// The log ends days before today, as a live deployment's does: with a
	// fixed start, a month on the retention (backlogDays) would drop the
	// backlog at every scan and the figures would change with the date.
	logStart := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -7)
	growth, err := generateSplit(logPath, eventlog.Options{Seed: 7, Start: logStart}, lines, 1000, runs+1)
	if err != nil {
		return err
	}
	emptyState := filepath.Join(out, "no-state.json")
	os.Remove(emptyState)
	// The three logs, scanned side by side in one run (the machines are
	// shared: each scan and its grep run back to back, the medians kept).
	type logCase struct {
		name, path, format, grep string
	}
	cases := []logCase{
		{"generated (the-loop)", logPath, "the-loop", `"level":"error"`},
		{"the-loop, false/0 on most lines", filepath.Join(out, "events-cached.jsonl"), "the-loop", `"level":"error"`},
		{"pino", filepath.Join(out, "events-pino.jsonl"), "pino", `"level":50`},
	}
	fmt.Println("reshaping it as a the-loop log with \"cached\":false/\"errors\":0 on most lines, and as a pino log ...")
	if err := reshape(logPath, cases[1].path, cachedShape); err != nil {
		return err
	}
	if err := reshape(logPath, cases[2].path, pinoShape); err != nil {
		return err
	}
	type result struct {
		scan, grep time.Duration
		rss        int64
		size       int64
	}
	results := make([]result, len(cases))
	for i, c := range cases {
		cfgPath := filepath.Join(out, "scan-"+c.format+".yaml")
		cfg := fmt.Sprintf("eventLog:\n  format: %s\nselfDiagnosis:\n  enabled: true\n  repo: acme/widgets\n  harness: builtin\n", c.format)
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
			return err
		}
		scanArgs := []string{bin, "run", "--dry-run", "--config", cfgPath, "--log", c.path, "--state", emptyState}
		grepArgs := []string{"grep", "-c", c.grep, c.path}
		// Warm the page cache.
		if _, err := run(nil, nil, grepArgs...); err != nil {
			return err
		}
		var scans, greps []time.Duration
		for r := 0; r < runs; r++ {
			s, err := run(nil, nil, scanArgs...)
			if err != nil {
				return err
			}
			g, err := run(nil, nil, grepArgs...)
			if err != nil {
				return err
			}
			scans, greps = append(scans, s.wall), append(greps, g.wall)
			results[i].rss = max(results[i].rss, s.rss)
		}
		results[i].scan, results[i].grep = median(scans), median(greps)
		if fi, err := os.Stat(c.path); err == nil {
			results[i].size = fi.Size()
		}
	}
	scan := measured{wall: results[0].scan, rss: results[0].rss}

	// The incremental rescan needs a cursor: a real (non-dry) scan against
	// the fake GitHub writes one.
	gh := fakegh.New(fakegh.Options{})
	defer gh.Close()
	live := filepath.Join(out, "live")
	os.RemoveAll(live)
	if err := os.MkdirAll(live, 0o755); err != nil {
		return err
	}
	liveLog := filepath.Join(live, "events.jsonl")
	if err := copyFile(logPath, liveLog); err != nil {
		return err
	}
	state := filepath.Join(live, "self-diagnosis.json")
	config := filepath.Join(live, "the-loop.yaml")
	cfg := fmt.Sprintf(`eventLog:
  path: %q
selfDiagnosis:
  enabled: true
  repo: acme/widgets
  harness: builtin
  maxIssuesPerDay: 3
  writeSpacingSeconds: 0
  secondaryWaitSeconds: 0
  statePath: %q
  apiURL: %q
`, liveLog, state, gh.URL()+"/api/v3/")
	if err := os.WriteFile(config, []byte(cfg), 0o644); err != nil {
		return err
	}
	env := []string{"GH_TOKEN=test-token"}
	realScan, err := run(env, nil, bin, "run", "--config", config)
	if err != nil {
		return err
	}
	if err := appendBytes(liveLog, growth[0]); err != nil {
		return err
	}
	// A dry run resumes from the stored cursor and moves nothing, so it can
	// be repeated over the same 1,000 new lines.
	incr, err := best(runs, env, bin, "run", "--dry-run", "--config", config)
	if err != nil {
		return err
	}
	// What any run costs before it reads a byte: the floor of a cron scan.
	start, err := best(runs, nil, bin, "version")
	if err != nil {
		return err
	}

	// The same, inside a watcher: no process start, no config parse; its
	// scan duration comes from its own metrics.
	watched, err := watcherRescan(bin, config, liveLog, env, growth[1:])
	if err != nil {
		return err
	}
	// The same, with 1,000 lines of an unrelated log each time: every
	// failure in them a new defect, each diagnosed and deferred (agent run,
	// events, a durable state write): what new defects cost, not new bytes.
	var unrelated [][]byte
	for i := 0; i < runs; i++ {
		var b bytes.Buffer
		if _, err := eventlog.Generate(&b, eventlog.Options{Lines: 1000, Seed: int64(100 + i),
			Start: logStart.AddDate(0, 0, 5).Add(time.Duration(i) * time.Hour)}); err != nil {
			return err
		}
		unrelated = append(unrelated, b.Bytes())
	}
	strangers, err := watcherRescan(bin, config, liveLog, env, unrelated)
	if err != nil {
		return err
	}

	mb := func(b int64) float64 { return float64(b) / (1 << 20) }
	verdict := func(ok bool) string {
		if ok {
			return "PASS"
		}
		return "FAIL"
	}
	incrRatio := incr.wall.Seconds() / scan.wall.Seconds()
	watchRatio := watched.Seconds() / scan.wall.Seconds()
	fmt.Printf("\nfull dry-run scans of %d-line logs (run --dry-run, builtin) against grep -c on the same file;\nmedian of %d runs each, page cache warm\n", lines, runs)
	fmt.Printf("%-34s %8s %9s %9s %8s %9s %9s %6s\n", "log", "MB", "scan", "grep -c", "ratio", "<= 3.00x", "peak RSS", "<=64MB")
	for i, c := range cases {
		r := results[i]
		ratio := r.scan.Seconds() / r.grep.Seconds()
		fmt.Printf("%-34s %8.1f %8.3fs %8.3fs %7.2fx %9s %7.1fMB %6s\n", c.name, float64(r.size)/1e6, r.scan.Seconds(), r.grep.Seconds(),
			ratio, verdict(ratio <= 3), mb(r.rss), verdict(r.rss <= 64<<20))
	}
	fmt.Printf("  (grep patterns: %q, %q, %q)\n", cases[0].grep, cases[1].grep, cases[2].grep)
	fmt.Printf("%-44s %11.3fs %12s\n", "first real scan (writes the cursor)", realScan.wall.Seconds(), "")
	// The target is the watcher's: a long-running scanner following the
	// log, as the-loop's own scan ran inside its daemons. A cron run pays a
	// process start per scan (shown), which no scan design removes.
	fmt.Printf("%s\n", "incremental rescan after the log grows by 1,000 lines:")
	fmt.Printf("%-44s %11.3fs %12s\n", "  one scan inside a running watcher", watched.Seconds(), "")
	fmt.Printf("%-44s %10.2f%% %11s %8s\n", "  watcher incremental / full (generated log)", 100*watchRatio, "<= 2%", verdict(watchRatio <= 0.02))
	// The watcher's scan writes what it decides (durably: fsyncs), the dry
	// run it is held to writes nothing; against a full scan that writes too:
	fmt.Printf("%-44s %10.2f%% %12s\n", "  watcher / first real scan (informational)", 100*watched.Seconds()/realScan.wall.Seconds(), "")
	fmt.Printf("%-44s %11.3fs %12s\n", "  a cron `run --dry-run` (new process)", incr.wall.Seconds(), "")
	fmt.Printf("%-44s %10.2f%% %12s\n", "  cron incremental / full (informational)", 100*incrRatio, "")
	fmt.Printf("%-44s %11.3fs %12s\n", "    of which process start (`version`)", start.wall.Seconds(), "")
	fmt.Printf("%-44s %11.3fs %12s\n", "  (watcher, +1,000 lines all new defects)", strangers.Seconds(), "")
	return nil
}

// watcherRescan starts `watch` on the live deployment and, for each batch,
// appends it and reads how long the scan it woke took; the best.
func watcherRescan(bin, config, liveLog string, env []string, batches [][]byte) (time.Duration, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "watch", "--config", config, "--metrics-addr", addr)
	cmd.Env = append(os.Environ(), env...)
	// A scan's end is read from its summary line on stderr, not by polling
	// /metrics: a scrape (the process collector's /proc reads, gzip) costs
	// the watcher a millisecond or two of CPU, taken from the very scan
	// being timed on a two-core machine.
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	summaries := make(chan struct{}, len(batches)+1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "the-loop-diagnose: ") && strings.Contains(sc.Text(), " lines read ") {
				summaries <- struct{}{}
			}
		}
	}()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	metric := func(name string) (float64, bool) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return 0, false
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
				f, err := strconv.ParseFloat(v, 64)
				return f, err == nil
			}
		}
		return 0, false
	}
	waitScan := func(n int) error {
		select {
		case <-summaries:
		case <-time.After(60 * time.Second):
			return fmt.Errorf("the watcher did not finish scan %d", n)
		}
		// The summary is printed as the scan returns; its metrics follow.
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if got, _ := metric(`the_loop_diagnose_scans_total{result="ok"}`); got >= float64(n) {
				return nil
			}
		}
		return fmt.Errorf("the watcher's metrics do not show scan %d", n)
	}
	if err := waitScan(1); err != nil { // the start-up scan
		return 0, err
	}
	var best time.Duration
	for i, batch := range batches {
		if err := appendBytes(liveLog, batch); err != nil {
			return 0, err
		}
		if err := waitScan(i + 2); err != nil {
			return 0, err
		}
		took, ok := metric("the_loop_diagnose_last_scan_duration_seconds")
		if !ok {
			return 0, errors.New("the watcher exposes no last_scan_duration_seconds")
		}
		if d := time.Duration(took * float64(time.Second)); i == 0 || d < best {
			best = d
		}
	}
	return best, nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// huge streams a generated log of about gb gigabytes into `run --dry-run
// --log -` and reports the scan's peak RSS: it must match the 1M-line one.
func huge(bin string, gb float64) error {
	const bytesPerLine = 211 // what the generator averages
	lines := int(gb * 1e9 / bytesPerLine)
	pr, pw := io.Pipe()
	counted := &countingWriter{w: pw}
	go func() {
		w := bufio.NewWriterSize(counted, 1<<20)
		_, err := eventlog.Generate(w, eventlog.Options{Lines: lines, Seed: 7})
		if err == nil {
			err = w.Flush()
		}
		pw.CloseWithError(err)
	}()
	fmt.Printf("streaming %d generated lines (~%.0f GB) through a pipe into %s run --dry-run --log - ...\n", lines, gb, bin)
	m, err := run(nil, pr, bin, "run", "--dry-run", "--harness", "builtin", "--log", "-", "--state", filepath.Join(os.TempDir(), "the-loop-diagnose-bench-no-state.json"))
	if err != nil {
		return err
	}
	fmt.Printf("scanned %.2f GB in %.1fs (%.0f MB/s, generator included); peak RSS %.1f MB (target <= 64 MB: %s)\n",
		float64(counted.n)/1e9, m.wall.Seconds(), float64(counted.n)/1e6/m.wall.Seconds(), float64(m.rss)/(1<<20),
		map[bool]string{true: "PASS", false: "FAIL"}[m.rss <= 64<<20])
	return nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// median is the middle of ds (the mean of the two middle ones).
func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
