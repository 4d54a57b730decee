package plan

import (
	"slices"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

// TestBalanceSpares: spares are rendered with their kind's default
// algorithm (source for TCP, roundrobin for HTTP): a new route with it
// takes one at runtime, a route with another reloads (route-added).
func TestBalanceSpares(t *testing.T) {
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 2, RuntimeCerts: true}
	web := route("web")
	st := idle(Fresh(desiredOf(web), caps))
	tcp := func(balance string) dcm.Route {
		r := route("db")
		r.Kind, r.Check, r.Balance = dcm.KindPassthrough, false, balance
		return r
	}
	http := func(balance string) dcm.Route {
		r := route("shop")
		r.Balance = balance
		return r
	}
	for _, tc := range []struct {
		name   string
		r      dcm.Route
		reload []dcm.ReloadReason
	}{
		{"passthrough source", tcp(dcm.BalanceSource), nil},
		{"passthrough default", tcp(""), nil},
		{"passthrough roundrobin", tcp(dcm.BalanceRoundRobin), []dcm.ReloadReason{dcm.ReasonRouteAdded}},
		{"http roundrobin", http(dcm.BalanceRoundRobin), nil},
		{"http source", http(dcm.BalanceSource), []dcm.ReloadReason{dcm.ReasonRouteAdded}},
	} {
		p := Compute(st, desiredAll(desiredBackend(web), desiredBackend(tc.r, ep("x-1", "127.0.2.1", dcm.StateReady))), caps)
		if !slices.Equal(p.Reasons, tc.reload) {
			t.Errorf("%s: reload %v %v, want %v", tc.name, p.Reload, p.Reasons, tc.reload)
		}
	}
}
