package plan

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

// TestTotalsSince: the totals counted again only where backends changed
// are the totals counted whole, in every mode: after a plan to a random
// desired state (most backends other pointers), after one backend's
// endpoints changed (the others shared, as in a preview), and for lists
// out of order, which are counted whole. The planner's states are in
// order: ordered holds for every state planned.
func TestTotalsSince(t *testing.T) {
	costs := dcm.HAProxy26MemoryCosts()
	for _, caps := range modes() {
		t.Run(fmt.Sprintf("%s-slots%d-add%v-pool%d", caps.Mode, caps.Slots, caps.AddServer, caps.Pool), func(t *testing.T) {
			for seed := range 300 {
				g := gen{r: rand.New(rand.NewPCG(uint64(seed), 11))}
				from := g.history(caps)
				dFrom := DesiredOf(from)
				before := totals(from, dFrom, costs)
				check := func(what string, after dcm.State, dAfter dcm.Desired) {
					t.Helper()
					want := totals(after, dAfter, costs)
					in := ordered(from, dFrom) && ordered(after, dAfter)
					if got := totalsSince(before, from, dFrom, after, dAfter, costs, in); got != want {
						t.Errorf("seed %d, %s: %+v, counted whole %+v", seed, what, got, want)
					}
				}
				if !ordered(from, dFrom) {
					t.Fatalf("seed %d: the history's state is not in order of name", seed)
				}
				d := g.desired()
				next := Compute(from, d, caps).Next
				if !ordered(next, d) {
					t.Errorf("seed %d: a plan's next state is not in order of name", seed)
				}
				check("a plan to another desired state", next, d)
				if len(dFrom.Backends) > 0 {
					i := g.r.IntN(len(dFrom.Backends))
					one := dcm.Desired{Backends: slices.Clone(dFrom.Backends), DefaultCert: dFrom.DefaultCert}
					b := *one.Backends[i]
					if len(b.Endpoints) > 0 {
						b.Endpoints = b.Endpoints[1:]
					}
					one.Backends[i] = &b
					next := computeTouched(from, one, caps, []string{b.Name}).Next
					if !ordered(next, one) {
						t.Errorf("seed %d: the touched backend's plan is not in order of name", seed)
					}
					check("one backend's endpoints changed", next, one)
				}
				reversed := dcm.State{Backends: slices.Clone(from.Backends), Pool: from.Pool}
				slices.Reverse(reversed.Backends)
				check("backends out of order", reversed, dFrom)
			}
		})
	}
}
