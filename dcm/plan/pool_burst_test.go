package plan

import (
	"fmt"
	"testing"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/routing"
)

// httpRoutes are n plain HTTP routes named from first on, one endpoint each.
func httpRoutes(first, n int) []dcm.DesiredBackend {
	out := make([]dcm.DesiredBackend, 0, n)
	for i := first; i < first+n; i++ {
		r := route(fmt.Sprintf("r%05d", i))
		r.Check = false
		out = append(out, desiredBackend(r, ep(fmt.Sprintf("r%05d-1", i), fmt.Sprintf("127.1.%d.%d", i/250, i%250+1), dcm.StateReady)))
	}
	return out
}

// spares counts a pool's spares of one kind.
func spares(pool []string, kind dcm.RouteKind) int {
	n := 0
	for _, name := range pool {
		if k, ok := routing.SpareKind(name); ok && k == kind {
			n++
		}
	}
	return n
}

// TestPoolBurstAfterExhaustion: the reload of a kind that ran out renders
// it PoolBurst spares, or as many as it has routes when fewer, unless its
// tenth is more; the kinds that did not run out keep their share.
func TestPoolBurstAfterExhaustion(t *testing.T) {
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 10}
	for _, tc := range []struct {
		name        string
		routes, add int
		want        int // HTTP spares after the reload
	}{
		{"small: doubles", 20, 11, 31},
		{"1,000 routes: the burst", 1000, 101, PoolBurst},
		{"a tenth above the burst", 12000, 1201, 1320},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := idle(Fresh(desiredAll(httpRoutes(0, tc.routes)...), caps))
			p := Compute(st, desiredAll(httpRoutes(0, tc.routes+tc.add)...), caps)
			if !p.Reload || len(p.Reasons) != 1 || p.Reasons[0] != dcm.ReasonPoolExhausted {
				t.Fatalf("reload %v reasons %v, want pool-exhausted", p.Reload, p.Reasons)
			}
			if got := spares(p.Next.Pool, dcm.KindHTTP); got != tc.want {
				t.Errorf("HTTP spares %d, want %d", got, tc.want)
			}
			if got := spares(p.Next.Pool, dcm.KindPassthrough); got != caps.Pool {
				t.Errorf("passthrough spares %d, want its floor %d", got, caps.Pool)
			}
			// Any other reload renders the share again.
			if got := spares(Reload(desiredAll(httpRoutes(0, tc.routes+tc.add)...), caps, dcm.ReasonRouteChanged).Next.Pool, dcm.KindHTTP); got != max(caps.Pool, (tc.routes+tc.add)/PoolShare) {
				t.Errorf("after another reload: HTTP spares %d, want the share", got)
			}
		})
	}
}

// TestGrowthByAThousandReloadsOnce: a cluster of 1,000 routes that grows
// by 1,000, ten routes at a time, each step applied before the next,
// reloads once (issue 18's growth goal, which the scale bench measures
// against HAProxy).
func TestGrowthByAThousandReloadsOnce(t *testing.T) {
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 10}
	st := idle(Fresh(desiredAll(httpRoutes(0, 1000)...), caps))
	reloads := 0
	for n := 1010; n <= 2000; n += 10 {
		p := Compute(st, desiredAll(httpRoutes(0, n)...), caps)
		if p.Reload {
			reloads++
			p.Next = AfterReload(p.Next)
		}
		st = idle(p.Next)
	}
	if reloads != 1 {
		t.Errorf("growth by 1,000 routes reloaded %d times, want 1", reloads)
	}
}
