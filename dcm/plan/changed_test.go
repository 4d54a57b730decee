package plan

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

// TestComputeChangedIsCompute: told which backends changed — those whose
// backend Compute replaces or names in an op, and any others besides —
// ComputeChanged gives Compute's plan (Waiting aside, which it counts for
// the changed backends only), in every mode, on the property generator's
// histories.
func TestComputeChangedIsCompute(t *testing.T) {
	for _, caps := range modes() {
		t.Run(fmt.Sprintf("%s-slots%d-add%v-pool%d", caps.Mode, caps.Slots, caps.AddServer, caps.Pool), func(t *testing.T) {
			skipped, retiringSkipped := 0, 0
			for seed := range 400 {
				g := gen{r: rand.New(rand.NewPCG(uint64(seed), 13))}
				actual, desired := g.calmHistory(caps)
				full := Compute(actual, desired, caps)
				changed := changedBy(actual, full)
				extra := rand.New(rand.NewPCG(uint64(seed), 14))
				for _, b := range desired.Backends {
					if extra.IntN(4) == 0 {
						changed[b.Name] = true // told more than changed: no harm
					}
				}
				for _, b := range desired.Backends {
					if !changed[b.Name] {
						skipped++
					}
				}
				for _, b := range actual.Backends {
					if _, ok := desired.Backend(b.Name); !ok && !changed[b.Name] {
						retiringSkipped++ // walked past by ComputeChanged too
					}
				}
				names := slices.Sorted(maps.Keys(changed))
				got := ComputeChanged(actual, desired, caps, names)
				full.Waiting, got.Waiting = 0, 0
				a, _ := json.Marshal(full)
				b, _ := json.Marshal(got)
				if string(a) != string(b) {
					t.Fatalf("seed %d: ComputeChanged differs from Compute\nfull    %s\nchanged %s", seed, a, b)
				}
			}
			// Other modes reload for most of the generator's changes:
			// there the equality holds trivially.
			if caps.Mode == dcm.ModeDynamic && caps.AddServer && skipped < 200 {
				t.Errorf("only %d backends were kept without a look; the test shows little", skipped)
			}
			t.Logf("kept without a look: %d backends, %d of them retiring", skipped+retiringSkipped, retiringSkipped)
		})
	}
}

// changedBy names the backends a plan changes: replaced in Next, gone
// from it, or named by an op.
func changedBy(actual dcm.State, p dcm.Plan) map[string]bool {
	out := map[string]bool{}
	for _, b := range p.Next.Backends {
		if a, ok := actual.Backend(b.Name); !ok || a != b {
			out[b.Name] = true
		}
	}
	for _, a := range actual.Backends {
		if _, ok := p.Next.Backend(a.Name); !ok {
			out[a.Name] = true
		}
	}
	for _, o := range p.Ops {
		out[o.Backend] = true
	}
	return out
}

// calmHistory is an actual state reached as the engine reaches it, and a
// desired state that differs from the one it was planned for in a few
// backends only, as one Kubernetes event makes it differ.
func (g gen) calmHistory(caps dcm.Caps) (dcm.State, dcm.Desired) {
	d := g.desired()
	st := Fresh(d, caps)
	for range 1 + g.r.IntN(3) {
		d = g.few(d)
		st = Compute(g.observe(st), d, caps).Next
	}
	return g.observe(st), g.few(d)
}

// few changes one or two backends of d: each becomes what a fresh draw
// says of it (another route, other endpoints, or gone).
func (g gen) few(d dcm.Desired) dcm.Desired {
	draw := g.desired()
	byName := map[string]*dcm.DesiredBackend{}
	for _, b := range d.Backends {
		byName[b.Name] = b
	}
	for range 1 + g.r.IntN(2) {
		if len(draw.Backends) == 0 {
			break
		}
		b := draw.Backends[g.r.IntN(len(draw.Backends))]
		old, had := byName[b.Name]
		switch n := g.r.IntN(10); {
		case had && n < 7:
			// Endpoints only, the commonest event: the route stays.
			nb := *old
			nb.Endpoints = b.Endpoints
			byName[b.Name] = &nb
		case n < 9:
			byName[b.Name] = b
		default:
			delete(byName, b.Name)
		}
	}
	out := dcm.Desired{DefaultCert: d.DefaultCert}
	for _, b := range byName {
		out.Backends = append(out.Backends, b)
	}
	dcm.SortDesired(out.Backends)
	return out
}
