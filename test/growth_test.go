package test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// growthKnown is how many known fingerprints the growth test's state holds:
// a year of a busy fleet. THE_LOOP_GROWTH_KNOWN changes it (make bench-store).
func growthKnown(t *testing.T) int {
	if v := os.Getenv("THE_LOOP_GROWTH_KNOWN"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			t.Fatalf("THE_LOOP_GROWTH_KNOWN=%q", v)
		}
		return n
	}
	return 100_000
}

// knownState is a the-loop state of n filed defects, varied as a year of
// them is: events of many kinds, the-loop's own (v1) fingerprints and this
// tool's, titles and issue numbers of their own, an issue record for each
// of this tool's.
func knownState(n int) []byte {
	events := []string{"dispatch.failed", "git.push.failed", "queue.failed", "worker.crashed", "webhook.rejected",
		"agent.timeout", "db.query.failed", "cache.miss.storm", "deploy.rollback", "auth.refresh.failed"}
	reported := make(map[string]any, n)
	issues := make(map[string]any, n/2)
	for i := range n {
		sum := sha256.Sum256([]byte(strconv.Itoa(i)))
		h := hex.EncodeToString(sum[:8])
		ev := events[int(sum[8])%len(events)]
		ts := time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * 5 * time.Minute).Format("2006-01-02T15:04:05.000Z")
		url := fmt.Sprintf("https://github.com/acme/widgets/issues/%d", i+1)
		if i%3 == 0 { // the-loop's own: a v1 key and a bare URL, as it wrote them
			reported[h] = url
			continue
		}
		fp := "v3:" + h
		reported[fp] = map[string]any{"url": url, "number": i + 1, "ts": ts, "event": ev,
			"title": fmt.Sprintf("[self-diagnosed] %s: %s in %s #%d", ev, []string{"timeout", "nil map", "refused", "panic"}[i%4], h[:6], i)}
		if i%2 == 0 {
			issues[fp] = map[string]any{"number": i + 1, "url": url, "state": "open", "occurrences": i%50 + 1, "checked_at": ts}
		}
	}
	b, _ := json.Marshal(map[string]any{"reported": reported, "issues": issues, "abandoned": map[string]any{},
		"attempts": map[string]any{}, "posted": []any{}})
	return b
}

// runCountingIO runs the binary as d.run does, under a shell that, once it
// has reaped it, prints its own /proc/PID/io: a reaped child's I/O (and its
// children's, the agent's) is added to its parent's. So what is counted is
// the tool's writes alone, not this process's fake GitHub's. syscalls are
// the bytes passed to write calls (files, sockets, pipes: wchar); storage
// the bytes the storage layer took (write_bytes less cancelled), which on
// ext4 is a whole 4 KiB block for each small append fsynced.
func runCountingIO(t *testing.T, d *deployment, args ...string) (res result, syscalls, storage, read int64) {
	t.Helper()
	if _, err := os.Stat("/proc/self/io"); err != nil {
		t.Skipf("no /proc/self/io to count bytes written: %v", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := d.command(args...)
	cmd.Args = append([]string{"sh", "-c", `"$@"; s=$?; cat /proc/$$/io >&3; exit $s`, "sh"}, cmd.Args...)
	cmd.Path = "/bin/sh"
	cmd.ExtraFiles = []*os.File{w}
	res = d.runCmd(cmd, args)
	w.Close()
	var written, cancelled int64
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ": ")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "wchar":
			syscalls = n
		case "rchar":
			read = n
		case "write_bytes":
			written = n
		case "cancelled_write_bytes":
			cancelled = n
		}
	}
	if syscalls == 0 {
		t.Fatalf("no I/O counts from /proc/PID/io\n%s", res.stderr)
	}
	return res, syscalls, written - cancelled, read
}

// growthRun is one deployment of the growth test: its state seeded with
// known fingerprints, a few defects of its own filed, its cursor at the
// log's end.
func growthRun(t *testing.T, known int) (*deployment, []string) {
	gh := newGitHub(t)
	d := newDeployment(t, gh, deployOpts{maxPerDay: 1000, extra: "  maxDiagnosesPerScan: 50\n  maxDiagnosesPerDay: 1000\n"})
	if known > 0 {
		if err := os.WriteFile(d.state, knownState(known), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	recurring := []string{
		failure(t0, "git.failed", "git push failed: exit status 128: remote rejected refs/heads/loop/fix-1"),
		failure(t0, "queue.failed", "queue full: dropped work item after 3 attempts"),
		failure(t0, "worker.crashed", "worker crashed: nil pointer dereference in scheduler.pick"),
	}
	d.appendLog(recurring...)
	if res := d.run("run"); res.code != 0 || gh.CountCreates() != 3 {
		t.Fatalf("seed run: exit %d, %d issues\n%s", res.code, gh.CountCreates(), res.stderr)
	}
	return d, recurring
}

// incremental appends 1,000 lines (successes and recurrences of the filed
// defects) and runs the scan that reads them: its time and the bytes its
// read calls returned (files, the store's pages, sockets: rchar).
func incremental(t *testing.T, d *deployment, recurring []string, at time.Time) (time.Duration, int64) {
	lines := make([]string, 0, 1000)
	for i := range 1000 {
		if i%50 == 0 {
			lines = append(lines, recurring[i/50%len(recurring)])
		} else {
			lines = append(lines, info(at.Add(time.Duration(i)*time.Millisecond), []string{"dispatch.started", "dispatch.done", "git.pushed"}[i%3]))
		}
	}
	d.appendLog(lines...)
	start := time.Now()
	res, _, _, read := runCountingIO(t, d, "run", "--now", at.Add(time.Second).Format(time.RFC3339))
	took := time.Since(start)
	if res.code != 0 {
		t.Fatalf("incremental scan: exit %d\n%s", res.code, res.stderr)
	}
	return took, read
}

// With a year of known fingerprints an incremental scan reads what it reads
// on an empty state (within 2×), and each issue filed writes at most 64 KiB:
// the state is looked up and written per row, never read or rewritten whole.
func TestGrowthIncrementalScanAndBytesPerIssueDoNotGrowWithTheState(t *testing.T) {
	t.Parallel()
	known := growthKnown(t)
	const reps = 5
	times, reads := map[int][]time.Duration{}, map[int][]int64{}
	deps := map[int]*deployment{}
	for _, n := range []int{0, known} {
		d, recurring := growthRun(t, n)
		deps[n] = d
		for i := range reps {
			took, read := incremental(t, d, recurring, t0.Add(time.Duration(i+1)*time.Hour))
			times[n], reads[n] = append(times[n], took), append(reads[n], read)
		}
	}
	// Time is logged (make bench-store), not asserted: on a shared machine
	// it measures the load. What is asserted is the cause it would show:
	// reading the state whole makes every scan read bytes in proportion
	// to it; looked up per row, the scan reads what the empty state's does.
	empty, full := slices.Min(times[0]), slices.Min(times[known])
	t.Logf("incremental scan after 1,000 lines: %v with an empty state, %v with %d known fingerprints (%.2f×); runs %v / %v",
		empty, full, known, float64(full)/float64(empty), times[0], times[known])
	emptyRead, fullRead := slices.Max(reads[0]), slices.Max(reads[known])
	t.Logf("bytes read by it: at most %d with an empty state, %d with %d known fingerprints; runs %v / %v",
		emptyRead, fullRead, known, reads[0], reads[known])
	if fullRead > 2*emptyRead {
		t.Errorf("with %d known fingerprints the incremental scan read %d bytes, more than 2× the empty state's %d", known, fullRead, emptyRead)
	}

	d := deps[known]
	var news []string
	for i := range 6 {
		news = append(news, failure(t0.Add(10*time.Hour), fmt.Sprintf("defect%c.failed", 'a'+i), fmt.Sprintf("stage %c broke: %s", 'a'+i, []string{"timeout talking to upstream", "nil map write", "connection refused", "index out of range", "unexpected end of JSON input", "division by zero in rate.calc"}[i])))
	}
	d.appendLog(news...)
	created := d.gh.CountCreates()
	start := time.Now()
	res, written, storage, _ := runCountingIO(t, d, "run", "--now", t0.Add(10*time.Hour+time.Second).Format(time.RFC3339))
	took := time.Since(start)
	filed := d.gh.CountCreates() - created
	if res.code != 0 || filed != 6 {
		t.Fatalf("filing run: exit %d, %d filed, want 6\n%s", res.code, filed, res.stderr)
	}
	perIssue, perIssueStorage := written/int64(filed), storage/int64(filed)
	t.Logf("a scan filing %d issues with %d known fingerprints: %v; per issue %d bytes written (every write call of the tool and its agent: store, event log, dossiers, prompts, GitHub requests), %d bytes taken by storage (whole 4 KiB blocks)",
		filed, known, took, perIssue, perIssueStorage)
	if perIssue > 64<<10 {
		t.Errorf("%d bytes written per filed issue, want at most 64 KiB", perIssue)
	}
}
