package queueing

import (
	"math"
	"math/big"
	"testing"

	"github.com/afloat/afloat/internal/rng"
)

// erlangCSum is an independent formulation of Erlang C: the sum form
//
//	C = (a^N/N!)·N/(N−a) / (Σ_{k<N} a^k/k! + (a^N/N!)·N/(N−a))
//
// in 400-bit floats, where no cancellation or overflow can hide an error.
func erlangCSum(a float64, n int) float64 {
	const prec = 400
	fa := new(big.Float).SetPrec(prec).SetFloat64(a)
	term := new(big.Float).SetPrec(prec).SetInt64(1) // a^0/0!
	sum := new(big.Float).SetPrec(prec)
	for k := 0; k < n; k++ {
		sum.Add(sum, term)
		term.Mul(term, fa)
		term.Quo(term, new(big.Float).SetPrec(prec).SetInt64(int64(k+1)))
	}
	// term is now a^N/N!.
	nf := new(big.Float).SetPrec(prec).SetInt64(int64(n))
	last := new(big.Float).SetPrec(prec).Mul(term, nf)
	last.Quo(last, new(big.Float).SetPrec(prec).Sub(nf, fa))
	total := new(big.Float).SetPrec(prec).Add(sum, last)
	c, _ := new(big.Float).Quo(last, total).Float64()
	return c
}

// erlangBSum is Erlang B's sum form, (a^N/N!)/Σ_{k≤N} a^k/k!, in big floats.
func erlangBSum(a float64, n int) float64 {
	const prec = 400
	fa := new(big.Float).SetPrec(prec).SetFloat64(a)
	term := new(big.Float).SetPrec(prec).SetInt64(1)
	sum := new(big.Float).SetPrec(prec).SetInt64(1)
	for k := 1; k <= n; k++ {
		term.Mul(term, fa)
		term.Quo(term, new(big.Float).SetPrec(prec).SetInt64(int64(k)))
		sum.Add(sum, term)
	}
	b, _ := new(big.Float).Quo(term, sum).Float64()
	return b
}

func closeTo(got, want, rtol float64) bool {
	if want < 1e-280 {
		return got < 1e-270 // both lost in float64's subnormals
	}
	return math.Abs(got-want) <= rtol*want
}

// cases draws (a, n) pairs over the range the models use: up to 700
// servers, utilizations from nearly idle to 0.9999.
func cases(seed uint32, count int) [][2]float64 {
	r := rng.New(seed)
	out := make([][2]float64, 0, count)
	for len(out) < count {
		n := 1 + int(r.Float64()*700)
		var rho float64
		switch r.Uint32() % 4 {
		case 0:
			rho = r.Float64() * 0.1
		case 1:
			rho = 0.9 + 0.0999*r.Float64()
		default:
			rho = r.Float64()
		}
		out = append(out, [2]float64{rho * float64(n), float64(n)})
	}
	return out
}

func TestErlangCMatchesSumForm(t *testing.T) {
	for i, c := range cases(1, 1500) {
		a, n := c[0], int(c[1])
		got, want := ErlangC(a, n), erlangCSum(a, n)
		if !closeTo(got, want, 1e-9) {
			t.Fatalf("step %d: ErlangC(%v, %d) = %v, want %v (sum form)", i, a, n, got, want)
		}
	}
}

func TestErlangBMatchesRecursionAndSumForm(t *testing.T) {
	for i, c := range cases(2, 1500) {
		a, n := c[0], int(c[1])
		got := ErlangB(a, n)
		if ref := ErlangBRecursion(a, n); !closeTo(got, ref, 1e-12) {
			t.Fatalf("step %d: ErlangB(%v, %d) = %v, recursion gives %v", i, a, n, got, ref)
		}
		if sum := erlangBSum(a, n); !closeTo(got, sum, 1e-11) {
			t.Fatalf("step %d: ErlangB(%v, %d) = %v, sum form gives %v", i, a, n, got, sum)
		}
	}
}

// Erlang B is also defined for overloaded systems (a ≥ n), where the
// recursion must agree with the sum form too.
func TestErlangBOverload(t *testing.T) {
	for i, tc := range []struct {
		a float64
		n int
	}{{10, 5}, {160, 160}, {1000, 640}, {3, 1}, {700.5, 700}} {
		got, want := ErlangB(tc.a, tc.n), erlangBSum(tc.a, tc.n)
		if !closeTo(got, want, 1e-11) {
			t.Errorf("step %d: ErlangB(%v, %d) = %v, want %v", i, tc.a, tc.n, got, want)
		}
	}
}

func TestKnownValues(t *testing.T) {
	// Textbook values: B(1, 1) = 1/2; B(2, 2) = 2/5; C(2, 3) = 4/9;
	// a call centre with 10 Erlangs on 12 agents waits with C ≈ 0.4493.
	for i, tc := range []struct {
		name string
		got  float64
		want float64
		tol  float64
	}{
		{"B(1,1)", ErlangB(1, 1), 0.5, 1e-15},
		{"B(2,2)", ErlangB(2, 2), 0.4, 1e-15},
		{"C(2,3)", ErlangC(2, 3), 4.0 / 9, 1e-15},
		{"C(10,12)", ErlangC(10, 12), 0.449, 0.001},
	} {
		if math.Abs(tc.got-tc.want) > tc.tol {
			t.Errorf("step %d: %s = %v, want %v", i, tc.name, tc.got, tc.want)
		}
	}
}

func TestEdgeCases(t *testing.T) {
	for i, tc := range []struct {
		name string
		got  float64
		want float64
	}{
		{"B with n = 0", ErlangB(5, 0), 1},
		{"B with a = 0", ErlangB(0, 4), 0},
		{"B with a = 0, n = 0", ErlangB(0, 0), 1},
		{"B with a = +Inf", ErlangB(math.Inf(1), 4), 1},
		{"C with n = 0", ErlangC(5, 0), 1},
		{"C with a = n", ErlangC(16, 16), 1},
		{"C with a > n", ErlangC(20, 16), 1},
		{"C with a = 0", ErlangC(0, 16), 0},
		{"B far from overflow threshold", ErlangB(1, 640), 0},
	} {
		if tc.got != tc.want {
			t.Errorf("step %d: %s = %v, want %v", i, tc.name, tc.got, tc.want)
		}
	}
	for i, got := range []float64{ErlangB(-1, 3), ErlangB(math.NaN(), 3), ErlangB(1, -1), ErlangC(-1, 3), ErlangC(math.NaN(), 3)} {
		if !math.IsNaN(got) {
			t.Errorf("step %d: invalid input gave %v, want NaN", i, got)
		}
	}
}

func TestMMN(t *testing.T) {
	// The on-call simulator's opening minute: 1125 req/s, 10 instances of 16
	// workers, about 74 ms per request.
	q := MMN{Lambda: 1125, S: 0.07425, N: 160}
	if got := q.Load(); math.Abs(got-83.53) > 0.01 {
		t.Errorf("Load() = %v, want 83.53", got)
	}
	if !q.Stable() {
		t.Fatal("Stable() = false at 52 % utilization")
	}
	c := q.ErlangC()
	if c > 1e-6 {
		t.Errorf("ErlangC() = %v, want a negligible wait probability", c)
	}
	if got := q.WaitExceeds(c, 2); got != 0 {
		t.Errorf("WaitExceeds(2 s) = %v, want 0 (e^−2074 underflows)", got)
	}
	// C below 1 %: the waiting term vanishes and p99 is the service quantile.
	if got, want := q.P99(c), 0.07425*math.Log(100); math.Abs(got-want) > 1e-12 {
		t.Errorf("P99() = %v, want S·ln 100 = %v", got, want)
	}

	// A queue where many wait: the waiting quantile adds ln(C/0.01)/(N/S − λ).
	busy := MMN{Lambda: 150, S: 0.1, N: 16}
	c = busy.ErlangC()
	want := 0.1*math.Log(100) + math.Log(c/0.01)/(16/0.1-150)
	if got := busy.P99(c); math.Abs(got-want) > 1e-12 || c < 0.01 {
		t.Errorf("P99() = %v with C = %v, want %v", got, c, want)
	}
	if got, want := busy.WaitExceeds(c, 0.1), c*math.Exp(-10*0.1); math.Abs(got-want) > 1e-15 {
		t.Errorf("WaitExceeds(0.1) = %v, want %v", got, want)
	}

	for i, q := range []MMN{{Lambda: 200, S: 0.1, N: 16}, {Lambda: 160, S: 0.1, N: 16}, {Lambda: 10, S: 0.1, N: 0}} {
		c := q.ErlangC()
		if q.Stable() || c != 1 || q.WaitExceeds(c, 2) != 1 || !math.IsInf(q.P99(c), 1) || q.Utilization() != 1 {
			t.Errorf("step %d: unstable %+v: Stable %v, C %v, P(W>2) %v, p99 %v, util %v",
				i, q, q.Stable(), c, q.WaitExceeds(c, 2), q.P99(c), q.Utilization())
		}
	}
	if got := (MMN{}).Utilization(); got != 0 {
		t.Errorf("idle queue with no server: Utilization() = %v, want 0", got)
	}
}

// TestWaitTailMatchesSimulation checks P(W > t) against an exact
// event-driven simulation of an M/M/N FIFO queue (seeded, so deterministic).
func TestWaitTailMatchesSimulation(t *testing.T) {
	q := MMN{Lambda: 14, S: 1, N: 16}
	r := rng.New(11)
	free := make([]float64, q.N) // time each server becomes free
	now := 0.0
	const n = 300000
	over := 0
	const limit = 0.3
	for i := 0; i < n; i++ {
		now += r.Exp(1 / q.Lambda)
		// FIFO with identical servers: the arrival takes the server free
		// the soonest.
		j := 0
		for k := range free {
			if free[k] < free[j] {
				j = k
			}
		}
		start := math.Max(now, free[j])
		if start-now > limit {
			over++
		}
		free[j] = start + r.Exp(q.S)
	}
	got := float64(over) / n
	want := q.WaitExceeds(q.ErlangC(), limit)
	if math.Abs(got-want) > 0.02 {
		t.Errorf("simulated P(W > %v) = %.4f, formula %.4f", limit, got, want)
	}
}

var sink float64

func BenchmarkErlangC640(b *testing.B) {
	for b.Loop() {
		sink = ErlangC(400, 640)
	}
}

func BenchmarkErlangBRecursion640(b *testing.B) {
	for b.Loop() {
		sink = ErlangBRecursion(400, 640)
	}
}

// TestResponseExceedsInvertsQuantile: for queues from idle to nearly
// saturated, the share of responses above Quantile(c, p) is 1 − p — the
// fast closed form checked against the quantile it inverts — and the
// tail falls as t grows.
func TestResponseExceedsInvertsQuantile(t *testing.T) {
	step := 0
	for _, q := range []MMN{
		{Lambda: 0, S: 0.07, N: 160},
		{Lambda: 1125, S: 0.074, N: 160},
		{Lambda: 2000, S: 0.074, N: 160},
		{Lambda: 150, S: 0.1, N: 16},
		{Lambda: 159, S: 0.1, N: 16},
		{Lambda: 4, S: 0.2, N: 1},
	} {
		c := q.ErlangC()
		for _, p := range []float64{0.01, 0.1, 0.5, 0.9, 0.99, 0.999, 0.99999} {
			step++
			tq := q.Quantile(c, p)
			if got := q.ResponseExceeds(c, tq); math.Abs(got-(1-p))/(1-p) > 1e-9 {
				t.Errorf("step %d: %+v, C %.4g: ResponseExceeds(Quantile(%v) = %v) = %v, want %v", step, q, c, p, tq, got, 1-p)
			}
		}
		prev := 1.0
		for x := 0.0; x < 3; x += 0.01 {
			got := q.ResponseExceeds(c, x)
			if got > prev || got < 0 {
				t.Errorf("%+v: ResponseExceeds(%v) = %v after %v: want a falling tail in [0, 1]", q, x, got, prev)
				break
			}
			prev = got
		}
	}
	unstable := MMN{Lambda: 300, S: 0.1, N: 16}
	if got := unstable.ResponseExceeds(unstable.ErlangC(), 5); got != 1 {
		t.Errorf("unstable queue: ResponseExceeds = %v, want 1", got)
	}
}
