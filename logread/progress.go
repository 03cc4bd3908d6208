package logread

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// ShowProgress rewrites one status line on w ("reading NAME: 120.0 of 210.4
// MiB (57%)") every interval until the returned stop is called, which erases
// it. w should be a terminal: the line is redrawn with a carriage return.
func ShowProgress(w io.Writer, name string, total int64, read *atomic.Int64, interval time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		width := 0
		show := func() {
			line := ProgressLine(name, read.Load(), total)
			fmt.Fprintf(w, "\r%-*s", width, line)
			width = max(width, len(line))
		}
		show() // at once: the backlog is large enough to be worth a line
		for {
			select {
			case <-done:
				fmt.Fprintf(w, "\r%*s\r", width, "")
				return
			case <-tick.C:
				show()
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}

// ProgressLine renders bytes read of total.
func ProgressLine(name string, read, total int64) string {
	const mib = 1 << 20
	pct := 100.0
	if total > 0 {
		pct = min(100, 100*float64(read)/float64(total))
	}
	return fmt.Sprintf("reading %s: %.1f of %.1f MiB (%.0f%%)", name, float64(read)/mib, float64(total)/mib, pct)
}
