package kube

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dcm-router/dcm/dcm"
)

func ptr[T any](v T) *T { return &v }

// checkRefusal: refused for this field with this reason, and the message
// people read (events, logs, the portal) is one line of printable ASCII that
// names the field, whatever bytes the value held.
func checkRefusal(t *testing.T, err error, reason, field string) {
	t.Helper()
	if err == nil {
		t.Fatal("accepted")
	}
	var ie *dcm.InvalidError
	if !errors.As(err, &ie) || ie.Reason != reason || ie.Field != field {
		t.Fatalf("refused as %v, want reason %s on field %s", err, reason, field)
	}
	msg := RejectMessage(err)
	if strings.ContainsFunc(msg, func(r rune) bool { return r < 0x20 || r > 0x7e }) || !strings.Contains(msg, field) {
		t.Errorf("message %q: want printable ASCII naming %s", msg, field)
	}
}

// CheckRefusal is checkRefusal for the external tests (injection_test.go):
// they import the injection corpus, which imports this package.
var CheckRefusal = checkRefusal

var (
	prefix   = ptr(networkingv1.PathTypePrefix)
	exact    = ptr(networkingv1.PathTypeExact)
	implSpec = ptr(networkingv1.PathTypeImplementationSpecific)
)

func svcBackend(name, port string) networkingv1.IngressBackend {
	return networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: name, Port: networkingv1.ServiceBackendPort{Name: port}}}
}

func numBackend(name string, port int32) networkingv1.IngressBackend {
	return networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: name, Port: networkingv1.ServiceBackendPort{Number: port}}}
}

func httpRule(host string, paths ...networkingv1.HTTPIngressPath) networkingv1.IngressRule {
	return networkingv1.IngressRule{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{
		HTTP: &networkingv1.HTTPIngressRuleValue{Paths: paths},
	}}
}

func httpPath(p string, t *networkingv1.PathType, b networkingv1.IngressBackend) networkingv1.HTTPIngressPath {
	return networkingv1.HTTPIngressPath{Path: p, PathType: t, Backend: b}
}

// route is the route tests expect for a simple ingress path.
func route(ing, name, host, path string, pt dcm.PathType, svc, port string) dcm.Route {
	return dcm.Route{
		Namespace: "demo", Name: name, Source: dcm.SourceIngress, Object: ing, Kind: dcm.KindHTTP,
		Host: host, Path: path, PathType: pt,
		Services: []dcm.ServiceRef{{Name: svc, Port: port, Weight: 1}},
		Balance:  dcm.BalanceRoundRobin, Check: true,
	}
}

func sortRoutes(rs []dcm.Route) []dcm.Route {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b dcm.Route) int { return strings.Compare(a.Name, b.Name) })
	return rs
}

func TestIngressRoutes(t *testing.T) {
	meta := metav1.ObjectMeta{Namespace: "demo", Name: "web"}
	withAnn := func(ann map[string]string) metav1.ObjectMeta {
		m := meta
		m.Annotations = ann
		return m
	}
	tests := []struct {
		name string
		ing  networkingv1.Ingress
		want []dcm.Route
	}{
		{
			name: "one path keeps the ingress name, host lower-cased, trailing slash dropped",
			ing: networkingv1.Ingress{ObjectMeta: meta, Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{
				httpRule("Shop.Example.COM", httpPath("/api/", prefix, svcBackend("api", "http"))),
			}}},
			want: []dcm.Route{route("web", "web", "shop.example.com", "/api", dcm.PathPrefix, "api", "http")},
		},
		{
			name: "empty path is / and numeric port is kept as a number",
			ing: networkingv1.Ingress{ObjectMeta: meta, Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{
				httpRule("", httpPath("", implSpec, numBackend("api", 8080))),
			}}},
			want: []dcm.Route{route("web", "web", "", "/", dcm.PathPrefix, "api", "8080")},
		},
		{
			name: "hosts x paths get hashed names; Exact and ImplementationSpecific",
			ing: networkingv1.Ingress{ObjectMeta: meta, Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{
				httpRule("a.example.com",
					httpPath("/", prefix, svcBackend("front", "http")),
					httpPath("/login", exact, svcBackend("auth", "http"))),
				httpRule("b.example.com", httpPath("/static", implSpec, numBackend("cdn", 80))),
			}}},
			want: sortRoutes([]dcm.Route{
				route("web", RouteName("web", "a.example.com", "/", dcm.PathPrefix), "a.example.com", "/", dcm.PathPrefix, "front", "http"),
				route("web", RouteName("web", "a.example.com", "/login", dcm.PathExact), "a.example.com", "/login", dcm.PathExact, "auth", "http"),
				route("web", RouteName("web", "b.example.com", "/static", dcm.PathPrefix), "b.example.com", "/static", dcm.PathPrefix, "cdn", "80"),
			}),
		},
		{
			name: "default backend alone",
			ing:  networkingv1.Ingress{ObjectMeta: meta, Spec: networkingv1.IngressSpec{DefaultBackend: ptr(svcBackend("fallback", "http"))}},
			want: []dcm.Route{route("web", "web", "", "/", dcm.PathPrefix, "fallback", "http")},
		},
		{
			name: "default backend next to rules",
			ing: networkingv1.Ingress{ObjectMeta: meta, Spec: networkingv1.IngressSpec{
				DefaultBackend: ptr(svcBackend("fallback", "http")),
				Rules:          []networkingv1.IngressRule{httpRule("a.example.com", httpPath("/", prefix, svcBackend("front", "http")))},
			}},
			want: sortRoutes([]dcm.Route{
				route("web", RouteName("web", "", "/", dcm.PathPrefix), "", "/", dcm.PathPrefix, "fallback", "http"),
				route("web", RouteName("web", "a.example.com", "/", dcm.PathPrefix), "a.example.com", "/", dcm.PathPrefix, "front", "http"),
			}),
		},
		{
			name: "a catch-all rule shadows the default backend",
			ing: networkingv1.Ingress{ObjectMeta: meta, Spec: networkingv1.IngressSpec{
				DefaultBackend: ptr(svcBackend("fallback", "http")),
				Rules:          []networkingv1.IngressRule{httpRule("", httpPath("/", prefix, svcBackend("front", "http")))},
			}},
			want: []dcm.Route{route("web", "web", "", "/", dcm.PathPrefix, "front", "http")},
		},
		{
			name: "the same path twice to the same service is one route",
			ing: networkingv1.Ingress{ObjectMeta: meta, Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{
				httpRule("a.example.com", httpPath("/x", prefix, svcBackend("s", "http"))),
				httpRule("A.example.com", httpPath("/x/", prefix, svcBackend("s", "http"))),
			}}},
			want: []dcm.Route{route("web", "web", "a.example.com", "/x", dcm.PathPrefix, "s", "http")},
		},
		{
			name: "rule without http yields nothing",
			ing: networkingv1.Ingress{ObjectMeta: meta, Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{
				{Host: "a.example.com"},
			}}},
			want: []dcm.Route{},
		},
		{
			name: "annotations: balance and health check",
			ing: networkingv1.Ingress{ObjectMeta: withAnn(map[string]string{AnnotationBalance: "leastconn", AnnotationHealthCheck: "false"}),
				Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{
					httpRule("a.example.com", httpPath("/", prefix, svcBackend("s", "http"))),
				}}},
			want: func() []dcm.Route {
				r := route("web", "web", "a.example.com", "/", dcm.PathPrefix, "s", "http")
				r.Balance, r.Check = dcm.BalanceLeastConn, false
				return []dcm.Route{r}
			}(),
		},
		{
			name: "ssl-passthrough: whole hosts, passed through",
			ing: networkingv1.Ingress{ObjectMeta: withAnn(map[string]string{AnnotationSSLPassthrough: "true"}),
				Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{
					httpRule("DB.example.com", httpPath("/", ptr(networkingv1.PathTypeImplementationSpecific), svcBackend("db", "tls"))),
				}}},
			want: func() []dcm.Route {
				r := route("web", "web", "db.example.com", "/", dcm.PathPrefix, "db", "tls")
				r.Kind, r.Insecure, r.Balance = dcm.KindPassthrough, dcm.InsecureNone, dcm.BalanceSource
				return []dcm.Route{r}
			}(),
		},
		{
			name: "ssl-passthrough with ssl-redirect: plain HTTP redirected",
			ing: networkingv1.Ingress{ObjectMeta: withAnn(map[string]string{AnnotationSSLPassthrough: "true", AnnotationSSLRedirect: "true", AnnotationSSLRedirectCode: "308"}),
				Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{
					httpRule("db.example.com", httpPath("/", prefix, svcBackend("db", "tls"))),
				}}},
			want: func() []dcm.Route {
				r := route("web", "web", "db.example.com", "/", dcm.PathPrefix, "db", "tls")
				r.Kind, r.Insecure, r.RedirectCode, r.Balance = dcm.KindPassthrough, dcm.InsecureRedirect, 308, dcm.BalanceSource
				return []dcm.Route{r}
			}(),
		},
		{
			name: "ssl-passthrough false: plain routes",
			ing: networkingv1.Ingress{ObjectMeta: withAnn(map[string]string{AnnotationSSLPassthrough: "false"}),
				Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{
					httpRule("a.example.com", httpPath("/", prefix, svcBackend("s", "http"))),
				}}},
			want: []dcm.Route{route("web", "web", "a.example.com", "/", dcm.PathPrefix, "s", "http")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := IngressRoutes(&tt.ing)
			if err != nil {
				t.Fatalf("IngressRoutes: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("routes\n got %+v\nwant %+v", got, tt.want)
			}
			for _, r := range got {
				if err := dcm.ValidateRoute(r); err != nil {
					t.Errorf("route %s does not validate: %v", r.Name, err)
				}
			}
		})
	}
}

// Names depend on what a route matches, not on where it is written.
func TestIngressRoutesStableNames(t *testing.T) {
	paths := []networkingv1.HTTPIngressPath{
		httpPath("/a", prefix, svcBackend("s", "http")),
		httpPath("/b", exact, svcBackend("s", "http")),
		httpPath("/c", prefix, svcBackend("t", "http")),
	}
	mk := func(ps []networkingv1.HTTPIngressPath) *networkingv1.Ingress {
		return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web"},
			Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{httpRule("x.example.com", ps...)}}}
	}
	a, err := IngressRoutes(mk(paths))
	if err != nil {
		t.Fatal(err)
	}
	b, err := IngressRoutes(mk([]networkingv1.HTTPIngressPath{paths[2], paths[0], paths[1]}))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("reordering paths changed routes:\n%+v\n%+v", a, b)
	}
	for _, r := range a {
		if !strings.HasPrefix(r.Name, "web-") || len(r.Name) != len("web-")+8 {
			t.Errorf("route name %q: want web-<8 hex>", r.Name)
		}
	}
}

func TestIngressRoutesRejected(t *testing.T) {
	meta := metav1.ObjectMeta{Namespace: "demo", Name: "web"}
	one := func(host, path string, b networkingv1.IngressBackend) networkingv1.IngressSpec {
		return networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{
			httpRule("ok.example.com", httpPath("/fine", prefix, svcBackend("s", "http"))),
			httpRule(host, httpPath(path, prefix, b)),
		}}
	}
	ok := svcBackend("s", "http")
	tests := []struct {
		name   string
		meta   metav1.ObjectMeta
		spec   networkingv1.IngressSpec
		reason string
		// inMessage must appear in the message: field path and %q-quoted value.
		inMessage string
	}{
		{"semicolon in path", meta, one("a.example.com", "/a;b", ok), dcm.RejectInvalidPath, `spec.rules[1].http.paths[0].path "/a;b"`},
		{"newline in path", meta, one("a.example.com", "/a\nb", ok), dcm.RejectInvalidPath, `spec.rules[1].http.paths[0].path "/a\nb"`},
		{"space in path", meta, one("a.example.com", "/a b", ok), dcm.RejectInvalidPath, `"/a b"`},
		{"hash in path", meta, one("a.example.com", "/a#b", ok), dcm.RejectInvalidPath, `"/a#b"`},
		{"non-ASCII in path", meta, one("a.example.com", "/caf\u00e9", ok), dcm.RejectInvalidPath, `"/caf\u00e9"`},
		{"NUL in path", meta, one("a.example.com", "/a\x00", ok), dcm.RejectInvalidPath, `"/a\x00"`},
		{"relative path", meta, one("a.example.com", "api", ok), dcm.RejectInvalidPath, `"api"`},
		{"space in host", meta, one("a .example.com", "/", ok), dcm.RejectInvalidHost, `spec.rules[1].host "a .example.com"`},
		{"semicolon in host", meta, one("a;b.example.com", "/", ok), dcm.RejectInvalidHost, `"a;b.example.com"`},
		{"non-ASCII host", meta, one("b\u00fccher.example", "/", ok), dcm.RejectInvalidHost, `"b\u00fccher.example"`},
		{"wildcard host of a top-level domain", meta, one("*.com", "/", ok), dcm.RejectInvalidHost, `"*.com"`},
		{"hostile service name", meta, one("a.example.com", "/", svcBackend("s;x", "http")), dcm.RejectInvalidName, `backend.service.name "s;x"`},
		{"hostile port name", meta, one("a.example.com", "/", svcBackend("s", "ht tp")), dcm.RejectInvalidPort, `port.name "ht tp"`},
		{"port zero", meta, one("a.example.com", "/", numBackend("s", 0)), dcm.RejectInvalidPort, `port.number "0"`},
		{"resource backend", meta, one("a.example.com", "/", networkingv1.IngressBackend{
			Resource: &corev1.TypedLocalObjectReference{APIGroup: ptr("k8s.example.com"), Kind: "Bucket", Name: "static"}}),
			dcm.RejectUnsupported, `backend.resource "Bucket/static"`},
		{"resource default backend", meta, networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{
			Resource: &corev1.TypedLocalObjectReference{Kind: "Bucket", Name: "static"}}},
			dcm.RejectUnsupported, `spec.defaultBackend.resource`},
		{"unknown path type", meta, networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{
			httpRule("a.example.com", httpPath("/", ptr(networkingv1.PathType("Regex")), ok))}},
			dcm.RejectInvalidPath, `pathType "Regex"`},
		{"bad balance annotation", metav1.ObjectMeta{Namespace: "demo", Name: "web", Annotations: map[string]string{AnnotationBalance: "source; x"}},
			one("a.example.com", "/", ok), dcm.RejectInvalidValue, `metadata.annotations[dcm.io/balance] "source; x"`},
		{"bad health-check annotation", metav1.ObjectMeta{Namespace: "demo", Name: "web", Annotations: map[string]string{AnnotationHealthCheck: "sometimes"}},
			one("a.example.com", "/", ok), dcm.RejectInvalidValue, `"sometimes"`},
		{"same path to two services", meta, networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{
			httpRule("a.example.com", httpPath("/x", prefix, svcBackend("s", "http")), httpPath("/x", prefix, svcBackend("t", "http")))}},
			dcm.RejectConflict, `spec.rules[0].http.paths[1]`},
		{"bad ssl-passthrough annotation", metav1.ObjectMeta{Namespace: "demo", Name: "web", Annotations: map[string]string{AnnotationSSLPassthrough: "yes\nplease"}},
			one("a.example.com", "/", ok), dcm.RejectInvalidValue, `metadata.annotations[dcm.io/ssl-passthrough] "yes\nplease"`},
		{"bad ssl-redirect annotation", metav1.ObjectMeta{Namespace: "demo", Name: "web", Annotations: map[string]string{AnnotationSSLRedirect: "always"}},
			one("a.example.com", "/", ok), dcm.RejectInvalidValue, `metadata.annotations[dcm.io/ssl-redirect] "always"`},
		{"bad ssl-redirect-code annotation", metav1.ObjectMeta{Namespace: "demo", Name: "web", Annotations: map[string]string{AnnotationSSLRedirectCode: "200"}},
			one("a.example.com", "/", ok), dcm.RejectInvalidValue, `metadata.annotations[dcm.io/ssl-redirect-code] "200"`},
		{"padded ssl-redirect-code annotation", metav1.ObjectMeta{Namespace: "demo", Name: "web", Annotations: map[string]string{AnnotationSSLRedirectCode: "+301"}},
			one("a.example.com", "/", ok), dcm.RejectInvalidValue, `metadata.annotations[dcm.io/ssl-redirect-code] "+301"`},
		{"ssl-passthrough with a path", metav1.ObjectMeta{Namespace: "demo", Name: "web", Annotations: map[string]string{AnnotationSSLPassthrough: "true"}},
			networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{
				httpRule("a.example.com", httpPath("/", prefix, ok)), httpRule("b.example.com", httpPath("/api", prefix, ok))}},
			dcm.RejectUnsupported, `spec.rules[1].http.paths[0].path "passthrough with path /api"`},
		{"ssl-passthrough without a host", metav1.ObjectMeta{Namespace: "demo", Name: "web", Annotations: map[string]string{AnnotationSSLPassthrough: "true"}},
			networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{httpRule("", httpPath("/", prefix, ok))}},
			dcm.RejectUnsupported, `passthrough without a host`},
		{"ssl-passthrough with spec.tls", metav1.ObjectMeta{Namespace: "demo", Name: "web", Annotations: map[string]string{AnnotationSSLPassthrough: "true"}},
			networkingv1.IngressSpec{TLS: []networkingv1.IngressTLS{{Hosts: []string{"a.example.com"}, SecretName: "a-tls"}},
				Rules: []networkingv1.IngressRule{httpRule("a.example.com", httpPath("/", prefix, ok))}},
			dcm.RejectUnsupported, `spec.tls`},
		{"sticky ssl-passthrough", metav1.ObjectMeta{Namespace: "demo", Name: "web", Annotations: map[string]string{AnnotationSSLPassthrough: "true", AnnotationSticky: "true"}},
			networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{httpRule("a.example.com", httpPath("/", prefix, ok))}},
			dcm.RejectUnsupported, `metadata.annotations[dcm.io/sticky] "with dcm.io/ssl-passthrough"`},
		{"route name too long", metav1.ObjectMeta{Namespace: "demo", Name: strings.Repeat("a", 250)},
			one("a.example.com", "/", ok), dcm.RejectInvalidName, `route name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			routes, err := IngressRoutes(&networkingv1.Ingress{ObjectMeta: tt.meta, Spec: tt.spec})
			if err == nil {
				t.Fatalf("accepted, want rejection %s: %+v", tt.reason, routes)
			}
			if routes != nil {
				t.Errorf("got routes with the error: %+v", routes)
			}
			var ie *dcm.InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("error %v is not a *dcm.InvalidError", err)
			}
			if got := RejectReason(err); got != tt.reason {
				t.Errorf("reason %q, want %q (%v)", got, tt.reason, err)
			}
			if !strings.Contains(RejectMessage(err), tt.inMessage) {
				t.Errorf("message %q does not contain %q", RejectMessage(err), tt.inMessage)
			}
		})
	}
}

func TestMatchesClass(t *testing.T) {
	tests := []struct {
		name      string
		className *string
		ann       string
		class     string
		want      bool
	}{
		{"no filter serves all", nil, "", "", true},
		{"no filter serves other classes", ptr("nginx"), "", "", true},
		{"spec class matches", ptr("dcm"), "", "dcm", true},
		{"spec class differs", ptr("nginx"), "", "dcm", false},
		{"annotation matches", nil, "dcm", "dcm", true},
		{"annotation differs", nil, "nginx", "dcm", false},
		{"spec wins over annotation", ptr("nginx"), "dcm", "dcm", false},
		{"no class at all", nil, "", "dcm", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ing := &networkingv1.Ingress{Spec: networkingv1.IngressSpec{IngressClassName: tt.className}}
			if tt.ann != "" {
				ing.Annotations = map[string]string{AnnotationIngressClass: tt.ann}
			}
			if got := MatchesClass(ing, tt.class); got != tt.want {
				t.Errorf("MatchesClass = %v, want %v", got, tt.want)
			}
		})
	}
}

// --- endpoints -------------------------------------------------------------

func service(name string, families []corev1.IPFamily, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name},
		Spec:       corev1.ServiceSpec{Ports: ports, IPFamilies: families},
	}
}

var (
	v4        = []corev1.IPFamily{corev1.IPv4Protocol}
	v6        = []corev1.IPFamily{corev1.IPv6Protocol}
	dualV4    = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	httpPort  = corev1.ServicePort{Name: "http", Port: 80, TargetPort: intstr.FromString("web")}
	adminPort = corev1.ServicePort{Name: "admin", Port: 9000, TargetPort: intstr.FromInt32(9090)}
)

type epSpec struct {
	pod         string // "" = no targetRef
	addr        string
	ready       *bool
	serving     *bool
	terminating *bool
}

func slice(name string, at discoveryv1.AddressType, ports map[string]int32, eps ...epSpec) *discoveryv1.EndpointSlice {
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name,
			Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: at,
	}
	for _, n := range slices.Sorted(maps.Keys(ports)) {
		sl.Ports = append(sl.Ports, discoveryv1.EndpointPort{Name: ptr(n), Port: ptr(ports[n]), Protocol: ptr(corev1.ProtocolTCP)})
	}
	for _, e := range eps {
		ep := discoveryv1.Endpoint{Addresses: []string{e.addr}, Conditions: discoveryv1.EndpointConditions{
			Ready: e.ready, Serving: e.serving, Terminating: e.terminating}}
		if e.pod != "" {
			ep.TargetRef = &corev1.ObjectReference{Kind: "Pod", Namespace: "demo", Name: e.pod}
		}
		sl.Endpoints = append(sl.Endpoints, ep)
	}
	return sl
}

func ready(pod, addr string) epSpec { return epSpec{pod: pod, addr: addr, ready: ptr(true)} }

func ep(pod, port, addr string, p int, st dcm.AdminState) dcm.Endpoint {
	return dcm.Endpoint{Name: dcm.ServerName(pod, port, addr, p), Addr: addr, Port: p, Weight: 1, State: st, Pod: pod}
}

func TestServiceEndpoints(t *testing.T) {
	f, tr := ptr(false), ptr(true)
	tests := []struct {
		name   string
		svc    *corev1.Service
		slices []*discoveryv1.EndpointSlice
		port   string
		want   []dcm.Endpoint
	}{
		{
			name: "named target port, route by port name",
			svc:  service("web", v4, httpPort),
			slices: []*discoveryv1.EndpointSlice{slice("web-a", discoveryv1.AddressTypeIPv4, map[string]int32{"http": 8080},
				ready("web-1", "10.0.0.2"), ready("web-0", "10.0.0.1"))},
			port: "http",
			want: []dcm.Endpoint{ep("web-0", "http", "10.0.0.1", 8080, dcm.StateReady), ep("web-1", "http", "10.0.0.2", 8080, dcm.StateReady)},
		},
		{
			name: "route by service port number, numeric target port",
			svc:  service("web", v4, httpPort, adminPort),
			slices: []*discoveryv1.EndpointSlice{slice("web-a", discoveryv1.AddressTypeIPv4, map[string]int32{"http": 8080, "admin": 9090},
				ready("web-0", "10.0.0.1"))},
			port: "9000",
			want: []dcm.Endpoint{ep("web-0", "admin", "10.0.0.1", 9090, dcm.StateReady)},
		},
		{
			name:   "single unnamed port",
			svc:    service("web", v4, corev1.ServicePort{Port: 80, TargetPort: intstr.FromInt32(8080)}),
			slices: []*discoveryv1.EndpointSlice{slice("web-a", discoveryv1.AddressTypeIPv4, map[string]int32{"": 8080}, ready("web-0", "10.0.0.1"))},
			port:   "80",
			want:   []dcm.Endpoint{ep("web-0", "", "10.0.0.1", 8080, dcm.StateReady)},
		},
		{
			name:   "unknown port gives no endpoints",
			svc:    service("web", v4, httpPort),
			slices: []*discoveryv1.EndpointSlice{slice("web-a", discoveryv1.AddressTypeIPv4, map[string]int32{"http": 8080}, ready("web-0", "10.0.0.1"))},
			port:   "grpc",
			want:   nil,
		},
		{
			name:   "missing service gives no endpoints",
			svc:    nil,
			slices: []*discoveryv1.EndpointSlice{slice("web-a", discoveryv1.AddressTypeIPv4, map[string]int32{"http": 8080}, ready("web-0", "10.0.0.1"))},
			port:   "http",
			want:   nil,
		},
		{
			name: "slice without the port is skipped",
			svc:  service("web", v4, httpPort),
			slices: []*discoveryv1.EndpointSlice{
				slice("web-a", discoveryv1.AddressTypeIPv4, map[string]int32{"metrics": 9100}, ready("web-9", "10.0.0.9")),
				slice("web-b", discoveryv1.AddressTypeIPv4, map[string]int32{"http": 8080}, ready("web-0", "10.0.0.1")),
			},
			port: "http",
			want: []dcm.Endpoint{ep("web-0", "http", "10.0.0.1", 8080, dcm.StateReady)},
		},
		{
			name: "conditions: nil is ready; terminating and serving drains; not ready or terminating without serving is maint",
			svc:  service("web", v4, httpPort),
			slices: []*discoveryv1.EndpointSlice{slice("web-a", discoveryv1.AddressTypeIPv4, map[string]int32{"http": 8080},
				epSpec{pod: "p-nil", addr: "10.0.0.1"},
				epSpec{pod: "p-drain", addr: "10.0.0.2", ready: f, serving: tr, terminating: tr},
				epSpec{pod: "p-notready", addr: "10.0.0.3", ready: f, serving: f},
				epSpec{pod: "p-gone", addr: "10.0.0.4", ready: f, serving: f, terminating: tr},
				epSpec{pod: "p-serving", addr: "10.0.0.5", ready: f, serving: tr},
			)},
			port: "http",
			want: []dcm.Endpoint{
				ep("p-drain", "http", "10.0.0.2", 8080, dcm.StateDrain),
				ep("p-gone", "http", "10.0.0.4", 8080, dcm.StateMaint),
				ep("p-nil", "http", "10.0.0.1", 8080, dcm.StateReady),
				ep("p-notready", "http", "10.0.0.3", 8080, dcm.StateMaint),
				ep("p-serving", "http", "10.0.0.5", 8080, dcm.StateMaint),
			},
		},
		{
			name: "endpoint without pod is named by address",
			svc:  service("web", v4, httpPort),
			slices: []*discoveryv1.EndpointSlice{slice("web-a", discoveryv1.AddressTypeIPv4, map[string]int32{"http": 8080},
				epSpec{addr: "192.168.1.10"})},
			port: "http",
			want: []dcm.Endpoint{{Name: "ip-192.168.1.10:http", Addr: "192.168.1.10", Port: 8080, Weight: 1, State: dcm.StateReady}},
		},
		{
			name: "IPv4 service ignores IPv6 slices",
			svc:  service("web", dualV4, httpPort),
			slices: []*discoveryv1.EndpointSlice{
				slice("web-v6", discoveryv1.AddressTypeIPv6, map[string]int32{"http": 8080}, ready("web-0", "fd00::1")),
				slice("web-v4", discoveryv1.AddressTypeIPv4, map[string]int32{"http": 8080}, ready("web-0", "10.0.0.1")),
			},
			port: "http",
			want: []dcm.Endpoint{ep("web-0", "http", "10.0.0.1", 8080, dcm.StateReady)},
		},
		{
			name: "IPv6 service uses IPv6 slices only",
			svc:  service("web", v6, httpPort),
			slices: []*discoveryv1.EndpointSlice{
				slice("web-v6", discoveryv1.AddressTypeIPv6, map[string]int32{"http": 8080}, epSpec{addr: "fd00::1"}),
				slice("web-v4", discoveryv1.AddressTypeIPv4, map[string]int32{"http": 8080}, epSpec{addr: "10.0.0.1"}),
			},
			port: "http",
			want: []dcm.Endpoint{{Name: "ip-fd00--1:http", Addr: "fd00::1", Port: 8080, Weight: 1, State: dcm.StateReady}},
		},
		{
			name: "no family: both accepted, a pod in both keeps IPv4 with its best state",
			svc:  service("web", nil, httpPort),
			slices: []*discoveryv1.EndpointSlice{
				slice("web-v6", discoveryv1.AddressTypeIPv6, map[string]int32{"http": 8080},
					ready("web-0", "fd00::1"), ready("web-6only", "fd00::6")),
				slice("web-v4", discoveryv1.AddressTypeIPv4, map[string]int32{"http": 8080},
					epSpec{pod: "web-0", addr: "10.0.0.1", ready: f, serving: f}),
			},
			port: "http",
			want: []dcm.Endpoint{ep("web-0", "http", "10.0.0.1", 8080, dcm.StateReady), ep("web-6only", "http", "fd00::6", 8080, dcm.StateReady)},
		},
		{
			name: "FQDN slices are never used",
			svc:  service("web", nil, httpPort),
			slices: []*discoveryv1.EndpointSlice{
				slice("web-fqdn", discoveryv1.AddressTypeFQDN, map[string]int32{"http": 8080}, epSpec{addr: "db.example.com"}),
			},
			port: "http",
			want: []dcm.Endpoint{},
		},
		{
			name: "duplicates across slices during handoff keep the best state",
			svc:  service("web", v4, httpPort),
			slices: []*discoveryv1.EndpointSlice{
				slice("web-old", discoveryv1.AddressTypeIPv4, map[string]int32{"http": 8080},
					epSpec{pod: "web-0", addr: "10.0.0.1", ready: f, serving: f},
					epSpec{pod: "web-1", addr: "10.0.0.2", ready: f, serving: tr, terminating: tr}),
				slice("web-new", discoveryv1.AddressTypeIPv4, map[string]int32{"http": 8080},
					ready("web-0", "10.0.0.1"),
					epSpec{pod: "web-1", addr: "10.0.0.2", ready: f, serving: f, terminating: tr},
					ready("web-2", "10.0.0.3")),
				slice("web-third", discoveryv1.AddressTypeIPv4, map[string]int32{"http": 8080}, ready("web-2", "10.0.0.3")),
			},
			port: "http",
			want: []dcm.Endpoint{
				ep("web-0", "http", "10.0.0.1", 8080, dcm.StateReady),
				ep("web-1", "http", "10.0.0.2", 8080, dcm.StateDrain),
				ep("web-2", "http", "10.0.0.3", 8080, dcm.StateReady),
			},
		},
		{
			name: "the same address with and without targetRef is one server",
			svc:  service("web", v4, httpPort),
			slices: []*discoveryv1.EndpointSlice{
				slice("web-a", discoveryv1.AddressTypeIPv4, map[string]int32{"http": 8080}, epSpec{addr: "10.0.0.1"}),
				slice("web-b", discoveryv1.AddressTypeIPv4, map[string]int32{"http": 8080}, ready("web-0", "10.0.0.1")),
			},
			port: "http",
			want: []dcm.Endpoint{ep("web-0", "http", "10.0.0.1", 8080, dcm.StateReady)},
		},
		{
			name: "a hostile slice is skipped, the others serve",
			svc:  service("web", v4, httpPort),
			slices: []*discoveryv1.EndpointSlice{
				slice("web-bad", discoveryv1.AddressTypeIPv4, map[string]int32{"http": 8080}, ready("evil;pod", "10.0.0.66")),
				slice("web-good", discoveryv1.AddressTypeIPv4, map[string]int32{"http": 8080}, ready("web-0", "10.0.0.1")),
			},
			port: "http",
			want: []dcm.Endpoint{ep("web-0", "http", "10.0.0.1", 8080, dcm.StateReady)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ServiceEndpoints(tt.svc, tt.slices, tt.port)
			if len(got) != 0 || len(tt.want) != 0 {
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("endpoints\n got %+v\nwant %+v", got, tt.want)
				}
			}
			for _, e := range got {
				if err := dcm.ValidateEndpoint(e); err != nil {
					t.Errorf("endpoint %s does not validate: %v", e.Name, err)
				}
			}
			// The answer must not depend on the order slices are listed in.
			rev := slices.Clone(tt.slices)
			slices.Reverse(rev)
			if again := ServiceEndpoints(tt.svc, rev, tt.port); !slices.Equal(again, got) {
				t.Errorf("slice order changed the result:\n%+v\n%+v", got, again)
			}
		})
	}
}

func TestValidateEndpointSlice(t *testing.T) {
	good := func() *discoveryv1.EndpointSlice {
		return slice("web-a", discoveryv1.AddressTypeIPv4, map[string]int32{"http": 8080}, ready("web-0", "10.0.0.1"))
	}
	tests := []struct {
		name   string
		mutate func(*discoveryv1.EndpointSlice)
		reason string // "" = valid
		field  string
	}{
		{"valid", func(*discoveryv1.EndpointSlice) {}, "", ""},
		{"FQDN is not checked (never used)", func(s *discoveryv1.EndpointSlice) {
			s.AddressType = discoveryv1.AddressTypeFQDN
			s.Endpoints[0].Addresses[0] = "x;y"
		}, "", ""},
		{"pod name with ;", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].TargetRef.Name = "web;0" }, dcm.RejectInvalidName, "endpoints[0].targetRef.name"},
		{"pod name with newline", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].TargetRef.Name = "web\n0" }, dcm.RejectInvalidName, "endpoints[0].targetRef.name"},
		{"pod name with space", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].TargetRef.Name = "web 0" }, dcm.RejectInvalidName, "endpoints[0].targetRef.name"},
		{"pod name with #", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].TargetRef.Name = "web#0" }, dcm.RejectInvalidName, "endpoints[0].targetRef.name"},
		{"pod name non-ASCII", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].TargetRef.Name = "w\u00e9b-0" }, dcm.RejectInvalidName, "endpoints[0].targetRef.name"},
		{"non-pod targetRef name is not used", func(s *discoveryv1.EndpointSlice) {
			s.Endpoints[0].TargetRef = &corev1.ObjectReference{Kind: "Node", Name: "what ever"}
		}, "", ""},
		{"port name with ;", func(s *discoveryv1.EndpointSlice) { s.Ports[0].Name = ptr("ht;tp") }, dcm.RejectInvalidPort, "ports[0].name"},
		{"port name with space", func(s *discoveryv1.EndpointSlice) { s.Ports[0].Name = ptr("ht tp") }, dcm.RejectInvalidPort, "ports[0].name"},
		{"port name with newline", func(s *discoveryv1.EndpointSlice) { s.Ports[0].Name = ptr("http\n") }, dcm.RejectInvalidPort, "ports[0].name"},
		{"port zero", func(s *discoveryv1.EndpointSlice) { s.Ports[0].Port = ptr(int32(0)) }, dcm.RejectInvalidPort, "ports[0].port"},
		{"address with ;", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses[0] = "10.0.0.1;x" }, dcm.RejectInvalidAddress, "endpoints[0].addresses[0]"},
		{"address with space", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses[0] = "10.0.0.1 " }, dcm.RejectInvalidAddress, "endpoints[0].addresses[0]"},
		{"address with #", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses[0] = "10.0.0.1#" }, dcm.RejectInvalidAddress, "endpoints[0].addresses[0]"},
		{"address hostname", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses[0] = "evil.example.com" }, dcm.RejectInvalidAddress, "endpoints[0].addresses[0]"},
		{"IPv6 address in IPv4 slice", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses[0] = "fd00::1" }, dcm.RejectInvalidAddress, "endpoints[0].addresses[0]"},
		{"zone in IPv6 address", func(s *discoveryv1.EndpointSlice) {
			s.AddressType = discoveryv1.AddressTypeIPv6
			s.Endpoints[0].Addresses[0] = "fe80::1%eth0"
		}, dcm.RejectInvalidAddress, "endpoints[0].addresses[0]"},
		{"second address hostile", func(s *discoveryv1.EndpointSlice) {
			s.Endpoints[0].Addresses = append(s.Endpoints[0].Addresses, "10.0.0.2\n")
		}, dcm.RejectInvalidAddress, "endpoints[0].addresses[1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := good()
			tt.mutate(s)
			err := ValidateEndpointSlice(s)
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, want %s", tt.reason)
			}
			var ie *dcm.InvalidError
			if !errors.As(err, &ie) || ie.Reason != tt.reason || ie.Field != tt.field {
				t.Errorf("got %v, want reason %s field %s", err, tt.reason, tt.field)
			}
		})
	}
}

func TestWorkload(t *testing.T) {
	pods := func(names ...string) []*discoveryv1.EndpointSlice {
		var eps []epSpec
		for i, n := range names {
			eps = append(eps, ready(n, "10.0.0."+string(rune('1'+i))))
		}
		return []*discoveryv1.EndpointSlice{slice("s", discoveryv1.AddressTypeIPv4, map[string]int32{"http": 80}, eps...)}
	}
	annotated := func(v string) *corev1.Service {
		s := service("web", v4, httpPort)
		s.Annotations = map[string]string{AnnotationWorkload: v}
		return s
	}
	tests := []struct {
		name    string
		svc     *corev1.Service
		slices  []*discoveryv1.EndpointSlice
		want    *dcm.WorkloadRef
		wantErr bool
	}{
		{"annotation", annotated("StatefulSet/db"), pods("web-7d9f8c6b5-abcde"), &dcm.WorkloadRef{Kind: WorkloadStatefulSet, Name: "db"}, false},
		{"annotation kind is case-insensitive", annotated("deployment/web"), nil, &dcm.WorkloadRef{Kind: WorkloadDeployment, Name: "web"}, false},
		{"annotation unsupported kind", annotated("Job/x"), nil, nil, true},
		{"annotation hostile name", annotated("Deployment/x;y"), nil, nil, true},
		{"annotation without slash", annotated("web"), nil, nil, true},
		{"deployment pods", service("web", v4, httpPort), pods("web-api-7d9f8c6b5-abcde", "web-api-7d9f8c6b5-x2z9q", "web-api-5c4b9d8f7-mn8pq"),
			&dcm.WorkloadRef{Kind: WorkloadDeployment, Name: "web-api"}, false},
		{"statefulset pods", service("web", v4, httpPort), pods("db-0", "db-1", "db-12"), &dcm.WorkloadRef{Kind: WorkloadStatefulSet, Name: "db"}, false},
		{"mixed owners", service("web", v4, httpPort), pods("web-7d9f8c6b5-abcde", "other-7d9f8c6b5-abcde"), nil, false},
		{"mixed kinds", service("web", v4, httpPort), pods("web-7d9f8c6b5-abcde", "web-0"), nil, false},
		{"odd names", service("web", v4, httpPort), pods("hand-made"), nil, false},
		{"no pods", service("web", v4, httpPort), nil, nil, false},
		{"leading zero is not an ordinal", service("web", v4, httpPort), pods("db-01"), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Workload(tt.svc, tt.slices)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v, wantErr %v", err, tt.wantErr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestEndpointState(t *testing.T) {
	f, tr := ptr(false), ptr(true)
	tests := []struct {
		c    discoveryv1.EndpointConditions
		want dcm.AdminState
	}{
		{discoveryv1.EndpointConditions{}, dcm.StateReady},
		{discoveryv1.EndpointConditions{Ready: tr, Serving: tr, Terminating: f}, dcm.StateReady},
		{discoveryv1.EndpointConditions{Ready: f, Terminating: tr}, dcm.StateDrain}, // serving nil = true
		{discoveryv1.EndpointConditions{Ready: f, Serving: tr, Terminating: tr}, dcm.StateDrain},
		{discoveryv1.EndpointConditions{Ready: f, Serving: f, Terminating: tr}, dcm.StateMaint},
		{discoveryv1.EndpointConditions{Ready: f}, dcm.StateMaint},
	}
	for i, tt := range tests {
		if got := EndpointState(tt.c); got != tt.want {
			t.Errorf("%d: EndpointState(%+v) = %s, want %s", i, tt.c, got, tt.want)
		}
	}
}
