package engine

import (
	"fmt"
	"slices"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

// TestDigestIsOfContent: replicas build their desired states apart, so
// equal content must digest equal whatever the pointers, and any change
// of a backend must change the digest.
func TestDigestIsOfContent(t *testing.T) {
	var g, other digests
	d := g.of(web(), true)
	if again := other.of(web(), true); again != d {
		t.Errorf("equal states built apart digest %s and %s", d, again)
	}
	for name, changed := range map[string]dcm.Desired{
		"a weight": web(weightOfA(3)), "a pod gone": web(withoutB), "a route more": web(withAPI),
		"a route gone": web(withoutShop), "a pod draining": web(bDrains),
	} {
		if g.of(changed, false) == d {
			t.Errorf("%s: the digest did not change", name)
		}
	}
	// Asked for states other than the one kept, the cache keeps only that
	// one's backends.
	if n := len(g.byBackend); n != len(web().Backends) {
		t.Errorf("the cache holds %d backends, want the %d of the state kept", n, len(web().Backends))
	}
}

// TestStatusFollowsWhatIsApplied: Applied is the digest of the desired
// state HAProxy serves, and Pending says the source holds a change not
// applied yet.
func TestStatusFollowsWhatIsApplied(t *testing.T) {
	h := newHarness(t, Config{Caps: pooled, ObserveEvery: never}, web())
	gate := make(chan struct{})
	h.start(true)
	h.waitReady()
	var first dcm.ReplicaStatus
	h.waitFor("a first state applied", func() bool { first = h.e.Status(); return first.Applied != "" })
	if first.Pending || first.HAProxy.PID != 100 || !first.Ready {
		t.Errorf("after the start: %+v, want nothing pending, worker 100, ready", first)
	}

	h.d.mu.Lock()
	h.d.applyErr = func(int, []dcm.Op) error { h.d.block(gate); return nil }
	h.d.mu.Unlock()
	h.src.Set(web(withoutB))
	h.waitFor("the change to be applying", func() bool { return h.d.entered("apply") > 0 })
	if st := h.e.Status(); st.Applied != first.Applied || !st.Pending {
		t.Errorf("while HAProxy has not taken the change: %+v, want the first digest, pending", st)
	}
	close(gate)
	var next dcm.ReplicaStatus
	h.waitFor("the change applied", func() bool { next = h.e.Status(); return next.Applied != first.Applied })
	if next.Pending {
		t.Errorf("after the change: %+v, want nothing pending", next)
	}
	var other digests
	if want := other.of(web(withoutB), true); next.Applied != want {
		t.Errorf("applied %s, want the digest of the state applied, %s", next.Applied, want)
	}
}

// BenchmarkStatusDigest10000: the fleet view's Status at 10,000 backends,
// of a state already digested (the common case: nothing changed since the
// last second), and after one backend changed.
func BenchmarkStatusDigest10000(b *testing.B) {
	routes := map[string][]dcm.Endpoint{}
	for i := range 10000 {
		routes[fmt.Sprintf("app-%05d", i)] = []dcm.Endpoint{testEndpoint(fmt.Sprintf("app-%05d-a", i), "127.0.0.1", dcm.StateReady)}
	}
	d := desiredOf(routes)
	var g digests
	g.of(d, true)
	b.Run("unchanged", func(b *testing.B) {
		for b.Loop() {
			g.of(d, true)
		}
	})
	// A new state each time, as the source makes one (states are never
	// changed once handed out): its slice copied, one backend replaced.
	b.Run("one-changed", func(b *testing.B) {
		cur := d
		for i := 0; b.Loop(); i++ {
			next := cur
			next.Backends = slices.Clone(cur.Backends)
			nb := *next.Backends[i%len(next.Backends)]
			next.Backends[i%len(next.Backends)] = &nb
			g.of(next, true)
			cur = next
		}
	})
}
