package stages

import "golang.org/x/sys/cpu"

var useAVX2 = cpu.X86.HasAVX2

// indexInterestingAVX2 is indexInteresting 32 positions at a time.
//
//go:noescape
func indexInterestingAVX2(b []byte) (i int, hit bool)

// indexPairAVX2 is indexPair 32 positions at a time.
//
//go:noescape
func indexPairAVX2(b []byte, c0, c1 byte) (i int, hit bool)
