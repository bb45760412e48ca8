package bench

import (
	"math"
	"math/rand/v2"
)

// zipfian draws integers in [0, n) with P(i) proportional to 1/(i+1)^theta,
// by the method of Gray et al. ("Quickly generating billion-record synthetic
// databases", SIGMOD 1994) that YCSB uses. The item count can grow (YCSB's
// inserts), updating zeta incrementally.
type zipfian struct {
	n     uint64
	theta float64
	alpha float64
	zetan float64
	zeta2 float64
	eta   float64
}

func newZipfian(n uint64, theta float64) *zipfian {
	z := &zipfian{theta: theta, alpha: 1 / (1 - theta), zeta2: zeta(0, 2, theta, 0)}
	z.n = n
	z.zetan = zeta(0, n, theta, 0)
	z.updateEta()
	return z
}

// zeta returns sum_{i=from+1..to} 1/i^theta added to base.
func zeta(from, to uint64, theta, base float64) float64 {
	sum := base
	for i := from + 1; i <= to; i++ {
		sum += 1 / math.Pow(float64(i), theta)
	}
	return sum
}

func (z *zipfian) updateEta() {
	z.eta = (1 - math.Pow(2/float64(z.n), 1-z.theta)) / (1 - z.zeta2/z.zetan)
}

// grow raises the item count to n.
func (z *zipfian) grow(n uint64) {
	if n <= z.n {
		return
	}
	z.zetan = zeta(z.n, n, z.theta, z.zetan)
	z.n = n
	z.updateEta()
}

// next draws an item; 0 is the most popular.
func (z *zipfian) next(rng *rand.Rand) uint64 {
	u := rng.Float64()
	uz := u * z.zetan
	if uz < 1 {
		return 0
	}
	if uz < 1+math.Pow(0.5, z.theta) {
		return 1
	}
	v := uint64(float64(z.n) * math.Pow(z.eta*u-z.eta+1, z.alpha))
	if v >= z.n {
		v = z.n - 1
	}
	return v
}

// fnv64 scrambles a zipfian rank so that popular keys are spread over the
// key space instead of clustered at its start (YCSB's scrambled zipfian).
func fnv64(v uint64) uint64 {
	h := uint64(0xcbf29ce484222325)
	for i := 0; i < 8; i++ {
		h ^= v & 0xff
		h *= 0x100000001b3
		v >>= 8
	}
	return h
}
