//go:build unix

package fingerprint

import (
	"syscall"
	"time"
)

// processCPUTime is the user+system CPU time the test process has used. The
// benchmark reports messages per CPU-second too, because wall-clock
// throughput on a shared machine measures the neighbours as much as us.
func processCPUTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
