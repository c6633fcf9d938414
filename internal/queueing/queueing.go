package queueing

import "math"

// ErlangB returns the Erlang B blocking probability B(a, n): the share of
// arrivals an n-server loss system turns away at an offered load of a
// Erlangs.
//
// It runs the stable recursion B_0 = 1, B_k = a·B_{k−1}/(k + a·B_{k−1}) in
// its reciprocal form 1/B_k = 1 + (k/a)·1/B_{k−1}, four steps at a time.
// The reciprocal form has no division in the loop and the grouping takes
// the next four terms off the critical path, which makes it about four times
// faster for the 640 servers of a full fleet; every term stays positive, so
// it is as stable as the textbook form (erlang_test.go checks both against
// each other and against the sum form in big floats). When 1/B overflows,
// B is below 1e−308 and the result is 0.
//
// n = 0 gives 1 (no server: everything is blocked); a = 0 with n ≥ 1 gives
// 0. A negative or NaN load, or a negative n, gives NaN.
func ErlangB(a float64, n int) float64 {
	switch {
	case !(a >= 0) || n < 0:
		return math.NaN()
	case n == 0:
		return 1
	case a == 0:
		return 0
	case math.IsInf(a, 1):
		return 1
	}
	ia := 1 / a
	inv := 1.0 // 1/B_0
	k := 1
	for ; k+3 <= n; k += 4 {
		c1 := float64(k) * ia
		c2 := float64(k+1) * ia
		c3 := float64(k+2) * ia
		c4 := float64(k+3) * ia
		// 1/B_{k+3} = 1 + c4(1 + c3(1 + c2(1 + c1·inv))), expanded so that only
		// one multiply-add depends on the previous group.
		p43 := c4 * c3
		p432 := p43 * c2
		constant := 1 + c4 + p43 + p432
		inv = constant + p432*c1*inv
	}
	for ; k <= n; k++ {
		inv = 1 + float64(k)*ia*inv
	}
	return 1 / inv
}

// ErlangBRecursion is ErlangB computed literally as the textbook recursion
// B_k = a·B_{k−1}/(k + a·B_{k−1}). It is slower and kept as the reference
// the fast form is tested against.
func ErlangBRecursion(a float64, n int) float64 {
	if !(a >= 0) || n < 0 {
		return math.NaN()
	}
	b := 1.0
	for k := 1; k <= n; k++ {
		b = a * b / (float64(k) + a*b)
	}
	return b
}

// ErlangC returns the Erlang C probability C(a, n) that an arrival to an
// M/M/n queue with offered load a Erlangs has to wait:
// C = B/(1 − (a/n)(1 − B)) with B = ErlangB(a, n).
//
// An unstable queue (a ≥ n, which includes n = 0) makes everyone wait: 1.
func ErlangC(a float64, n int) float64 {
	if !(a >= 0) || n < 0 {
		return math.NaN()
	}
	if a >= float64(n) {
		return 1
	}
	b := ErlangB(a, n)
	return b / (1 - a/float64(n)*(1-b))
}

// MMN is an M/M/N queue: Poisson arrivals at Lambda per second, exponential
// service times with mean S seconds, N identical servers. The zero value is
// an empty queue with no server.
type MMN struct {
	Lambda float64 // arrival rate, per second
	S      float64 // mean service time, seconds
	N      int     // servers
}

// Load returns the offered load a = λ·S in Erlangs; by Little's law it is
// also the mean number of busy servers while the queue is stable.
func (q MMN) Load() float64 { return q.Lambda * q.S }

// Stable reports whether the queue has a steady state: a < N.
func (q MMN) Stable() bool { return q.Load() < float64(q.N) }

// Utilization returns a/N, capped at 1 (a saturated fleet cannot be busier
// than all its servers). With no server it is 1 under any load, 0 without.
func (q MMN) Utilization() float64 {
	if q.N == 0 {
		if q.Load() > 0 {
			return 1
		}
		return 0
	}
	return math.Min(1, q.Load()/float64(q.N))
}

// ErlangC returns the probability that an arrival waits.
func (q MMN) ErlangC() float64 { return ErlangC(q.Load(), q.N) }

// drain is N/S − λ, the rate at which the waiting time's tail decays.
func (q MMN) drain() float64 { return float64(q.N)/q.S - q.Lambda }

// WaitExceeds returns P(W > t) = C·e^(−(N/S − λ)·t) for a wait W in the
// queue, given c = ErlangC(). An unstable queue waits for ever: 1.
func (q MMN) WaitExceeds(c, t float64) float64 {
	if !q.Stable() {
		return 1
	}
	return c * math.Exp(-q.drain()*t)
}

// Quantile returns the approximate p-quantile of the response time
// (waiting plus service), given c = ErlangC():
//
//	S·ln(1/(1−p)) + max(0, ln(C/(1−p)))/(N/S − λ)
//
// It adds the service-time quantile (exponential) to the waiting-time
// quantile, which is not the exact quantile of the sum: it can be a little
// high or low. When C < 1−p fewer than 1−p of the requests wait at all and
// the waiting term is 0. An unstable queue gives +Inf.
func (q MMN) Quantile(c, p float64) float64 {
	if !q.Stable() {
		return math.Inf(1)
	}
	tail := 1 - p
	return q.S*math.Log(1/tail) + math.Max(0, math.Log(c/tail))/q.drain()
}

// P99 is Quantile(c, 0.99): S·ln 100 + max(0, ln(C/0.01))/(N/S − λ).
func (q MMN) P99(c float64) float64 { return q.Quantile(c, 0.99) }

// ResponseExceeds returns the share of responses longer than t seconds
// under the approximation Quantile makes, given c = ErlangC(): it is
// Quantile's inverse, 1 − p for the p whose Quantile is t, so that a
// histogram built from it (the drill's latency histogram) gives back the
// model's p99. In closed form, with k = S + 1/(N/S − λ):
//
//	e^(−t/S)                          while that is at least C (only the service term),
//	C·e^(−(t + S·ln C)/k)             beyond (the waiting term too).
//
// An unstable queue gives 1 for every t (no response ever comes); t ≤ 0
// gives 1.
func (q MMN) ResponseExceeds(c, t float64) float64 {
	if !q.Stable() || t <= 0 {
		return 1
	}
	if tail := math.Exp(-t / q.S); tail >= c {
		return tail
	}
	// Past t0 = −S·ln C the waiting term adds max(0, ln(C/u))/(N/S − λ):
	// the tail decays from C at t0 with time constant S + 1/(N/S − λ).
	t0 := -q.S * math.Log(c)
	return c * math.Exp(-(t-t0)/(q.S+1/q.drain()))
}
