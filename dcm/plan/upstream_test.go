package plan

import (
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

// TestPerServiceUpstream: a reencrypt route that verifies each Service's
// name (dcm.UpstreamTLS.PerService) adds its alternate's servers verifying
// the alternate's name, in dynamic mode and in the slots Fresh renders;
// the plan after is empty.
func TestPerServiceUpstream(t *testing.T) {
	r := route("web")
	r.Kind, r.Check = dcm.KindReencrypt, false
	r.Services = []dcm.ServiceRef{{Name: "web", Weight: 50}, {Name: "canary", Weight: 50}}
	r.Upstream = &dcm.UpstreamTLS{CA: dcm.RouteCertPrefix + "demo/web", Version: "ab", ServerName: "web.demo.svc", PerService: true}
	pri, alt := ep("web-a", "127.0.1.1", dcm.StateReady), ep("canary-a", "127.0.1.2", dcm.StateReady)
	pri.Service, alt.Service = "web", "canary"
	d := desiredAll(desiredBackend(r, alt, pri).WithUpstreamNames())
	want := map[string]string{"127.0.1.1": "web.demo.svc", "127.0.1.2": "canary.demo.svc"}
	for _, caps := range []dcm.Caps{{Mode: dcm.ModeDynamic, AddServer: true}, {Mode: dcm.ModeSlots, AddServer: true, Slots: 1}} {
		p := Compute(idle(Fresh(desiredAll(), caps)), d, caps)
		if caps.Mode == dcm.ModeDynamic {
			for _, o := range p.Ops {
				if o.Kind == dcm.OpAddServer && (o.Upstream == nil || o.Upstream.ServerName != want[o.Addr]) {
					t.Errorf("%s: add-server %s verifies %+v, want %s", caps.Mode, o.Server, o.Upstream, want[o.Addr])
				}
			}
		}
		next := p.Next
		if caps.Mode == dcm.ModeSlots {
			next = Fresh(d, caps)
		}
		for _, b := range next.Backends {
			for _, s := range b.Servers {
				if w, ok := want[s.Addr]; ok && (s.Upstream == nil || s.Upstream.ServerName != w) {
					t.Errorf("%s: server %s verifies %+v, want %s", caps.Mode, s.Name, s.Upstream, w)
				}
			}
		}
		if again := Compute(idle(next), d, caps); !again.Empty() {
			t.Errorf("%s: compute(next) not empty: %q %v", caps.Mode, opStrings(again.Ops), again.Reasons)
		}
	}
}
