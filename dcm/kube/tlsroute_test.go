package kube

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dcm-router/dcm/dcm"
)

func tlsListener(name string, port int32, host string, mode gwv1.TLSModeType, kinds ...string) gwv1.Listener {
	l := gwv1.Listener{Name: gwv1.SectionName(name), Port: port, Protocol: gwv1.TLSProtocolType, TLS: &gwv1.ListenerTLSConfig{Mode: &mode}}
	if host != "" {
		l.Hostname = ptrTo(gwv1.Hostname(host))
	}
	if len(kinds) > 0 {
		l.AllowedRoutes = &gwv1.AllowedRoutes{}
		for _, k := range kinds {
			l.AllowedRoutes.Kinds = append(l.AllowedRoutes.Kinds, gwv1.RouteGroupKind{Kind: gwv1.Kind(k)})
		}
	}
	return l
}

func testTLSRoute(ns, name string, age int, gw string, hosts []string, refs ...gwv1.BackendRef) *gwv1.TLSRoute {
	r := &gwv1.TLSRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 4, UID: types.UID(ns + "-" + name),
		CreationTimestamp: metav1.NewTime(gwT0.Add(time.Duration(age) * time.Minute))}}
	r.Spec.ParentRefs = []gwv1.ParentReference{{Name: gwv1.ObjectName(gw)}}
	for _, h := range hosts {
		r.Spec.Hostnames = append(r.Spec.Hostnames, gwv1.Hostname(h))
	}
	r.Spec.Rules = []gwv1.TLSRouteRule{{BackendRefs: refs}}
	return r
}

func svcRef(ns, name string) gwv1.BackendRef {
	ref := gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{Name: gwv1.ObjectName(name), Port: ptrTo(gwv1.PortNumber(443))}}
	if ns != "" {
		ref.Namespace = ptrTo(gwv1.Namespace(ns))
	}
	return ref
}

// TestTLSListeners: a TLS listener of mode Passthrough takes TLSRoutes on
// an HTTPS port; mode Terminate, other route kinds and a TLS listener
// beside an HTTPS one on the same port are refused with the spec's
// reasons.
func TestTLSListeners(t *testing.T) {
	tcp := tlsListener("kinds", 18443, "k.example.com", gwv1.TLSModePassthrough, "TCPRoute", "TLSRoute")
	https := httpListener("https", 18443, "")
	https.Protocol = gwv1.HTTPSProtocolType
	in := testInput(nil, nil, nil)
	in.classes = []*gwv1.GatewayClass{testClass()}
	in.gateways = []*gwv1.Gateway{
		testGateway("ns", "tls", 0, tlsListener("pass", 18443, "", gwv1.TLSModePassthrough),
			tlsListener("term", 18443, "t.example.com", gwv1.TLSModeTerminate), tcp,
			tlsListener("port", 18080, "p.example.com", gwv1.TLSModePassthrough)),
		testGateway("ns", "mixed", 1, tlsListener("pass", 18443, "", gwv1.TLSModePassthrough), https),
	}
	out := translateGateways(in)
	want := map[string][3]string{ // Accepted, ResolvedRefs, Conflicted
		"ns/tls pass":    {"True/Accepted", "True/ResolvedRefs", "False/NoConflicts"},
		"ns/tls term":    {"False/UnsupportedValue", "True/ResolvedRefs", "False/NoConflicts"},
		"ns/tls kinds":   {"True/Accepted", "False/InvalidRouteKinds", "False/NoConflicts"},
		"ns/tls port":    {"False/PortUnavailable", "True/ResolvedRefs", "False/NoConflicts"},
		"ns/mixed pass":  {"True/Accepted", "True/ResolvedRefs", "True/ProtocolConflict"},
		"ns/mixed https": {"False/UnsupportedValue", "True/ResolvedRefs", "True/ProtocolConflict"}, // no tls
	}
	for nn, st := range out.gateways {
		for _, l := range st.Listeners {
			key := nn.String() + " " + string(l.Name)
			got := [3]string{condOf(l.Conditions, "Accepted"), condOf(l.Conditions, "ResolvedRefs"), condOf(l.Conditions, "Conflicted")}
			if got != want[key] {
				t.Errorf("%s: %v, want %v", key, got, want[key])
			}
			if key == "ns/tls kinds" && (len(l.SupportedKinds) != 1 || l.SupportedKinds[0].Kind != KindTLSRoute) {
				t.Errorf("%s: supportedKinds %v, want TLSRoute alone", key, l.SupportedKinds)
			}
			if key == "ns/tls term" && len(l.SupportedKinds) != 0 {
				t.Errorf("%s: supportedKinds %v, want none (mode Terminate is not served)", key, l.SupportedKinds)
			}
		}
	}
}

// TestTLSRoutes: TLSRoutes attach to TLS listeners only, intersect their
// hostnames with the listener's, resolve their backendRefs with the
// spec's reasons and become passthrough routes on the listener's bind.
func TestTLSRoutes(t *testing.T) {
	in := testInput([]string{"ns/tls-a", "ns/tls-b", "other/tls-x"}, nil, nil)
	in.classes = []*gwv1.GatewayClass{testClass()}
	http := testGateway("ns", "http", 1, httpListener("http", 18080, ""))
	in.gateways = []*gwv1.Gateway{testGateway("ns", "tls", 0, tlsListener("pass", 18443, "*.example.com", gwv1.TLSModePassthrough)), http}
	kind := svcRef("", "tls-a")
	kind.Kind, kind.Group = ptrTo(gwv1.Kind("NonExistent")), ptrTo(gwv1.Group("unknown.example.com"))
	in.tlsRoutes = []*gwv1.TLSRoute{
		testTLSRoute("ns", "a", 0, "tls", []string{"a.example.com", "other.org"}, svcRef("", "tls-a"), svcRef("", "tls-b")),
		testTLSRoute("ns", "wild", 1, "tls", []string{"*.com"}, svcRef("", "tls-b")),
		testTLSRoute("ns", "nomatch", 2, "tls", []string{"x.other.org"}, svcRef("", "tls-a")),
		testTLSRoute("ns", "onhttp", 3, "http", []string{"a.example.com"}, svcRef("", "tls-a")),
		testTLSRoute("ns", "missing", 4, "tls", []string{"m.example.com"}, svcRef("", "nonexistent")),
		testTLSRoute("ns", "kind", 5, "tls", []string{"k.example.com"}, kind),
		testTLSRoute("ns", "grant", 6, "tls", []string{"g.example.com"}, svcRef("other", "tls-x")),
	}
	out := translateGateways(in)
	want := map[string][2]string{
		"a":       {"True/Accepted", "True/ResolvedRefs"},
		"wild":    {"True/Accepted", "True/ResolvedRefs"},
		"nomatch": {"False/NoMatchingListenerHostname", "True/ResolvedRefs"},
		"onhttp":  {"False/NotAllowedByListeners", "True/ResolvedRefs"},
		"missing": {"True/Accepted", "False/BackendNotFound"},
		"kind":    {"True/Accepted", "False/InvalidKind"},
		"grant":   {"True/Accepted", "False/RefNotPermitted"},
	}
	for name, w := range want {
		ps := out.tlsRoutes[types.NamespacedName{Namespace: "ns", Name: name}]
		if len(ps) != 1 {
			t.Fatalf("%s: %d parents", name, len(ps))
		}
		got := [2]string{condOf(ps[0].Conditions, "Accepted"), condOf(ps[0].Conditions, "ResolvedRefs")}
		if got != w || ps[0].Conditions[0].ObservedGeneration != 4 {
			t.Errorf("%s: %v (generation %d), want %v", name, got, ps[0].Conditions[0].ObservedGeneration, w)
		}
	}
	// The portal's picture lists every TLSRoute with the status computed.
	views := map[string]string{}
	for _, v := range out.view.HTTPRoutes {
		if v.Kind == KindTLSRoute && len(v.Parents) == 1 {
			views[v.Name] = condOf(tlsParents(out, v.Name)[0].Conditions, "Accepted")
			if got := v.Parents[0].Conditions; len(got) == 0 || got[0].Type != "Accepted" || string(got[0].Status)+"/"+got[0].Reason != views[v.Name] {
				t.Errorf("view of %s: conditions %+v, want Accepted %s", v.Name, got, views[v.Name])
			}
		}
	}
	if len(views) != len(want) {
		t.Errorf("the view lists TLSRoutes %v, want the %d of the input", views, len(want))
	}
	served := map[string]dcm.Route{}
	for _, r := range out.served {
		served[r.Object] = r
	}
	if len(served) != 5 {
		t.Fatalf("served %d routes, want a, wild, missing, kind, grant: %v", len(served), served)
	}
	a := served["a"]
	if a.Kind != dcm.KindPassthrough || a.Source != dcm.SourceTLSRoute || a.Gateway.Bind != "127.0.20.1:18443" ||
		len(a.Gateway.Hostnames) != 1 || a.Gateway.Hostnames[0] != "a.example.com" || len(a.Services) != 2 || a.Gateway.Unresolved {
		t.Errorf("route a: %+v %+v", a, a.Gateway)
	}
	if w := served["wild"]; len(w.Gateway.Hostnames) != 1 || w.Gateway.Hostnames[0] != "*.example.com" {
		t.Errorf("route wild: hostnames %v, want the listener's *.example.com", w.Gateway.Hostnames)
	}
	for _, name := range []string{"missing", "kind", "grant"} {
		if !served[name].Gateway.Unresolved {
			t.Errorf("route %s is not unresolved", name)
		}
	}
	for _, r := range out.served {
		if err := dcm.ValidateRoute(r); err != nil {
			t.Errorf("route %s: %v", r.Name, err)
		}
	}
	if n := out.gateways[types.NamespacedName{Namespace: "ns", Name: "tls"}].Listeners[0].AttachedRoutes; n != 5 {
		t.Errorf("attachedRoutes %d, want 5", n)
	}
}

// TestTLSListenerPorts: a TLS listener's port is an HTTPS one (TLS
// listeners share fe_gw_https's binds, fe_gw_tls in front): pre-bound
// HTTPS ports serve at once, another port is Programmed once HAProxy binds
// it for HTTPS (a reload, gateway-listener-port), an HTTP pre-bound port
// is refused.
func TestTLSListenerPorts(t *testing.T) {
	tests := []struct {
		name                 string
		port                 int32
		bound                []dcm.GatewayBind
		accepted, programmed string
	}{
		{"pre-bound HTTPS port", 18443, nil, "True/Accepted", "True/Programmed"},
		{"other port, not bound yet", 8443, nil, "True/Accepted", "False/Pending"},
		{"other port, bound for HTTP only", 8443, []dcm.GatewayBind{{Bind: "127.0.20.1:8443"}}, "True/Accepted", "False/Pending"},
		{"other port, bound for HTTPS", 8443, []dcm.GatewayBind{{Bind: "127.0.20.1:8443", HTTPS: true}}, "True/Accepted", "True/Programmed"},
		{"HTTP pre-bound port", 18080, nil, "False/PortUnavailable", "False/Invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInput([]string{"ns/tls-a"}, nil, nil)
			in.bound = tt.bound
			in.classes = []*gwv1.GatewayClass{testClass()}
			in.gateways = []*gwv1.Gateway{testGateway("ns", "tls", 0, tlsListener("pass", tt.port, "", gwv1.TLSModePassthrough))}
			in.tlsRoutes = []*gwv1.TLSRoute{testTLSRoute("ns", "a", 0, "tls", []string{"a.example.com"}, svcRef("", "tls-a"))}
			out := translateGateways(in)
			conds := out.gateways[types.NamespacedName{Namespace: "ns", Name: "tls"}].Listeners[0].Conditions
			if got := condOf(conds, "Accepted"); got != tt.accepted {
				t.Errorf("Accepted %s, want %s", got, tt.accepted)
			}
			if got := condOf(conds, "Programmed"); got != tt.programmed {
				t.Errorf("Programmed %s, want %s", got, tt.programmed)
			}
			if tt.accepted == "True/Accepted" {
				if len(out.served) != 1 {
					t.Fatalf("served %d routes, want the TLSRoute's", len(out.served))
				}
				b, ok := dcm.GatewayBindOf(out.served[0])
				if want := (dcm.GatewayBind{Bind: "127.0.20.1:" + fmt.Sprint(tt.port), HTTPS: true}); !ok || b != want {
					t.Errorf("bind %+v %v, want %+v: a reload binds it for HTTPS", b, ok, want)
				}
			}
		})
	}
}

// tlsParents is the status parents out computed for TLSRoute ns/name.
func tlsParents(out *gwOutput, name string) []gwv1.RouteParentStatus {
	return out.tlsRoutes[types.NamespacedName{Namespace: "ns", Name: name}]
}
