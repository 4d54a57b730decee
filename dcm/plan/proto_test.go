package plan

import (
	"slices"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

// TestProto: a server's protocol (dcm.Proto, from a Service port's
// appProtocol) reaches the add-server op and the predicted server. An
// appProtocol change renames the endpoints (WithProtoNames), so new servers
// come next to the old ones without a reload; a server whose protocol
// changes under its own name reloads with proto-changed, and so does a
// slot, whose protocol is in the cfg.
func TestProto(t *testing.T) {
	h2 := func(e dcm.Endpoint) dcm.Endpoint { e.Proto = dcm.ProtoH2; return e }
	r := route("grpc")
	r.Check = false
	plainEps := desiredBackend(r, ep("grpc-a", "127.0.1.1", dcm.StateReady))
	h2Eps := desiredBackend(r, h2(ep("grpc-a", "127.0.1.1", dcm.StateReady)))
	dynamic := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true}
	slots := dcm.Caps{Mode: dcm.ModeSlots, AddServer: true, Slots: 2}

	for _, tc := range []struct {
		name     string
		caps     dcm.Caps
		from, to dcm.DesiredBackend
		reason   dcm.ReloadReason
	}{
		{"appProtocol turns h2c: new servers, no reload", dynamic, plainEps, h2Eps.WithProtoNames(), ""},
		{"appProtocol leaves h2c: new servers, no reload", dynamic, h2Eps.WithProtoNames(), plainEps, ""},
		{"same name, another protocol", dynamic, plainEps, h2Eps, dcm.ReasonProtoChanged},
		{"slots: an h2c endpoint on a plain slot", slots, plainEps, h2Eps.WithProtoNames(), dcm.ReasonProtoChanged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := idle(Fresh(desiredAll(tc.from), tc.caps))
			to := desiredAll(tc.to)
			p := Compute(st, to, tc.caps)
			if tc.reason != "" {
				if !p.Reload || !slices.Contains(p.Reasons, tc.reason) {
					t.Fatalf("reload %v reasons %v, want %s", p.Reload, p.Reasons, tc.reason)
				}
			} else {
				if p.Reload {
					t.Fatalf("reloads: %v", p.Reasons)
				}
				var adds int
				for _, o := range p.Ops {
					if o.Kind == dcm.OpAddServer {
						adds++
						if o.Proto != tc.to.Endpoints[0].Proto {
							t.Errorf("add-server %s with proto %q, want %q", o.Server, o.Proto, tc.to.Endpoints[0].Proto)
						}
					}
				}
				if adds != 1 {
					t.Errorf("ops %q: want one add-server", opStrings(p.Ops))
				}
			}
			for _, b := range p.Next.Backends {
				for _, s := range b.Servers {
					if s.Endpoint == tc.to.Endpoints[0].Name && s.Proto != tc.to.Endpoints[0].Proto {
						t.Errorf("next server %s proto %q, want %q", s.Name, s.Proto, tc.to.Endpoints[0].Proto)
					}
				}
			}
			if again := Compute(idle(p.Next), to, tc.caps); again.Reload {
				t.Errorf("compute(next) reloads again: %v", again.Reasons)
			}
		})
	}
}
