package rng

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

// vectors are the reference outputs in testdata/mulberry32.json, copied
// from the project's shared reference vectors.
type vectors struct {
	Algorithm string `json:"algorithm"`
	Cases     []struct {
		Seed   uint32   `json:"seed"`
		Uint32 []uint32 `json:"uint32"`
	} `json:"cases"`
}

func TestMulberry32Vectors(t *testing.T) {
	raw, err := os.ReadFile("testdata/mulberry32.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if v.Algorithm != "mulberry32" || len(v.Cases) == 0 {
		t.Fatalf("testdata holds %q with %d cases", v.Algorithm, len(v.Cases))
	}
	for _, c := range v.Cases {
		r := New(c.Seed)
		for i, want := range c.Uint32 {
			if got := r.Uint32(); got != want {
				t.Fatalf("seed %d, step %d: Uint32() = %d, want %d", c.Seed, i, got, want)
			}
		}
	}
}

func TestFloat64IsOutputOver2To32(t *testing.T) {
	a, b := New(42), New(42)
	for i := 0; i < 1000; i++ {
		u := a.Uint32()
		f := b.Float64()
		if f != float64(u)/4294967296 {
			t.Fatalf("step %d: Float64() = %v, want %d/2^32", i, f, u)
		}
		if f < 0 || f >= 1 {
			t.Fatalf("step %d: Float64() = %v outside [0, 1)", i, f)
		}
	}
}

func TestZeroValueIsSeedZero(t *testing.T) {
	var z Rand
	r := New(0)
	for i := 0; i < 8; i++ {
		if a, b := z.Uint32(), r.Uint32(); a != b {
			t.Fatalf("step %d: zero value gave %d, New(0) gave %d", i, a, b)
		}
	}
}

// moments draws n values and returns their mean and variance.
func moments(n int, draw func() float64) (mean, variance float64) {
	var sum, sum2 float64
	for i := 0; i < n; i++ {
		x := draw()
		sum += x
		sum2 += x * x
	}
	mean = sum / float64(n)
	return mean, sum2/float64(n) - mean*mean
}

// The draws are seeded, so these checks are deterministic; the tolerances
// are about five standard errors so that a broken transform fails and a
// correct one passes for any seed.
func TestDistributionMoments(t *testing.T) {
	const n = 200000
	r := New(7)
	tests := []struct {
		name             string
		draw             func() float64
		mean, variance   float64
		meanTol, varRTol float64
	}{
		{"uniform(2,5)", func() float64 { return r.Uniform(2, 5) }, 3.5, 0.75, 0.01, 0.02},
		{"exp(mean 6)", func() float64 { return r.Exp(6) }, 6, 36, 0.07, 0.05},
		{"normal(10,3)", func() float64 { return r.Normal(10, 3) }, 10, 9, 0.04, 0.02},
		{"poisson(3)", func() float64 { return float64(r.Poisson(3)) }, 3, 3, 0.02, 0.03},
		{"poisson(9.5)", func() float64 { return float64(r.Poisson(9.5)) }, 9.5, 9.5, 0.04, 0.03},
		{"poisson(10)", func() float64 { return float64(r.Poisson(10)) }, 10, 10, 0.04, 0.03},
		{"poisson(250)", func() float64 { return float64(r.Poisson(250)) }, 250, 250, 0.2, 0.03},
		{"poisson(1e6)", func() float64 { return float64(r.Poisson(1e6)) }, 1e6, 1e6, 12, 0.03},
	}
	for _, tc := range tests {
		mean, variance := moments(n, tc.draw)
		if math.Abs(mean-tc.mean) > tc.meanTol {
			t.Errorf("%s: mean %v, want %v ± %v", tc.name, mean, tc.mean, tc.meanTol)
		}
		if math.Abs(variance-tc.variance) > tc.varRTol*tc.variance {
			t.Errorf("%s: variance %v, want %v ± %v%%", tc.name, variance, tc.variance, 100*tc.varRTol)
		}
	}
}

// TestPoissonPMF compares the frequencies of small counts with the exact
// probabilities on both sides of the switch from Knuth to PTRS.
func TestPoissonPMF(t *testing.T) {
	const n = 400000
	for _, mean := range []float64{0.5, 4, 12, 40} {
		r := New(uint32(mean * 1000))
		counts := map[int]int{}
		for i := 0; i < n; i++ {
			counts[r.Poisson(mean)]++
		}
		for k := int(math.Max(0, mean-2*math.Sqrt(mean))); float64(k) <= mean+2*math.Sqrt(mean); k++ {
			lg, _ := math.Lgamma(float64(k) + 1)
			p := math.Exp(-mean + float64(k)*math.Log(mean) - lg)
			got := float64(counts[k]) / n
			se := math.Sqrt(p * (1 - p) / n)
			if math.Abs(got-p) > 5*se {
				t.Errorf("mean %v: P(%d) observed %.5f, want %.5f ± %.5f", mean, k, got, p, 5*se)
			}
		}
	}
}

func TestPoissonEdges(t *testing.T) {
	r := New(1)
	for _, mean := range []float64{0, -1, math.NaN(), math.Inf(-1)} {
		if got := r.Poisson(mean); got != 0 {
			t.Errorf("Poisson(%v) = %d, want 0", mean, got)
		}
	}
	// A mean past e^−mean's underflow must still return promptly.
	if got := r.Poisson(5000); got < 4500 || got > 5500 {
		t.Errorf("Poisson(5000) = %d, want near 5000", got)
	}
}

func TestNormalUsesTwoOutputsPerPair(t *testing.T) {
	a, b := New(3), New(3)
	a.Normal(0, 1)
	a.Normal(0, 1)
	b.Uint32()
	b.Uint32()
	if x, y := a.Uint32(), b.Uint32(); x != y {
		t.Fatalf("after two normals the stream is at %d, want %d (two outputs used)", x, y)
	}
}

func BenchmarkUint32(b *testing.B) {
	r := New(1)
	var s uint32
	for b.Loop() {
		s += r.Uint32()
	}
	_ = s
}

func BenchmarkNormal(b *testing.B) {
	r := New(1)
	var s float64
	for b.Loop() {
		s += r.Normal(0, 1)
	}
	_ = s
}
