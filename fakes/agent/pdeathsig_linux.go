package main

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The parent-death signal is a per-thread attribute: the kernel sets it on
// the thread that exec'd us (the main thread) and gives the threads the Go
// runtime starts later none. Pinned to the main thread from init, main
// reads the process's own setting, not a later thread's 0.
func init() { runtime.LockOSThread() }

// parentDeathSignal is the signal this process gets when its parent dies
// (PR_GET_PDEATHSIG, read on the main thread), 0 for none.
func parentDeathSignal() int {
	var sig int32
	if err := unix.Prctl(unix.PR_GET_PDEATHSIG, uintptr(unsafe.Pointer(&sig)), 0, 0, 0); err != nil {
		return -1
	}
	return int(sig)
}
