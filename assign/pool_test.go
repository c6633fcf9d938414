package assign

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/afloat/afloat/assign/assigntest"
	"github.com/afloat/afloat/internal/redisurl"
)

// newClient starts a redis-server of the test's own and connects to it.
func newClient(t testing.TB, extra ...string) (*assigntest.Server, rueidis.Client) {
	t.Helper()
	srv := assigntest.Start(t, extra...)
	c, err := redisurl.Dial(srv.URL, ErrInvalid)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return srv, c
}

// wrap is FromRueidis for a test's own client.
func wrap(t testing.TB, c rueidis.Client) *Client {
	t.Helper()
	cc, err := FromRueidis(c)
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

// newPool opens a pool on c, a client the test may also send its own
// commands on.
func newPool(t testing.TB, c rueidis.Client, name string, opts ...Option) *Pool {
	t.Helper()
	p, err := New(wrap(t, c), name, opts...)
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
	ms, err := p.list(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := "[{a 3 false 0} {b 2 false 0} {c 2 false 0}]"; brief(ms) != want {
		t.Errorf("list %v, want %s", ms, want)
	}
}

// The batch script refuses a count it was not made for rather than loop on
// nil or hold the server: the client never sends one, but the script can
// be called by anyone who has its SHA.
func TestPickManyRefusesBadCounts(t *testing.T) {
	_, c := newClient(t)
	ctx := ctxFor(t)
	p := newPool(t, c, "many")
	if _, err := p.Add(ctx, 0, "a"); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"0", "257", "1.5", "x", "-1"} {
		err := p.r.c.eval(ctx, &call{s: p.s.PickMany, keys: p.keys, args: []string{n}, src: true}).Error()
		if err == nil || !strings.Contains(err.Error(), "want 1 to 256 picks") {
			t.Errorf("pick_many with %q picks: %v, want the range", n, err)
		}
	}
	if ms, err := p.list(ctx); err != nil || ms[0].Count != 0 {
		t.Errorf("after refused calls: %v %v, want the count untouched", ms, err)
	}
}

// brief prints members as {name count active failures}, the fields every
// pool and lease list has.
func brief(ms []Member) string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = fmt.Sprintf("{%s %d %v %d}", m.Name, m.Count, m.Active, m.Failures)
	}
	return "[" + strings.Join(out, " ") + "]"
}

// list is the pool's members as Status reads them.
func (p *Pool) list(ctx context.Context) ([]Member, error) {
	st, err := p.Status(ctx)
	return st.Members, err
}

// owner is the pool's creator as Status reads it ("" for none, or no pool).
func (p *Pool) owner(ctx context.Context) (string, error) {
	st, err := p.Status(ctx)
	if errors.Is(err, ErrUnknownPool) {
		return "", nil
	}
	return st.Owner, err
}
