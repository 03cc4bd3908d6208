//go:build !amd64

package stages

const useAVX2 = false

func indexInterestingAVX2(b []byte) (int, bool) { return 0, false }

func indexPairAVX2(b []byte, c0, c1 byte) (int, bool) { return 0, false }
