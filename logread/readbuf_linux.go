package logread

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// hugePage is the size of a transparent huge page on the platforms Go
// supports on Linux with 4 KiB base pages.
const hugePage = 2 << 20

// NewReadBuffer is a reader's buffer (ReadConfig.Buffer) for a long-lived
// owner, mapped outside the Go heap with transparent huge pages asked for.
// A scan touches all of its 2 MiB; on a virtual machine each 4 KiB page
// fault cost about 11 µs (0.5 s of faults per 2 GiB touched), and the
// buffer's 513 faults were 6 ms of the reader's critical path. Outside the
// heap it also stops raising the garbage collector's heap goal by twice its
// size. The mapping is released once owner is collected.
func NewReadBuffer[T any](owner *T) []byte {
	n := ReadBufferSize(0)
	size := (n + hugePage - 1) &^ (hugePage - 1)
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return make([]byte, n)
	}
	// Advice only: where huge pages are off, this is an ordinary mapping.
	_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	runtime.AddCleanup(owner, func(b []byte) { _ = unix.Munmap(b) }, b)
	return b
}
