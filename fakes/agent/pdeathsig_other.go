//go:build !linux

package main

// parentDeathSignal: only Linux has one.
func parentDeathSignal() int { return 0 }
