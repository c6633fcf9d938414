package assign

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// model is the pool as a Go map: the reference the property test holds the
// Lua scripts to (etcd raft's quorum/quick_test.go does the same for its
// committed index).
type model struct {
	exists  bool
	active  map[string]int64
	removed map[string]int64
	reqs    map[string]string
}

func newModel() *model {
	return &model{active: map[string]int64{}, removed: map[string]int64{}, reqs: map[string]string{}}
}

// pick: the lowest count, ties to the lowest name in byte order.
func (m *model) pick(id string) (string, error) {
	if id != "" {
		if got, ok := m.reqs[id]; ok {
			return got, nil
		}
	}
	if len(m.active) == 0 {
		if !m.exists {
			return "", ErrUnknownPool
		}
		return "", ErrPoolEmpty
	}
	best := ""
	for name, c := range m.active {
		if best == "" || c < m.active[best] || c == m.active[best] && name < best {
			best = name
		}
	}
	m.active[best]++
	if id != "" {
		m.reqs[id] = best
	}
	return best, nil
}

func (m *model) min() (int64, bool) {
	if len(m.active) == 0 {
		return 0, false
	}
	lo := int64(1 << 62)
	for _, c := range m.active {
		lo = min(lo, c)
	}
	return lo, true
}

func (m *model) add(count int64, atMin bool, names []string) AddResult {
	if atMin {
		if lo, ok := m.min(); ok {
			count = lo
		} else {
			count = 0
		}
	}
	var r AddResult
	for _, n := range names {
		switch _, act := m.active[n]; {
		case m.removed[n] != 0 || hasKey(m.removed, n):
			r.Removed++
		case act:
			r.Active++
		default:
			m.active[n] = count
			r.Added++
		}
	}
	if len(m.active) > 0 {
		m.exists = true
	}
	return r
}

func hasKey(m map[string]int64, k string) bool { _, ok := m[k]; return ok }

func (m *model) remove(names []string) error {
	if len(m.active) == 0 && len(m.removed) == 0 {
		return ErrUnknownPool
	}
	for _, n := range names {
		if !hasKey(m.active, n) {
			return ErrUnknownMember
		}
	}
	for _, n := range names {
		m.removed[n] = m.active[n]
		delete(m.active, n)
	}
	return nil
}

func (m *model) restore(p RestorePolicy, names []string) error {
	if len(m.active) == 0 && len(m.removed) == 0 {
		return ErrUnknownPool
	}
	for _, n := range names {
		if !hasKey(m.removed, n) {
			return ErrUnknownMember
		}
	}
	lo, ok := m.min()
	for _, n := range names {
		c := m.removed[n]
		switch {
		case p == RestoreZero:
			c = 0
		case p == RestoreCurrentMinimum && ok:
			c = lo
		}
		m.active[n] = c
		delete(m.removed, n)
	}
	return nil
}

func (m *model) list() []Member {
	var out []Member
	for n, c := range m.active {
		out = append(out, Member{Name: n, Count: c, Active: true})
	}
	slices.SortFunc(out, func(a, b Member) int { return cmp.Or(cmp.Compare(a.Count, b.Count), cmp.Compare(a.Name, b.Name)) })
	var rem []Member
	for n, c := range m.removed {
		rem = append(rem, Member{Name: n, Count: c})
	}
	slices.SortFunc(rem, func(a, b Member) int { return cmp.Compare(a.Name, b.Name) })
	return append(out, rem...)
}

// sameErr: both nil, or both the same sentinel.
func sameErr(got, want error) bool {
	if want == nil || got == nil {
		return got == want
	}
	return errors.Is(got, want)
}

// TestPickMatchesModel runs random sequences of add, remove, restore
// (every policy), pick, pick-with-id and batched picks (of one script and
// of several: sizes around PickChunk) against Redis and the model, and
// compares every answer and the whole pool after each step.
func TestPickMatchesModel(t *testing.T) {
	_, c := newClient(t)
	ctx := ctxFor(t)
	names := []string{"a", "b", "c", "d", "e", "ab", "B", "z9"} // "B" < "a" in byte order
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 7))
		p := newPool(t, c, fmt.Sprintf("model-%d", seed))
		m := newModel()
		sub := func() []string {
			k := 1 + rng.IntN(3)
			out := slices.Clone(names)
			rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
			return out[:k]
		}
		for step := range 150 {
			var what string
			switch op := rng.IntN(10); {
			case op < 2:
				ns, count, atMin := sub(), rng.Int64N(5), rng.IntN(2) == 0
				what = fmt.Sprintf("add(%v, %d, atMin=%v)", ns, count, atMin)
				var got AddResult
				var err error
				if atMin {
					got, err = p.AddAtMinimum(ctx, ns...)
				} else {
					got, err = p.Add(ctx, count, ns...)
				}
				if want := m.add(count, atMin, ns); err != nil || got != want {
					t.Fatalf("seed %d step %d: %s = %+v %v, want %+v", seed, step, what, got, err, want)
				}
			case op < 3:
				ns := sub()
				what = fmt.Sprintf("remove(%v)", ns)
				if err, want := p.Remove(ctx, ns...), m.remove(ns); !sameErr(err, want) {
					t.Fatalf("seed %d step %d: %s = %v, want %v", seed, step, what, err, want)
				}
			case op < 4:
				ns, pol := sub(), RestorePolicy(rng.IntN(3))
				what = fmt.Sprintf("restore(%v, %v)", ns, pol)
				if err, want := p.Restore(ctx, pol, ns...), m.restore(pol, ns); !sameErr(err, want) {
					t.Fatalf("seed %d step %d: %s = %v, want %v", seed, step, what, err, want)
				}
			case op < 5:
				n := []int{1, 2, 3, 7, PickChunk - 1, PickChunk, PickChunk + 1, 2*PickChunk + 5}[rng.IntN(8)]
				what = fmt.Sprintf("pickBatch(%d)", n)
				res, err := p.PickBatch(ctx, n)
				if err != nil || len(res) != n {
					t.Fatalf("seed %d step %d: %s = %d results, %v", seed, step, what, len(res), err)
				}
				for i, r := range res {
					want, werr := m.pick("")
					if r.Member != want || !sameErr(r.Err, werr) {
						t.Fatalf("seed %d step %d: %s, pick %d = %q %v, want %q %v", seed, step, what, i, r.Member, r.Err, want, werr)
					}
				}
			default:
				id := ""
				if rng.IntN(3) == 0 {
					id = fmt.Sprintf("req-%d", rng.IntN(6))
				}
				what = fmt.Sprintf("pick(%q)", id)
				var got string
				var err error
				if id == "" {
					got, err = p.Pick(ctx)
				} else {
					got, err = p.PickID(ctx, id)
				}
				want, werr := m.pick(id)
				if got != want || !sameErr(err, werr) {
					t.Fatalf("seed %d step %d: %s = %q %v, want %q %v", seed, step, what, got, err, want, werr)
				}
			}
			got, err := p.List(ctx)
			if !m.exists && len(m.active) == 0 && len(m.removed) == 0 {
				if !errors.Is(err, ErrUnknownPool) {
					t.Fatalf("seed %d step %d: after %s, list of a pool never created: %v", seed, step, what, err)
				}
				continue
			}
			if want := m.list(); err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("seed %d step %d: after %s the pool is\n %v %v\nthe model\n %v", seed, step, what, got, err, want)
			}
		}
	}
}
