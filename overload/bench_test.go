package overload

import "testing"

// BenchmarkWorldCup is a whole World Cup run, the lab's costliest. With no
// limit the most tries wait for their deadline at once, so the cost of the
// run's heaps shows; with the seed's winning bulkhead, the bulkhead's and
// the virtual clock's does.
func BenchmarkWorldCup(b *testing.B) {
	for _, c := range []Config{
		{Profile: "worldcup", Seed: 1},
		{Profile: "worldcup", Seed: 1, Inside: 100, Outside: 100},
	} {
		b.Run(c.Label(), func(b *testing.B) {
			for b.Loop() {
				if _, err := Run(c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
