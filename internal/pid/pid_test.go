package pid_test

import (
	"runtime"
	"sync"
	"testing"

	"github.com/afloat/afloat/internal/pid"
)

// P stays within 0 … GOMAXPROCS−1 from many goroutines at once.
func TestPInRange(t *testing.T) {
	n := pid.N()
	if n != runtime.GOMAXPROCS(0) {
		t.Fatalf("N() = %d, GOMAXPROCS %d", n, runtime.GOMAXPROCS(0))
	}
	var wg sync.WaitGroup
	bad := make(chan int, 1)
	for range 4 * n {
		wg.Go(func() {
			for range 1000 {
				if p := pid.P(); p < 0 || p >= n {
					select {
					case bad <- p:
					default:
					}
					return
				}
			}
		})
	}
	wg.Wait()
	select {
	case p := <-bad:
		t.Fatalf("P() = %d, want 0 to %d", p, n-1)
	default:
	}
}

// With GOMAXPROCS(1) there is only P 0.
func TestOneP(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	if p := pid.P(); p != 0 {
		t.Fatalf("P() = %d with one P", p)
	}
}

func BenchmarkP(b *testing.B) {
	for b.Loop() {
		pid.P()
	}
}
