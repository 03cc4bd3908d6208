package logread

import (
	"bytes"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// syncBuffer is a goroutine-safe buffer.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *syncBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *syncBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func TestProgressRewritesOneLineAndClearsIt(t *testing.T) {
	var out syncBuffer
	var read atomic.Int64
	read.Store(50 << 20)
	stop := ShowProgress(&out, "events.jsonl", 200<<20, &read, time.Millisecond)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), "25"); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no progress shown: %q", out.String())
		}
	}
	stop()
	got := out.String()
	if strings.Contains(got, "\n") || !strings.HasPrefix(got, "\r") || !strings.HasSuffix(got, "\r") {
		t.Fatalf("progress must rewrite one line in place and clear it at the end: %q", got)
	}
	if line := ProgressLine("events.jsonl", 50<<20, 200<<20); !strings.Contains(line, "events.jsonl") || !strings.Contains(line, "25") {
		t.Fatalf("ProgressLine = %q: want the file and the share read", line)
	}
}
