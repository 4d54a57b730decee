package haproxy

import (
	"bytes"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

// TestRenderCacheFollowsServerFields: the renderer re-renders a backend
// whose server line changes in any field (a runtime change such as set
// maxconn server must reach the cfg), so its output always equals a fresh
// rendering.
func TestRenderCacheFollowsServerFields(t *testing.T) {
	r1 := route("ns", "one", "one.example", "/", dcm.PathPrefix)
	base := dcm.Server{Name: "a", Endpoint: "a", Addr: "10.0.0.1", Port: 80, Weight: 1, State: dcm.StateReady, Check: true}
	for _, tt := range []struct {
		name   string
		change func(*dcm.Server)
	}{
		{"maxconn", func(s *dcm.Server) { s.MaxConn = 3 }},
		{"check interval", func(s *dcm.Server) { s.CheckInterMillis = 2000 }},
		{"proto", func(s *dcm.Server) { s.Proto = dcm.ProtoH2 }},
		{"weight", func(s *dcm.Server) { s.Weight = 7 }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			changed := base
			tt.change(&changed)
			st := func(s dcm.Server) dcm.State {
				return dcm.State{Backends: []*dcm.Backend{{Name: r1.BackendName(), Route: r1, Servers: []dcm.Server{s}}}}
			}
			r := NewRenderer(testSettings)
			_, err := r.Render(st(base))
			mustf(t, err, "render before")
			cached, err := r.Render(st(changed))
			mustf(t, err, "render after")
			fresh, err := Render(testSettings, st(changed))
			mustf(t, err, "fresh render")
			if !bytes.Equal(cached.Text(), fresh.Text()) {
				t.Errorf("the cached rendering kept the old server line:\n%s\n--- fresh:\n%s", cached.Text(), fresh.Text())
			}
		})
	}
}

// TestRenderCacheGatewayRoutes: routes of two Gateway binds that come,
// change their matches, hostnames and rank, and go, rendered one state
// after another, give the maps and crt-lists of a fresh rendering (the
// renderer patches the gateway maps by bind).
func TestRenderCacheGatewayRoutes(t *testing.T) {
	s := testSettings
	s.Gateway = dcm.GatewayBinds{Addresses: []string{"127.0.20.9"}, HTTPPorts: []int{18080}, HTTPSPorts: []int{18443}}
	gw := func(name, bind, rank string, hosts []string, path string, tls bool) *dcm.Backend {
		r := dcm.Route{Namespace: "gw", Name: name, Kind: dcm.KindHTTP, Balance: dcm.BalanceRoundRobin,
			Gateway: &dcm.GatewayRoute{Bind: bind, Hostnames: hosts, Rank: rank, Matches: []dcm.HTTPMatch{{PathType: dcm.GatewayPathPrefix, Path: path}}}}
		if tls {
			r.Kind, r.TLS = dcm.KindEdge, &dcm.TLSRef{Secret: "gw/c", Version: "aa"}
		}
		return &dcm.Backend{Name: r.BackendName(), Kind: r.Kind, Route: r}
	}
	const h, hs = "127.0.20.9:18080", "127.0.20.9:18443"
	states := [][]*dcm.Backend{
		{gw("a", h, "1", nil, "/", false)},
		{gw("a", h, "1", nil, "/", false), gw("b", h, "0", []string{"x.test"}, "/b", false), gw("c", hs, "0", []string{"*.y.test"}, "/", true)},
		{gw("a", h, "3", []string{"x.test"}, "/a", false), gw("b", h, "0", []string{"x.test"}, "/b", false), gw("c", hs, "0", nil, "/", true)},
		{gw("b", h, "0", nil, "/b", false)},
		{},
	}
	// A route with two hostnames, one of them shared with a route that
	// comes: the other hostname's list keeps its routes (the states share
	// the backends that did not change, as the planner's do).
	two, other := gw("a", h, "1", []string{"x.test", "y.test"}, "/a", false), gw("c", h, "1", []string{"y.test"}, "/c", false)
	states = append(states, []*dcm.Backend{two, other}, []*dcm.Backend{two, gw("b", h, "0", []string{"x.test"}, "/b", false), other})
	r := NewRenderer(s)
	for i, bs := range states {
		st := stateOf(bs)
		cached, err := r.Render(st)
		mustf(t, err, "render %d", i)
		fresh, err := Render(s, st)
		mustf(t, err, "fresh render %d", i)
		for name, m := range fresh.Maps {
			if !bytes.Equal(cached.Maps[name], m) {
				t.Errorf("state %d: %s cached\n%s\nfresh\n%s", i, name, cached.Maps[name], m)
			}
		}
		for name, l := range fresh.GatewayLists {
			if !bytes.Equal(cached.GatewayLists[name], l) {
				t.Errorf("state %d: %s cached\n%s\nfresh\n%s", i, name, cached.GatewayLists[name], l)
			}
		}
	}
}
