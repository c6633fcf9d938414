package region

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/afloat/afloat/quota"
)

// TestWait: in virtual time (synctest), Wait admits a request when its
// tokens come under the lease — not sooner, not later — gives up at once
// when ctx's deadline falls before them or when waiting cannot help, ends
// with ctx, and waits through a time without a lease for the lease that
// comes.
func TestWait(t *testing.T) {
	const rate, burst = 10, 5 // a token every 100 ms; a new lease starts empty
	t.Run("admitted when the tokens come", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := newLimiter(t)
			grantAt(t, l, l.Now(), l.Now(), rate, burst, nil)
			start := time.Now()
			d, err := l.Wait(context.Background(), "acme", 3)
			if err != nil || !d.Allowed || d.LeaseID == 0 {
				t.Fatalf("Wait = %+v, %v; want admitted under the lease", d, err)
			}
			if got := time.Since(start); got != 300*time.Millisecond {
				t.Errorf("admitted after %v, want 300ms: 3 tokens at 10 a second", got)
			}
		})
	})
	t.Run("a deadline before the tokens", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := newLimiter(t)
			grantAt(t, l, l.Now(), l.Now(), rate, burst, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
			defer cancel()
			start := time.Now()
			d, err := l.Wait(ctx, "acme", 3)
			if !errors.Is(err, context.DeadlineExceeded) || d.Allowed || !d.RetryKnown {
				t.Fatalf("Wait = %+v, %v; want a promised refusal and context.DeadlineExceeded", d, err)
			}
			if got := time.Since(start); got != 0 {
				t.Errorf("gave up after %v, want at once: the tokens come after the deadline", got)
			}
		})
	})
	t.Run("cancelled while waiting", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := newLimiter(t)
			grantAt(t, l, l.Now(), l.Now(), rate, burst, nil)
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(200*time.Millisecond, cancel)
			start := time.Now()
			_, err := l.Wait(ctx, "acme", 5)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Wait: %v, want context.Canceled", err)
			}
			if got := time.Since(start); got != 200*time.Millisecond {
				t.Errorf("returned after %v, want 200ms, when ctx ended", got)
			}
		})
	})
	t.Run("waiting cannot help", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := newLimiter(t)
			grantAt(t, l, l.Now(), l.Now(), rate, burst, func(g *quota.Grant) { g.Ceiling = quota.Tokens(burst) })
			start := time.Now()
			if _, err := l.Wait(context.Background(), "acme", burst+1); !errors.Is(err, ErrTooLarge) {
				t.Errorf("Wait of more than the ceiling: %v, want ErrTooLarge", err)
			}
			if _, err := l.Wait(context.Background(), "mallory", 1); !errors.Is(err, quota.ErrUnknownTenant) {
				t.Errorf("Wait for a tenant not served: %v, want quota.ErrUnknownTenant", err)
			}
			if got := time.Since(start); got != 0 {
				t.Errorf("failed after %v, want at once", got)
			}
		})
	})
	t.Run("no lease yet", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := newLimiter(t)
			time.AfterFunc(700*time.Millisecond, func() { grantAt(t, l, l.Now(), l.Now(), rate, burst, nil) })
			start := time.Now()
			d, err := l.Wait(context.Background(), "acme", 1)
			if err != nil || !d.Allowed || d.LeaseID == 0 {
				t.Fatalf("Wait = %+v, %v; want admitted under the lease that came", d, err)
			}
			// The lease comes at 700 ms, empty; its first token 100 ms
			// later. Without a lease a try waits the retry policy, so the
			// admission comes at the first try after 800 ms, within a
			// Retry of it.
			if got := time.Since(start); got < 800*time.Millisecond || got > 800*time.Millisecond+l.cfg.Retry {
				t.Errorf("admitted after %v, want 800ms to 800ms + Retry (%v)", got, l.cfg.Retry)
			}
		})
	})
}
