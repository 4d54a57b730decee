package plan

import (
	"slices"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

// TestMaxConnChange: a route's connection limit is each server's: new
// servers are added with it, a change is one set maxconn server per
// server, before a server made ready by the same plan, in dynamic and
// slots modes, no reload; reload mode reloads (route-changed).
func TestMaxConnChange(t *testing.T) {
	s1, s2 := ep("web-1", "127.0.2.1", dcm.StateReady), ep("web-2", "127.0.2.2", dcm.StateReady)
	with := func(n int, eps ...dcm.Endpoint) dcm.Desired {
		r := route("web")
		r.MaxConn = n
		return desiredAll(desiredBackend(r, eps...))
	}
	for _, c := range []struct {
		caps dcm.Caps
		ops  []string
	}{
		{dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 2}, []string{
			"set-maxconn be_http:demo:web/web-1:http 5", "add-server be_http:demo:web/web-2:http 127.0.2.2:8080 weight 1",
			"enable-health be_http:demo:web/web-2:http", "set-state be_http:demo:web/web-2:http ready"}},
		{dcm.Caps{Mode: dcm.ModeSlots, AddServer: true, Slots: 2}, []string{
			"set-maxconn be_http:demo:web/slot1 5", "set-maxconn be_http:demo:web/slot2 5", "set-maxconn be_http:demo:web/slot3 5",
			"set-addr be_http:demo:web/slot2 127.0.2.2:8080", "set-state be_http:demo:web/slot2 ready"}},
	} {
		st := idle(Fresh(with(0, s1), c.caps))
		d := with(5, s1, s2)
		p := Compute(st, d, c.caps)
		if got := opStrings(p.Ops); p.Reload || !slices.Equal(got, c.ops) {
			t.Errorf("%s: reload %v, ops %q, want %q", c.caps.Mode, p.Reload, got, c.ops)
		}
		for _, s := range p.Next.Backends[0].Servers {
			if s.MaxConn != 5 {
				t.Errorf("%s: %s has maxconn %d in next", c.caps.Mode, s.Name, s.MaxConn)
			}
		}
		if again := Compute(p.Next, d, c.caps); !again.Empty() {
			t.Errorf("%s: compute(next) not empty: %q", c.caps.Mode, opStrings(again.Ops))
		}
	}
	reload := dcm.Caps{Mode: dcm.ModeReload}
	p := Compute(idle(Fresh(with(0, s1), reload)), with(5, s1), reload)
	if !p.Reload || !slices.Equal(p.Reasons, []dcm.ReloadReason{dcm.ReasonRouteChanged}) || p.Next.Backends[0].Servers[0].MaxConn != 5 {
		t.Errorf("reload mode: reload %v %v, next %+v", p.Reload, p.Reasons, p.Next.Backends[0].Servers)
	}
}
