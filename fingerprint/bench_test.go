package fingerprint

import (
	"testing"
	"time"
)

// benchMix is a realistic mix: the-loop's own failure records, system log
// lines of the kinds Loghub samples, and a few stack traces (about 1 in 8
// records carries one).
var benchMix = []string{
	"dispatch failed: POST https://api.github.com/repos/acme/loop/issues: 422 Validation Failed [{Resource:Issue Field:title Code:missing_field}]",
	"agent exited: exit status 137 after 4m12.5s (pid 48211)",
	"gh: Not Found (HTTP 404)",
	"open /home/alice/.the-loop/state.db: database is locked",
	"dial tcp 140.82.112.6:443: i/o timeout",
	"context deadline exceeded (Client.Timeout exceeded while awaiting headers)",
	"git push origin fix/issue-1234: exit status 1: ! [rejected] fix/issue-1234 -> fix/issue-1234 (non-fast-forward)",
	`json: cannot unmarshal string into Go struct field Config.retries of type int64`,
	"lease 550e8400-e29b-41d4-a716-446655440000 expired at 2026-01-02T03:04:05.123Z",
	"PacketResponder 1 for block blk_38865049064139660 terminating",
	"Receiving block blk_-5792489080791696128 src: /10.251.30.6:33145 dest: /10.251.30.6:50010",
	"pam_unix(sshd:auth): authentication failure; logname= uid=0 euid=0 tty=ssh ruser= rhost=173.234.31.186  user=root",
	"Failed password for invalid user webmaster from 173.234.31.186 port 38926 ssh2",
	`10.11.10.1 "GET /v2/54fadb412c4e40cdbaed9335e4c35a9e/servers/detail HTTP/1.1" status: 200 len: 1893 time: 0.2477829`,
	"acquire lock=233570404, flags=0x1, tag=\"View Lock\", name=com.android.systemui, ws=null, uid=10037, pid=2227",
	"proxy.cse.cuhk.edu.hk:5070 close, 1190 bytes (1.16 KB) sent, 1671 bytes (1.63 KB) received, lifetime 00:02",
	"connection from 24.54.76.216 (24-54-76-216.bflony.adelphia.net) at Fri Jun 17 07:07:00 2005",
	"Block broadcast_9_piece0 stored as bytes in memory (estimated size 5.2 KB, free 5.2 KB)",
	"ciod: Error loading /bgl/apps/scaletest/performance/MINIBEN/mb_243_0810/allreduce.rts: invalid or missing program image, Exec format error",
	pyTrace,
	goPanicText,
	javaTrace,
	"worker 7 of 16 stalled: no heartbeat for 93s",
	"ERROR: duplicate key value violates unique constraint \"users_email_key\" (SQLSTATE 23505)",
}

// BenchmarkNormalize times the current normalizer (v4: the text's data
// rules, then NormalizeV3); BenchmarkNormalizeV3 and BenchmarkNormalizeV2
// the previous ones, still computed for every record as aliases.
func BenchmarkNormalize(b *testing.B) { benchmarkNormalizer(b, NormalizeV4) }

func BenchmarkNormalizeV3(b *testing.B) { benchmarkNormalizer(b, NormalizeV3) }

func BenchmarkNormalizeV2(b *testing.B) { benchmarkNormalizer(b, Normalize) }

func benchmarkNormalizer(b *testing.B, normalize func(string) string) {
	bytes := 0
	for _, m := range benchMix {
		bytes += len(m)
	}
	b.SetBytes(int64(bytes / len(benchMix)))
	b.ReportAllocs()
	cpu0, ok := processCPUTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = normalize(benchMix[i%len(benchMix)])
	}
	b.StopTimer()
	reportThroughput(b, cpu0, ok)
}

// reportThroughput reports messages per wall-clock second and, where the
// OS tells, per CPU-second of this process (GC included).
func reportThroughput(b *testing.B, cpu0 time.Duration, ok bool) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	if cpu1, ok1 := processCPUTime(); ok && ok1 && cpu1 > cpu0 {
		b.ReportMetric(float64(b.N)/(cpu1-cpu0).Seconds(), "msgs/cpu-s")
	}
}

func BenchmarkCompute(b *testing.B) {
	ins := make([]Input, len(benchMix))
	for i, m := range benchMix {
		ins[i] = Input{Event: "dispatch.failed", Error: m}
	}
	b.ReportAllocs()
	cpu0, ok := processCPUTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = Compute(ins[i%len(ins)])
	}
	b.StopTimer()
	reportThroughput(b, cpu0, ok)
}
