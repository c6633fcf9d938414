// Package rng is the seeded random source of afloat's models: mulberry32
// (a 32-bit generator small enough to reimplement bit for bit in a browser)
// and the distributions the models draw from — uniform, exponential by the
// inverse CDF, normal by Box–Muller and Poisson by Knuth's method (PTRS for
// large means).
//
// A model owns one generator and passes it explicitly; nothing here reads a
// global source or the clock:
//
//	r := rng.New(seed)
//	start := r.Uniform(20, 160) // minutes
//	ramp := r.Exp(6)            // mean 6 minutes
//	n := r.Normal(60*rate, math.Sqrt(60*rate))
package rng
