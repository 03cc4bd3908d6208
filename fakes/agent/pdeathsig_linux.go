package main

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// parentDeathSignal is the signal this process gets when its parent dies
// (PR_GET_PDEATHSIG), 0 for none.
func parentDeathSignal() int {
	var sig int32
	if err := unix.Prctl(unix.PR_GET_PDEATHSIG, uintptr(unsafe.Pointer(&sig)), 0, 0, 0); err != nil {
		return -1
	}
	return int(sig)
}
