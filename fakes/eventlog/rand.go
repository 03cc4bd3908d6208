package eventlog

import "math/bits"

// rng is splitmix64. It is written out here rather than taken from math/rand
// so that the byte stream for a seed can never change under a Go upgrade:
// committed fixtures and golden tests depend on it.
type rng struct{ s uint64 }

func newRNG(seed int64, stream uint64) *rng {
	r := &rng{s: uint64(seed) ^ stream*0x9e3779b97f4a7c15}
	r.next() // decorrelate nearby seeds
	return r
}

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// intn returns a value in [0, n); n must be positive. The multiply-high
// reduction has a negligible bias for the small n used here.
func (r *rng) intn(n int) int {
	hi, _ := bits.Mul64(r.next(), uint64(n))
	return int(hi)
}

// between returns a value in [lo, hi].
func (r *rng) between(lo, hi int) int { return lo + r.intn(hi-lo+1) }

// float returns a value in [0, 1).
func (r *rng) float() float64 { return float64(r.next()>>11) / (1 << 53) }

// chance reports true with probability p.
func (r *rng) chance(p float64) bool { return r.float() < p }

func (r *rng) pick(s []string) string { return s[r.intn(len(s))] }
