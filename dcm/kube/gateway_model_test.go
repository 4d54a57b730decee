package kube

import (
	"reflect"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dcm-router/dcm/dcm"
)

const testController = "dcm-router.io/gateway-controller"

var gwT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func testBinds() dcm.GatewayBinds {
	return dcm.GatewayBinds{Addresses: []string{"127.0.20.1", "127.0.20.2"}, HTTPPorts: []int{18080}, HTTPSPorts: []int{18443}}
}

func testClass() *gwv1.GatewayClass {
	return &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "dcm", Generation: 1}, Spec: gwv1.GatewayClassSpec{ControllerName: testController}}
}

func httpListener(name string, port int32, host string) gwv1.Listener {
	l := gwv1.Listener{Name: gwv1.SectionName(name), Port: port, Protocol: gwv1.HTTPProtocolType}
	if host != "" {
		l.Hostname = ptrTo(gwv1.Hostname(host))
	}
	return l
}

func testGateway(ns, name string, age int, ls ...gwv1.Listener) *gwv1.Gateway {
	return &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 2, UID: types.UID(ns + "-" + name),
		CreationTimestamp: metav1.NewTime(gwT0.Add(time.Duration(age) * time.Minute))},
		Spec: gwv1.GatewaySpec{GatewayClassName: "dcm", Listeners: ls}}
}

func testHTTPRoute(ns, name string, age int, gw string, hosts []string, backends ...string) *gwv1.HTTPRoute {
	r := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 3, UID: types.UID(ns + "-" + name),
		CreationTimestamp: metav1.NewTime(gwT0.Add(time.Duration(age) * time.Minute))}}
	r.Spec.ParentRefs = []gwv1.ParentReference{{Name: gwv1.ObjectName(gw)}}
	for _, h := range hosts {
		r.Spec.Hostnames = append(r.Spec.Hostnames, gwv1.Hostname(h))
	}
	rule := gwv1.HTTPRouteRule{}
	for _, b := range backends {
		rule.BackendRefs = append(rule.BackendRefs, gwv1.HTTPBackendRef{BackendRef: gwv1.BackendRef{
			BackendObjectReference: gwv1.BackendObjectReference{Name: gwv1.ObjectName(b), Port: ptrTo(gwv1.PortNumber(80))}}})
	}
	r.Spec.Rules = []gwv1.HTTPRouteRule{rule}
	return r
}

// testInput is a gwInput whose Services are svcs (ns/name) and whose
// Secrets are valid when in certs.
func testInput(svcs, certs []string, nsLabels map[string]labels.Set) gwInput {
	return gwInput{controller: testController, binds: testBinds(),
		namespace: func(ns string) (labels.Set, bool) { l, ok := nsLabels[ns]; return l, ok || nsLabels == nil },
		service:   func(ns, name string) bool { return slices.Contains(svcs, ns+"/"+name) },
		cert: func(ns, name string) error {
			if slices.Contains(certs, ns+"/"+name) {
				return nil
			}
			return errNoTLSSecret
		}}
}

func condOf(conds []metav1.Condition, typ string) string {
	for _, c := range conds {
		if c.Type == typ {
			return string(c.Status) + "/" + c.Reason
		}
	}
	return "-"
}

func TestHostnameIntersection(t *testing.T) {
	for _, tc := range []struct {
		route    []string
		listener string
		want     []string
		any      bool
	}{
		{nil, "", nil, true},
		{nil, "a.example.com", []string{"a.example.com"}, false},
		{[]string{"A.Example.com"}, "", []string{"a.example.com"}, false},
		{[]string{"a.example.com"}, "*.example.com", []string{"a.example.com"}, false},
		{[]string{"x.a.example.com"}, "*.example.com", []string{"x.a.example.com"}, false},
		{[]string{"example.com"}, "*.example.com", nil, false},
		{[]string{"*.example.com"}, "a.example.com", []string{"a.example.com"}, false},
		{[]string{"*.example.com"}, "*.a.example.com", []string{"*.a.example.com"}, false},
		{[]string{"*.a.example.com"}, "*.example.com", []string{"*.a.example.com"}, false},
		{[]string{"b.example.com", "a.example.com"}, "*.example.com", []string{"a.example.com", "b.example.com"}, false},
		{[]string{"other.org"}, "a.example.com", nil, false},
	} {
		var rh []gwv1.Hostname
		for _, h := range tc.route {
			rh = append(rh, gwv1.Hostname(h))
		}
		var lh *gwv1.Hostname
		if tc.listener != "" {
			lh = ptrTo(gwv1.Hostname(tc.listener))
		}
		got, any := intersectHostnames(rh, lh)
		if !slices.Equal(got, tc.want) || any != tc.any {
			t.Errorf("%v ∩ %q = %v %v, want %v %v", tc.route, tc.listener, got, any, tc.want, tc.any)
		}
	}
}

// Rank orders oldest first, then namespace/name alphabetically (a name
// that is a prefix of another first), then by rule.
func TestGatewayRank(t *testing.T) {
	meta := func(ns, name string, age int) *metav1.ObjectMeta {
		return &metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(gwT0.Add(time.Duration(age) * time.Second))}
	}
	ordered := []string{
		gatewayRank(meta("z", "z", 0), 0),
		gatewayRank(meta("a-b", "a", 1), 0),
		gatewayRank(meta("a", "b", 1), 0),
		gatewayRank(meta("a", "b", 1), 1),
		gatewayRank(meta("a", "b", 1), 10),
		gatewayRank(meta("a", "b-c", 1), 0),
		gatewayRank(meta("a", "b.c", 1), 0),
		gatewayRank(meta("a", "a", 2), 0),
	}
	if !slices.IsSorted(ordered) {
		t.Errorf("ranks out of order: %q", ordered)
	}
	if n := gatewayRouteName(string(make([]byte, 250)), 0, "ns/gw", "http"); len(n) > 256 {
		t.Errorf("long name not hashed: %d", len(n))
	}
	a, b := gatewayRouteName("web", 0, "ns/gw", "http"), gatewayRouteName("web", 0, "ns/gw", "https")
	if a == b || dcm.ValidateRouteName("name", a) != nil || a != gatewayRouteName("web", 0, "ns/gw", "http") {
		t.Errorf("names %q %q: want distinct, valid, deterministic", a, b)
	}
}

// Reasons: each case is one HTTPRoute against one Gateway; want are the
// route's Accepted and ResolvedRefs, and how many routes are served.
func TestTranslateRouteReasons(t *testing.T) {
	gw := func() *gwv1.Gateway {
		return testGateway("gw", "gw", 0, httpListener("http", 18080, "*.example.com"))
	}
	type tc struct {
		name             string
		gw               *gwv1.Gateway
		route            *gwv1.HTTPRoute
		grants           []*gwv1.ReferenceGrant
		accepted, refs   string
		served           int
		unresolved       bool
		attachedRoutes   int32
		listenerAccepted string
	}
	allNS := func(g *gwv1.Gateway) *gwv1.Gateway {
		g.Spec.Listeners[0].AllowedRoutes = &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: ptrTo(gwv1.NamespacesFromAll)}}
		return g
	}
	crossRoute := func() *gwv1.HTTPRoute {
		r := testHTTPRoute("gw", "web", 1, "gw", []string{"a.example.com"}, "web")
		r.Spec.Rules[0].BackendRefs[0].Namespace = ptrTo(gwv1.Namespace("apps"))
		return r
	}
	grant := &gwv1.ReferenceGrant{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "g"}, Spec: gwv1.ReferenceGrantSpec{
		From: []gwv1.ReferenceGrantFrom{{Group: gatewayGroup, Kind: KindHTTPRoute, Namespace: "gw"}},
		To:   []gwv1.ReferenceGrantTo{{Group: "", Kind: KindService}}}}
	cases := []tc{
		{name: "accepted", gw: gw(), route: testHTTPRoute("gw", "web", 1, "gw", []string{"a.example.com"}, "web"),
			accepted: "True/Accepted", refs: "True/ResolvedRefs", served: 1, attachedRoutes: 1, listenerAccepted: "True/Accepted"},
		{name: "other namespace not allowed", gw: gw(), route: func() *gwv1.HTTPRoute {
			r := testHTTPRoute("apps", "web", 1, "gw", nil, "web")
			r.Spec.ParentRefs[0].Namespace = ptrTo(gwv1.Namespace("gw"))
			return r
		}(), accepted: "False/NotAllowedByListeners", refs: "True/ResolvedRefs"},
		{name: "other namespace allowed", gw: allNS(gw()), route: func() *gwv1.HTTPRoute {
			r := testHTTPRoute("apps", "web", 1, "gw", nil, "web")
			r.Spec.ParentRefs[0].Namespace = ptrTo(gwv1.Namespace("gw"))
			return r
		}(), accepted: "True/Accepted", refs: "True/ResolvedRefs", served: 1, attachedRoutes: 1},
		{name: "no hostname in common", gw: gw(), route: testHTTPRoute("gw", "web", 1, "gw", []string{"other.org"}, "web"),
			accepted: "False/NoMatchingListenerHostname", refs: "True/ResolvedRefs"},
		{name: "section name matches nothing", gw: gw(), route: func() *gwv1.HTTPRoute {
			r := testHTTPRoute("gw", "web", 1, "gw", nil, "web")
			r.Spec.ParentRefs[0].SectionName = ptrTo(gwv1.SectionName("nope"))
			return r
		}(), accepted: "False/NoMatchingParent", refs: "True/ResolvedRefs"},
		{name: "port matches nothing", gw: gw(), route: func() *gwv1.HTTPRoute {
			r := testHTTPRoute("gw", "web", 1, "gw", nil, "web")
			r.Spec.ParentRefs[0].Port = ptrTo(gwv1.PortNumber(81))
			return r
		}(), accepted: "False/NoMatchingParent", refs: "True/ResolvedRefs"},
		{name: "missing service", gw: gw(), route: testHTTPRoute("gw", "web", 1, "gw", nil, "nope"),
			accepted: "True/Accepted", refs: "False/BackendNotFound", served: 1, unresolved: true, attachedRoutes: 1},
		{name: "wrong kind", gw: gw(), route: func() *gwv1.HTTPRoute {
			r := testHTTPRoute("gw", "web", 1, "gw", nil, "web")
			r.Spec.Rules[0].BackendRefs[0].Kind = ptrTo(gwv1.Kind("Pod"))
			return r
		}(), accepted: "True/Accepted", refs: "False/InvalidKind", served: 1, unresolved: true, attachedRoutes: 1},
		{name: "cross namespace without grant", gw: gw(), route: crossRoute(),
			accepted: "True/Accepted", refs: "False/RefNotPermitted", served: 1, unresolved: true, attachedRoutes: 1},
		{name: "cross namespace with grant", gw: gw(), route: crossRoute(), grants: []*gwv1.ReferenceGrant{grant},
			accepted: "True/Accepted", refs: "True/ResolvedRefs", served: 1, attachedRoutes: 1},
		{name: "mirror filter", gw: gw(), route: func() *gwv1.HTTPRoute {
			r := testHTTPRoute("gw", "web", 1, "gw", nil, "web")
			r.Spec.Rules[0].Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestMirror, RequestMirror: &gwv1.HTTPRequestMirrorFilter{}}}
			return r
		}(), accepted: "False/UnsupportedValue", refs: "-"},
		{name: "regex path", gw: gw(), route: func() *gwv1.HTTPRoute {
			r := testHTTPRoute("gw", "web", 1, "gw", nil, "web")
			r.Spec.Rules[0].Matches = []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: ptrTo(gwv1.PathMatchRegularExpression), Value: ptrTo("/a.*")}}}
			return r
		}(), accepted: "False/UnsupportedValue", refs: "-"},
		{name: "header value with CRLF", gw: gw(), route: func() *gwv1.HTTPRoute {
			r := testHTTPRoute("gw", "web", 1, "gw", nil, "web")
			r.Spec.Rules[0].Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestHeaderModifier,
				RequestHeaderModifier: &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: "X-A", Value: "a\r\nB: c"}}}}}
			return r
		}(), accepted: "False/UnsupportedValue", refs: "-"},
		{name: "port not pre-bound", gw: testGateway("gw", "gw", 0, httpListener("http", 8080, "")),
			route: testHTTPRoute("gw", "web", 1, "gw", nil, "web"), accepted: "True/Accepted", refs: "True/ResolvedRefs",
			served: 1, attachedRoutes: 1, listenerAccepted: "True/Accepted"},
		{name: "port pre-bound for HTTPS", gw: testGateway("gw", "gw", 0, httpListener("http", 18443, "")),
			route: testHTTPRoute("gw", "web", 1, "gw", nil, "web"), accepted: "False/NotAllowedByListeners", refs: "True/ResolvedRefs",
			listenerAccepted: "False/PortUnavailable"},
		{name: "unsupported protocol", gw: testGateway("gw", "gw", 0, gwv1.Listener{Name: "tcp", Port: 18080, Protocol: gwv1.TCPProtocolType}),
			route: testHTTPRoute("gw", "web", 1, "gw", nil, "web"), accepted: "False/NotAllowedByListeners", refs: "True/ResolvedRefs",
			listenerAccepted: "False/UnsupportedProtocol"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := testInput([]string{"gw/web", "apps/web"}, nil, map[string]labels.Set{"gw": {}, "apps": {}})
			in.classes, in.gateways, in.routes, in.grants = []*gwv1.GatewayClass{testClass()}, []*gwv1.Gateway{c.gw}, []*gwv1.HTTPRoute{c.route}, c.grants
			out := translateGateways(in)
			parents := out.routes[types.NamespacedName{Namespace: c.route.Namespace, Name: c.route.Name}]
			if len(parents) != 1 {
				t.Fatalf("parents %+v", parents)
			}
			if got := condOf(parents[0].Conditions, "Accepted"); got != c.accepted {
				t.Errorf("Accepted %s, want %s", got, c.accepted)
			}
			if got := condOf(parents[0].Conditions, "ResolvedRefs"); c.refs != "-" && got != c.refs {
				t.Errorf("ResolvedRefs %s, want %s", got, c.refs)
			}
			if parents[0].Conditions[0].ObservedGeneration != 3 || parents[0].ControllerName != testController {
				t.Errorf("parent %+v", parents[0])
			}
			if len(out.served) != c.served || c.served > 0 && out.served[0].Gateway.Unresolved != c.unresolved {
				t.Errorf("served %+v, want %d unresolved %v", out.served, c.served, c.unresolved)
			}
			st := out.gateways[types.NamespacedName{Namespace: "gw", Name: "gw"}]
			if st.Listeners[0].AttachedRoutes != c.attachedRoutes {
				t.Errorf("attachedRoutes %d, want %d", st.Listeners[0].AttachedRoutes, c.attachedRoutes)
			}
			if got := condOf(st.Listeners[0].Conditions, "Accepted"); c.listenerAccepted != "" && got != c.listenerAccepted {
				t.Errorf("listener Accepted %s, want %s", got, c.listenerAccepted)
			}
		})
	}
}

// A served route carries what HAProxy's side needs: bind, hostnames,
// default match, rank, services with weights, certificate on HTTPS.
func TestTranslateServedRoute(t *testing.T) {
	g := testGateway("gw", "gw", 0, httpListener("http", 18080, "*.example.com"),
		gwv1.Listener{Name: "https", Port: 18443, Protocol: gwv1.HTTPSProtocolType, TLS: &gwv1.ListenerTLSConfig{
			CertificateRefs: []gwv1.SecretObjectReference{{Name: "cert"}}}})
	r := testHTTPRoute("gw", "web", 1, "gw", []string{"a.example.com"}, "web", "web2")
	r.Spec.Rules[0].BackendRefs[0].Weight = ptrTo(int32(3000))
	r.Spec.Rules[0].BackendRefs[1].Weight = ptrTo(int32(1000))
	in := testInput([]string{"gw/web", "gw/web2"}, []string{"gw/cert"}, nil)
	in.classes, in.gateways, in.routes = []*gwv1.GatewayClass{testClass()}, []*gwv1.Gateway{g}, []*gwv1.HTTPRoute{r}
	out := translateGateways(in)
	if len(out.served) != 2 {
		t.Fatalf("served %d routes, want 2 (one per listener)", len(out.served))
	}
	byListener := map[string]dcm.Route{}
	for _, rt := range out.served {
		byListener[rt.Gateway.Listener] = rt
	}
	h, s := byListener["http"], byListener["https"]
	if h.Kind != dcm.KindHTTP || h.Gateway.Bind != "127.0.20.1:18080" || !slices.Equal(h.Gateway.Hostnames, []string{"a.example.com"}) ||
		!reflect.DeepEqual(h.Gateway.Matches, []dcm.HTTPMatch{{PathType: dcm.GatewayPathPrefix, Path: "/"}}) || h.Object != "web" || h.Source != dcm.SourceHTTPRoute {
		t.Errorf("http route %+v %+v", h, h.Gateway)
	}
	if h.Services[0].Weight != 256 || h.Services[1].Weight != 85 {
		t.Errorf("weights %+v, want 3:1 within 256", h.Services)
	}
	if s.Gateway.ListenerHostname != "" || h.Gateway.ListenerHostname != "*.example.com" {
		t.Errorf("listener hostnames %q %q", h.Gateway.ListenerHostname, s.Gateway.ListenerHostname)
	}
	if s.Kind != dcm.KindEdge || s.TLS == nil || s.TLS.Secret != "gw/cert" || s.Gateway.Bind != "127.0.20.1:18443" || !slices.Equal(s.Gateway.Hostnames, []string{"a.example.com"}) {
		t.Errorf("https route %+v %+v", s, s.Gateway)
	}
	st := out.gateways[types.NamespacedName{Namespace: "gw", Name: "gw"}]
	if len(st.Addresses) != 1 || st.Addresses[0].Value != "127.0.20.1" || condOf(st.Conditions, "Programmed") != "True/Programmed" {
		t.Errorf("gateway status %+v", st)
	}
	for _, l := range st.Listeners {
		if condOf(l.Conditions, "Programmed") != "True/Programmed" || condOf(l.Conditions, "ResolvedRefs") != "True/ResolvedRefs" || l.AttachedRoutes != 1 {
			t.Errorf("listener %s: %+v", l.Name, l)
		}
	}
	cs := out.classes["dcm"]
	if condOf(cs.Conditions, "Accepted") != "True/Accepted" || cs.Conditions[0].ObservedGeneration != 1 || len(cs.SupportedFeatures) == 0 {
		t.Errorf("class status %+v", cs)
	}
}

// Listener certificates: missing, wrong kind, other namespace without and
// with a grant.
func TestListenerCertificates(t *testing.T) {
	grant := &gwv1.ReferenceGrant{ObjectMeta: metav1.ObjectMeta{Namespace: "certs", Name: "g"}, Spec: gwv1.ReferenceGrantSpec{
		From: []gwv1.ReferenceGrantFrom{{Group: gatewayGroup, Kind: KindGateway, Namespace: "gw"}},
		To:   []gwv1.ReferenceGrantTo{{Group: "", Kind: KindSecret, Name: ptrTo(gwv1.ObjectName("cert"))}}}}
	for _, tc := range []struct {
		name   string
		ref    gwv1.SecretObjectReference
		grants []*gwv1.ReferenceGrant
		want   string
	}{
		{"valid", gwv1.SecretObjectReference{Name: "cert"}, nil, "True/ResolvedRefs"},
		{"missing", gwv1.SecretObjectReference{Name: "nope"}, nil, "False/InvalidCertificateRef"},
		{"kind", gwv1.SecretObjectReference{Name: "cert", Kind: ptrTo(gwv1.Kind("ConfigMap"))}, nil, "False/InvalidCertificateRef"},
		{"other namespace", gwv1.SecretObjectReference{Name: "cert", Namespace: ptrTo(gwv1.Namespace("certs"))}, nil, "False/RefNotPermitted"},
		{"other namespace granted", gwv1.SecretObjectReference{Name: "cert", Namespace: ptrTo(gwv1.Namespace("certs"))}, []*gwv1.ReferenceGrant{grant}, "True/ResolvedRefs"},
	} {
		g := testGateway("gw", "gw", 0, gwv1.Listener{Name: "https", Port: 18443, Protocol: gwv1.HTTPSProtocolType,
			TLS: &gwv1.ListenerTLSConfig{CertificateRefs: []gwv1.SecretObjectReference{tc.ref}}})
		in := testInput(nil, []string{"gw/cert", "certs/cert"}, nil)
		in.classes, in.gateways, in.grants = []*gwv1.GatewayClass{testClass()}, []*gwv1.Gateway{g}, tc.grants
		st := translateGateways(in).gateways[types.NamespacedName{Namespace: "gw", Name: "gw"}]
		if got := condOf(st.Listeners[0].Conditions, "ResolvedRefs"); got != tc.want {
			t.Errorf("%s: ResolvedRefs %s, want %s", tc.name, got, tc.want)
		}
		if tc.want != "True/ResolvedRefs" && condOf(st.Listeners[0].Conditions, "Programmed") != "False/Invalid" {
			t.Errorf("%s: programmed despite %s", tc.name, tc.want)
		}
	}
}

// Addresses: stable across syncs, older Gateways keep theirs, a request
// outside the pool is refused, an exhausted pool says so.
func TestGatewayAddresses(t *testing.T) {
	a := testGateway("ns", "a", 0, httpListener("http", 18080, ""))
	b := testGateway("ns", "b", 1, httpListener("http", 18080, ""))
	c := testGateway("ns", "c", 2, httpListener("http", 18080, ""))
	in := testInput(nil, nil, nil)
	in.classes, in.gateways = []*gwv1.GatewayClass{testClass()}, []*gwv1.Gateway{c, b, a}
	out := translateGateways(in)
	if out.addrs[a.UID] != "127.0.20.1" || out.addrs[b.UID] != "127.0.20.2" || out.addrs[c.UID] != "" {
		t.Fatalf("addresses %v", out.addrs)
	}
	if got := condOf(out.gateways[types.NamespacedName{Namespace: "ns", Name: "c"}].Conditions, "Programmed"); got != "False/AddressNotAssigned" {
		t.Errorf("c Programmed %s", got)
	}
	// a goes: b keeps its address, c takes the freed one.
	in.gateways, in.prevAddr = []*gwv1.Gateway{b, c}, out.addrs
	out = translateGateways(in)
	if out.addrs[b.UID] != "127.0.20.2" || out.addrs[c.UID] != "127.0.20.1" {
		t.Errorf("after a went: %v", out.addrs)
	}
	// A request outside the pool.
	d := testGateway("ns", "d", 3, httpListener("http", 18080, ""))
	d.Spec.Addresses = []gwv1.GatewaySpecAddress{{Value: "10.0.0.1"}}
	in.gateways, in.prevAddr = []*gwv1.Gateway{d}, nil
	if got := condOf(translateGateways(in).gateways[types.NamespacedName{Namespace: "ns", Name: "d"}].Conditions, "Programmed"); got != "False/AddressNotUsable" {
		t.Errorf("d Programmed %s", got)
	}
	d.Spec.Addresses = []gwv1.GatewaySpecAddress{{Value: "127.0.20.2"}}
	if got := translateGateways(in).addrs[d.UID]; got != "127.0.20.2" {
		t.Errorf("requested address: got %q", got)
	}
}

// Other controllers' classes and their Gateways are not dcm's: no status.
func TestOtherControllersLeftAlone(t *testing.T) {
	other := &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Spec: gwv1.GatewayClassSpec{ControllerName: "example.com/other"}}
	g := testGateway("ns", "g", 0, httpListener("http", 18080, ""))
	g.Spec.GatewayClassName = "other"
	in := testInput([]string{"ns/web"}, nil, nil)
	in.classes, in.gateways, in.routes = []*gwv1.GatewayClass{other}, []*gwv1.Gateway{g}, []*gwv1.HTTPRoute{testHTTPRoute("ns", "web", 1, "g", nil, "web")}
	out := translateGateways(in)
	if len(out.classes)+len(out.gateways)+len(out.routes)+len(out.served) != 0 {
		t.Errorf("touched another controller's objects: %+v", out)
	}
}

// TestGatewayStaticAddressConditions: what spec.addresses asks for, in
// the order GatewayStaticAddresses walks it — an address dcm cannot read
// refuses the Gateway; one outside the pool, or more than the one address
// dcm gives, leaves it accepted but not programmed; one of the pool is
// the Gateway's.
func TestGatewayStaticAddressConditions(t *testing.T) {
	invalid := gwv1.AddressType("test/fake-invalid-type")
	for _, tc := range []struct {
		name                 string
		addrs                []gwv1.GatewaySpecAddress
		accepted, programmed string
		addr                 string
	}{
		{"invalid type first", []gwv1.GatewaySpecAddress{{Type: &invalid, Value: "x"}, {Value: "10.0.0.1"}, {Value: "127.0.20.2"}},
			"False/UnsupportedAddress", "", ""},
		{"not an IP", []gwv1.GatewaySpecAddress{{Value: "example.com"}}, "False/UnsupportedAddress", "", ""},
		{"unusable beside usable", []gwv1.GatewaySpecAddress{{Value: "10.0.0.1"}, {Value: "127.0.20.2"}},
			"True/Accepted", "False/AddressNotUsable", ""},
		{"two usable", []gwv1.GatewaySpecAddress{{Value: "127.0.20.1"}, {Value: "127.0.20.2"}},
			"True/Accepted", "False/AddressNotUsable", ""},
		{"usable", []gwv1.GatewaySpecAddress{{Value: "127.0.20.2"}}, "True/Accepted", "True/Programmed", "127.0.20.2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := testGateway("ns", "g", 0, httpListener("http", 18080, ""))
			g.Spec.Addresses = tc.addrs
			in := testInput(nil, nil, nil)
			in.classes, in.gateways = []*gwv1.GatewayClass{testClass()}, []*gwv1.Gateway{g}
			out := translateGateways(in)
			st := out.gateways[types.NamespacedName{Namespace: "ns", Name: "g"}]
			if got := condOf(st.Conditions, "Accepted"); got != tc.accepted {
				t.Errorf("Accepted %s, want %s", got, tc.accepted)
			}
			if got := condOf(st.Conditions, "Programmed"); tc.programmed != "" && got != tc.programmed {
				t.Errorf("Programmed %s, want %s", got, tc.programmed)
			}
			if got := out.addrs[g.UID]; got != tc.addr {
				t.Errorf("address %q, want %q", got, tc.addr)
			}
		})
	}
}
