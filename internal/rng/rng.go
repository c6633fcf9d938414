package rng

import "math"

// Rand is a mulberry32 generator with the distributions the models draw
// from. Its whole state is a uint32 counter plus one cached normal, so a run
// is reproduced from its seed alone.
//
// The zero value is a generator seeded with 0. A Rand is not safe for
// concurrent use: every model owns its generator, which is what keeps runs
// reproducible.
type Rand struct {
	state    uint32
	spare    float64 // second Box–Muller normal, valid when hasSpare
	hasSpare bool
}

// New returns a generator seeded with seed.
func New(seed uint32) *Rand {
	return &Rand{state: seed}
}

// Uint32 returns the next 32-bit output of mulberry32 (Tommy Ettinger's
// public-domain generator), bit for bit as the JavaScript original computes
// it with Math.imul and >>>.
func (r *Rand) Uint32() uint32 {
	r.state += 0x6D2B79F5
	t := r.state
	t = (t ^ t>>15) * (t | 1)
	t ^= t + (t^t>>7)*(t|61)
	return t ^ t>>14
}

// Float64 returns a uniform number in [0, 1): the next output divided by
// 2^32, as the reference implementation does, so that browser and Go agree.
func (r *Rand) Float64() float64 {
	return float64(r.Uint32()) / (1 << 32)
}

// Uniform returns a uniform number in [lo, hi).
func (r *Rand) Uniform(lo, hi float64) float64 {
	return lo + (hi-lo)*r.Float64()
}

// openFloat64 returns a uniform number in (0, 1], for logarithms.
func (r *Rand) openFloat64() float64 {
	return 1 - r.Float64()
}

// Exp returns an exponential number with the given mean by the inverse of
// its CDF, −mean·ln(1 − u). It uses one output.
func (r *Rand) Exp(mean float64) float64 {
	return -mean * math.Log(r.openFloat64())
}

// Normal returns a normal number with the given mean and standard deviation
// by the Box–Muller transform. Each transform turns two outputs into two
// independent normals; the cosine one is returned first and the sine one is
// kept for the next call, so two calls use exactly two outputs.
func (r *Rand) Normal(mean, stddev float64) float64 {
	if r.hasSpare {
		r.hasSpare = false
		return mean + stddev*r.spare
	}
	u1 := r.openFloat64()
	u2 := r.Float64()
	radius := math.Sqrt(-2 * math.Log(u1))
	sin, cos := math.Sincos(2 * math.Pi * u2)
	r.spare, r.hasSpare = radius*sin, true
	return mean + stddev*radius*cos
}

// knuthLimit is the mean from which Poisson switches from Knuth's product
// of uniforms to Hörmann's PTRS. Knuth's method needs mean+1 outputs on
// average and multiplies towards e^−mean, which underflows to zero past a
// mean of about 745, where it would loop for ever; PTRS needs about 1.2
// outputs whatever the mean and is exact for means of 10 and more.
const knuthLimit = 10

// Poisson returns a Poisson number with the given mean: Knuth's method
// below a mean of 10, Hörmann's transformed rejection with squeeze (PTRS,
// "The transformed rejection method for generating Poisson random
// variables", 1993) from 10 up. A mean that is not a positive number
// (zero, negative or NaN) gives 0.
func (r *Rand) Poisson(mean float64) int {
	switch {
	case !(mean > 0):
		return 0
	case mean < knuthLimit:
		limit := math.Exp(-mean)
		k, p := 0, r.Float64()
		for p > limit {
			k++
			p *= r.Float64()
		}
		return k
	default:
		return r.ptrs(mean)
	}
}

// ptrs is Hörmann's PTRS algorithm; the constants are the paper's.
func (r *Rand) ptrs(mean float64) int {
	slam := math.Sqrt(mean)
	loglam := math.Log(mean)
	b := 0.931 + 2.53*slam
	a := -0.059 + 0.02483*b
	invAlpha := 1.1239 + 1.1328/(b-3.4)
	vr := 0.9277 - 3.6224/(b-2)
	for {
		u := r.Float64() - 0.5
		v := r.openFloat64()
		us := 0.5 - math.Abs(u)
		k := math.Floor((2*a/us+b)*u + mean + 0.43)
		if us >= 0.07 && v <= vr {
			return int(k)
		}
		if k < 0 || (us < 0.013 && v > us) {
			continue
		}
		lg, _ := math.Lgamma(k + 1)
		if math.Log(v)+math.Log(invAlpha)-math.Log(a/(us*us)+b) <= -mean+k*loglam-lg {
			return int(k)
		}
	}
}
