package assign

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/afloat/afloat/assign/assigntest"
	"github.com/redis/rueidis"
)

// newClient starts a redis-server of the test's own and connects to it.
func newClient(t testing.TB, extra ...string) (*assigntest.Server, rueidis.Client) {
	t.Helper()
	srv := assigntest.Start(t, extra...)
	c, err := Dial(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return srv, c
}

func newPool(t testing.TB, c rueidis.Client, name string, opts ...Option) *Pool {
	t.Helper()
	p, err := New(c, name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func ctxFor(t testing.TB) context.Context { return assigntest.Context(t, time.Minute) }

func TestPickOrderTiesAndEmpty(t *testing.T) {
	_, c := newClient(t)
	ctx := ctxFor(t)
	p := newPool(t, c, "basics")

	if _, err := p.Pick(ctx); !errors.Is(err, ErrUnknownPool) {
		t.Fatalf("pick on a pool never created: %v, want ErrUnknownPool", err)
	}
	if r, err := p.Add(ctx, 0, "c", "a", "b"); err != nil || r.Added != 3 {
		t.Fatalf("add: %+v %v", r, err)
	}
	// Equal counts: the lowest name first, then round the pool.
	var got []string
	for range 7 {
		m, err := p.Pick(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m)
	}
	if want := "[a b c a b c a]"; fmt.Sprint(got) != want {
		t.Errorf("picks %v, want %s", got, want)
	}
	if err := p.Remove(ctx, "a", "b", "c"); err != nil {
		t.Fatal(err)
	}
	if m, err := p.Pick(ctx); !errors.Is(err, ErrPoolEmpty) || m != "" {
		t.Fatalf("pick on an emptied pool: %q %v, want ErrPoolEmpty", m, err)
	}
	res, err := p.PickBatch(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if !errors.Is(r.Err, ErrPoolEmpty) {
			t.Errorf("batch pick %d on an emptied pool: %v, want ErrPoolEmpty", i, r.Err)
		}
	}
	ms, err := p.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := "[{a 3 false 0} {b 2 false 0} {c 2 false 0}]"; fmt.Sprint(ms) != want {
		t.Errorf("list %v, want %s", ms, want)
	}
}
