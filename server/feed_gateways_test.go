package server

import (
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

// TestFeedFilterGateways: a namespace's feed gets its own Gateways and
// HTTPRoutes only, a backend's feed none, and gateways events follow suit.
func TestFeedFilterGateways(t *testing.T) {
	g := &dcm.GatewayAPI{
		Gateways:   []dcm.GatewayView{{Namespace: "infra", Name: "gw"}, {Namespace: "demo", Name: "gw"}},
		HTTPRoutes: []dcm.HTTPRouteView{{Namespace: "demo", Name: "web"}, {Namespace: "other", Name: "x"}},
	}
	tests := []struct {
		name           string
		f              feedFilter
		gateways, http int
		none           bool
	}{
		{"all", feedFilter{}, 2, 2, false},
		{"namespace demo", feedFilter{namespace: "demo"}, 1, 1, false},
		{"namespace other", feedFilter{namespace: "other"}, 0, 1, false},
		{"one backend", feedFilter{backend: "be_http:demo:web"}, 0, 0, true},
	}
	for _, tt := range tests {
		got := tt.f.snapshot(dcm.Snapshot{Gateways: g}).Gateways
		ev, kept := tt.f.keepEvent(dcm.Event{Type: dcm.EventGateways, Gateways: g})
		if tt.none {
			if got != nil || kept {
				t.Errorf("%s: snapshot %+v, event kept %v; want none", tt.name, got, kept)
			}
			continue
		}
		if got == nil || len(got.Gateways) != tt.gateways || len(got.HTTPRoutes) != tt.http || !kept || len(ev.Gateways.Gateways) != tt.gateways {
			t.Errorf("%s: snapshot %+v, event %+v kept %v", tt.name, got, ev.Gateways, kept)
		}
	}
	if len(g.Gateways) != 2 || len(g.HTTPRoutes) != 2 {
		t.Error("the filter changed its input")
	}
}
