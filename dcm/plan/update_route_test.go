package plan

import (
	"slices"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

// TestSimulateUpdateRoute: a changed annotation previews as what the change
// itself then does: a setting map's or an allowlist's replace at runtime, or
// the named reload where HAProxy 2.6 cannot change it.
func TestSimulateUpdateRoute(t *testing.T) {
	pooled := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 2}
	passthrough := func(r *dcm.Route) { r.Kind = dcm.KindPassthrough; r.Path = "/" }
	tests := []struct {
		name       string
		kind       func(*dcm.Route)
		change     func(*dcm.Route)
		wantOps    []dcm.OpKind
		wantMap    dcm.MapTable // the map replaced, when one is
		wantReason dcm.ReloadReason
	}{
		{name: "a route timeout", change: func(r *dcm.Route) { r.HTTP.TimeoutMillis = 2000 },
			wantOps: []dcm.OpKind{dcm.OpMapReplace}},
		{name: "a forwarded-headers policy", change: func(r *dcm.Route) { r.HTTP.Forwarded = dcm.ForwardNever },
			wantOps: []dcm.OpKind{dcm.OpMapReplace}},
		{name: "an allowlist", change: func(r *dcm.Route) { r.Allowlist = []string{"10.0.0.0/8"} },
			wantOps: []dcm.OpKind{dcm.OpMapReplace}, wantMap: dcm.MapAllowlist},
		{name: "rate limits", change: func(r *dcm.Route) { r.RateLimit = &dcm.RateLimit{RateHTTP: 10} },
			wantOps: []dcm.OpKind{dcm.OpMapReplace}, wantMap: dcm.MapRateLimit},
		{name: "a passthrough timeout", kind: passthrough, change: func(r *dcm.Route) { r.HTTP.TimeoutMillis = 2000 },
			wantReason: dcm.ReasonPassthroughTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := withService(webApp(2))
			if tt.kind != nil {
				tt.kind(&d.Backends[0].Route)
				d.Backends[0].Name = d.Backends[0].Route.BackendName()
			}
			r := d.Backends[0].Route
			tt.change(&r)
			sim := Simulate(snapshotOf(d, pooled), []dcm.WhatIf{{Kind: dcm.WhatIfUpdateRoute, Route: &r}}, dcm.HAProxy26MemoryCosts())
			if len(sim.Errors) > 0 {
				t.Fatalf("preview refused: %v", sim.Errors)
			}
			var kinds []dcm.OpKind
			var reasons []dcm.ReloadReason
			for _, st := range sim.Steps {
				for _, o := range st.Ops {
					kinds = append(kinds, o.Kind)
					if tt.wantMap != "" && o.Map != tt.wantMap {
						t.Errorf("replaces map %q, want %q", o.Map, tt.wantMap)
					}
				}
				reasons = append(reasons, st.Reasons...)
			}
			if tt.wantReason != "" {
				if sim.Reloads != 1 || !slices.Contains(reasons, tt.wantReason) {
					t.Fatalf("reloads %d for %v, want one for %s", sim.Reloads, reasons, tt.wantReason)
				}
				return
			}
			if sim.Reloads != 0 || !slices.Equal(kinds, tt.wantOps) {
				t.Fatalf("ops %v and %d reloads (%v), want %v and none", kinds, sim.Reloads, reasons, tt.wantOps)
			}
		})
	}
}

// TestSimulateUpdateRouteRefused: the preview names what it cannot show.
func TestSimulateUpdateRouteRefused(t *testing.T) {
	d := withService(webApp(1))
	other := d.Backends[0].Route
	other.Name = "elsewhere"
	edge := d.Backends[0].Route
	edge.Kind = dcm.KindEdge
	for name, w := range map[string]dcm.WhatIf{
		"no route":      {Kind: dcm.WhatIfUpdateRoute},
		"no such route": {Kind: dcm.WhatIfUpdateRoute, Route: &other},
		"a new kind":    {Kind: dcm.WhatIfUpdateRoute, Route: &edge},
	} {
		sim := Simulate(snapshotOf(d, dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 2}), []dcm.WhatIf{w}, dcm.HAProxy26MemoryCosts())
		if len(sim.Errors) == 0 {
			t.Errorf("%s: previewed, want refused", name)
		}
	}
}
