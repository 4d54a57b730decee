package kube

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

// osRoute is a valid Route of host to web (port name http), edited by edit.
func osRoute(name, host string, edit func(spec map[string]any)) *unstructured.Unstructured {
	spec := map[string]any{
		"host": host, "path": "",
		"to":   map[string]any{"kind": "Service", "name": "web", "weight": int64(100)},
		"port": map[string]any{"targetPort": "http"},
	}
	if edit != nil {
		edit(spec)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "route.openshift.io/v1", "kind": "Route",
		"metadata": map[string]any{"namespace": "demo", "name": name, "annotations": map[string]any{}},
		"spec":     spec,
	}}
}

func TestRouteFromOpenShift(t *testing.T) {
	destCA := testkit.NewCA(t)
	destVersion, err := ParseCA(destCA.CertPEM())
	if err != nil {
		t.Fatal(err)
	}
	base := dcm.Route{Namespace: "demo", Name: "route_web", Source: dcm.SourceRoute, Object: "web", Kind: dcm.KindHTTP,
		Host: "web.example.com", Path: "/", PathType: dcm.PathPrefix, Balance: dcm.BalanceRoundRobin, Check: true, Sticky: true,
		Services: []dcm.ServiceRef{{Name: "web", Port: "http", Weight: 100}}}
	with := func(f func(r *dcm.Route)) dcm.Route {
		r := base
		r.Services = slices.Clone(base.Services)
		f(&r)
		return r
	}
	alt := func(name string, w any) map[string]any {
		m := map[string]any{"kind": "Service", "name": name}
		if w != nil {
			m["weight"] = w
		}
		return m
	}
	for _, tc := range []struct {
		name  string
		host  string
		ann   map[string]string
		opts  RouteOptions
		edit  func(spec map[string]any)
		want  dcm.Route
		field string // of the refusal; "" when served
		why   string
	}{
		{name: "plain", host: "web.example.com", want: base},
		{name: "host lower-cased, path normalized", host: "Web.Example.COM",
			edit: func(s map[string]any) { s["path"] = "/api/" },
			want: with(func(r *dcm.Route) { r.Path = "/api" })},
		{name: "no host without a subdomain", host: "", field: "spec.host", why: dcm.RejectUnsupported},
		{name: "no host: name-namespace.subdomain", host: "", opts: RouteOptions{Subdomain: "apps.example.com"},
			want: with(func(r *dcm.Route) { r.Host = "web-demo.apps.example.com" })},
		{name: "spec.subdomain", host: "", opts: RouteOptions{Subdomain: "apps.example.com"},
			edit: func(s map[string]any) { s["subdomain"] = "shop" },
			want: with(func(r *dcm.Route) { r.Host = "shop.apps.example.com" })},
		{name: "wildcard", host: "web.example.com", edit: func(s map[string]any) { s["wildcardPolicy"] = "Subdomain" },
			field: "spec.wildcardPolicy", why: dcm.RejectUnsupported},
		{name: "weights and alternates", host: "web.example.com",
			edit: func(s map[string]any) {
				s["to"].(map[string]any)["weight"] = int64(80)
				s["alternateBackends"] = []any{alt("canary", int64(20)), alt("dark", int64(0)), alt("other", nil)}
			},
			want: with(func(r *dcm.Route) {
				r.Services = []dcm.ServiceRef{{Name: "web", Port: "http", Weight: 80}, {Name: "canary", Port: "http", Weight: 20},
					{Name: "dark", Port: "http", Weight: 0}, {Name: "other", Port: "http", Weight: 100}}
			})},
		{name: "four alternates", host: "web.example.com",
			edit: func(s map[string]any) {
				s["alternateBackends"] = []any{alt("a", nil), alt("b", nil), alt("c", nil), alt("d", nil)}
			}, field: "spec.alternateBackends", why: dcm.RejectUnsupported},
		{name: "a service twice", host: "web.example.com",
			edit:  func(s map[string]any) { s["alternateBackends"] = []any{alt("web", nil)} },
			field: "spec.alternateBackends", why: dcm.RejectConflict},
		{name: "weight above 256", host: "web.example.com",
			edit: func(s map[string]any) { s["to"].(map[string]any)["weight"] = int64(300) }, field: "spec.to.weight", why: dcm.RejectInvalidValue},
		{name: "weight of the wrong type", host: "web.example.com",
			edit: func(s map[string]any) { s["to"].(map[string]any)["weight"] = "80" }, field: "spec", why: dcm.RejectInvalidValue},
		{name: "target port number", host: "web.example.com",
			edit: func(s map[string]any) { s["port"] = map[string]any{"targetPort": int64(8080)} },
			want: with(func(r *dcm.Route) { r.Services[0].Port = "8080" })},
		{name: "target port number as a string", host: "web.example.com",
			edit: func(s map[string]any) { s["port"] = map[string]any{"targetPort": "8080"} },
			want: with(func(r *dcm.Route) { r.Services[0].Port = "8080" })},
		{name: "target port 08080", host: "web.example.com",
			edit: func(s map[string]any) { s["port"] = map[string]any{"targetPort": "08080"} }, field: "spec.port.targetPort", why: dcm.RejectInvalidPort},
		{name: "no port", host: "web.example.com", edit: func(s map[string]any) { delete(s, "port") },
			want: with(func(r *dcm.Route) { r.Services[0].Port = "" })},
		{name: "balance leastconn, cookies off", host: "web.example.com",
			ann:  map[string]string{AnnotationRouteBalance: "leastconn", AnnotationRouteDisableCookies: "true"},
			want: with(func(r *dcm.Route) { r.Balance, r.Sticky = dcm.BalanceLeastConn, false })},
		{name: "balance source", host: "web.example.com", ann: map[string]string{AnnotationRouteBalance: "source"},
			want: with(func(r *dcm.Route) { r.Balance = dcm.BalanceSource })},
		{name: "ip whitelist: canonical, sorted, once each", host: "web.example.com",
			ann:  map[string]string{AnnotationRouteIPWhitelist: "10.1.2.3/8  192.168.1.10 2001:DB8::/32 10.0.0.0/8 192.168.1.10/32"},
			want: with(func(r *dcm.Route) { r.Allowlist = []string{"10.0.0.0/8", "192.168.1.10", "2001:db8::/32"} })},
		{name: "rate limits", host: "web.example.com",
			ann:  map[string]string{AnnotationRouteRateLimit: "true", AnnotationRouteRateConcurrent: "5", AnnotationRouteRateHTTP: "9"},
			want: with(func(r *dcm.Route) { r.RateLimit = &dcm.RateLimit{ConcurrentTCP: 5, RateHTTP: 9} })},
		{name: "rate-limit-connections alone tracks", host: "web.example.com", ann: map[string]string{AnnotationRouteRateLimit: "true"},
			want: with(func(r *dcm.Route) { r.RateLimit = &dcm.RateLimit{} })},
		{name: "a rate limit without rate-limit-connections", host: "web.example.com", ann: map[string]string{AnnotationRouteRateTCP: "5"},
			field: "metadata.annotations[" + AnnotationRouteRateTCP + "]", why: dcm.RejectUnsupported},
		{name: "a rate limit of 0", host: "web.example.com", ann: map[string]string{AnnotationRouteRateLimit: "true", AnnotationRouteRateHTTP: "0"},
			field: "metadata.annotations[" + AnnotationRouteRateHTTP + "]", why: dcm.RejectInvalidValue},
		{name: "ip allowlist wins over ip whitelist", host: "web.example.com",
			ann:  map[string]string{AnnotationRouteIPAllowlist: "::1", AnnotationRouteIPWhitelist: "10.0.0.0/8"},
			want: with(func(r *dcm.Route) { r.Allowlist = []string{"::1"} })},
		{name: "empty ip allowlist serves everyone", host: "web.example.com", ann: map[string]string{AnnotationRouteIPAllowlist: ""},
			want: with(func(*dcm.Route) {})},
		{name: "ip allowlist with a bad entry", host: "web.example.com", ann: map[string]string{AnnotationRouteIPAllowlist: "10.0.0.0/8 10.0.0.300"},
			field: "metadata.annotations[" + AnnotationRouteIPAllowlist + "]", why: dcm.RejectInvalidValue},
		{name: "ip whitelist with a comma, which OpenShift does not read", host: "web.example.com",
			ann:   map[string]string{AnnotationRouteIPAllowlist: "::1", AnnotationRouteIPWhitelist: "10.0.0.0/8,10.0.0.1"},
			field: "metadata.annotations[" + AnnotationRouteIPWhitelist + "]", why: dcm.RejectInvalidValue},
		{name: "cookie name", host: "web.example.com", ann: map[string]string{AnnotationRouteCookieName: "web_session-1"},
			want: with(func(r *dcm.Route) { r.HTTP.CookieName = "web_session-1" })},
		{name: "cookie name with a space", host: "web.example.com", ann: map[string]string{AnnotationRouteCookieName: "a b"},
			field: "metadata.annotations[" + AnnotationRouteCookieName + "]", why: dcm.RejectInvalidValue},
		{name: "cookie same-site", host: "web.example.com", ann: map[string]string{AnnotationRouteCookieSameSite: "Strict"},
			want: with(func(r *dcm.Route) { r.HTTP.CookieSameSite = dcm.SameSiteStrict })},
		{name: "cookie same-site None is the default", host: "web.example.com", ann: map[string]string{AnnotationRouteCookieSameSite: "None"},
			want: with(func(*dcm.Route) {})},
		{name: "cookie same-site lower case", host: "web.example.com", ann: map[string]string{AnnotationRouteCookieSameSite: "strict"},
			field: "metadata.annotations[" + AnnotationRouteCookieSameSite + "]", why: dcm.RejectInvalidValue},
		{name: "edge without a certificate: the default one, no plain HTTP", host: "web.example.com",
			edit: func(s map[string]any) { s["tls"] = map[string]any{"termination": "edge"} },
			want: with(func(r *dcm.Route) {
				r.Kind, r.TLS, r.Insecure = dcm.KindEdge, &dcm.TLSRef{Secret: "route:demo/web"}, dcm.InsecureNone
			})},
		{name: "edge, redirect", host: "web.example.com",
			edit: func(s map[string]any) {
				s["tls"] = map[string]any{"termination": "edge", "insecureEdgeTerminationPolicy": "Redirect"}
			},
			want: with(func(r *dcm.Route) {
				r.Kind, r.TLS, r.Insecure = dcm.KindEdge, &dcm.TLSRef{Secret: "route:demo/web"}, dcm.InsecureRedirect
			})},
		{name: "edge, insecure policy lower case", host: "web.example.com",
			edit: func(s map[string]any) {
				s["tls"] = map[string]any{"termination": "edge", "insecureEdgeTerminationPolicy": "allow"}
			}, field: "spec.tls.insecureEdgeTerminationPolicy", why: dcm.RejectInvalidValue},
		{name: "edge with a destination CA", host: "web.example.com",
			edit: func(s map[string]any) {
				s["tls"] = map[string]any{"termination": "edge", "destinationCACertificate": "x"}
			}, field: "spec.tls.destinationCACertificate", why: dcm.RejectInvalidValue},
		{name: "reencrypt, CA from --default-backend-ca-file", host: "web.example.com",
			edit: func(s map[string]any) { s["tls"] = map[string]any{"termination": "reencrypt"} },
			want: with(func(r *dcm.Route) {
				r.Kind, r.TLS, r.Insecure = dcm.KindReencrypt, &dcm.TLSRef{Secret: "route:demo/web"}, dcm.InsecureNone
				r.Upstream = &dcm.UpstreamTLS{CA: CADefault, ServerName: "web.demo.svc", PerService: true}
			})},
		{name: "reencrypt, inline CA", host: "web.example.com",
			edit: func(s map[string]any) {
				s["tls"] = map[string]any{"termination": "reencrypt", "destinationCACertificate": string(destCA.CertPEM())}
			},
			want: with(func(r *dcm.Route) {
				r.Kind, r.TLS, r.Insecure = dcm.KindReencrypt, &dcm.TLSRef{Secret: "route:demo/web"}, dcm.InsecureNone
				r.Upstream = &dcm.UpstreamTLS{CA: "route:demo/web", Version: destVersion} // the chain only, as OpenShift
			})},
		{name: "reencrypt, a leaf as CA", host: "web.example.com",
			edit: func(s map[string]any) {
				s["tls"] = map[string]any{"termination": "reencrypt", "destinationCACertificate": string(destCA.Leaf(t, "x").CertPEM)}
			}, field: "spec.tls.destinationCACertificate", why: dcm.RejectInvalidValue},
		{name: "passthrough", host: "db.example.com",
			edit: func(s map[string]any) { s["tls"] = map[string]any{"termination": "passthrough"} },
			want: with(func(r *dcm.Route) {
				r.Host, r.Kind, r.Sticky, r.Insecure = "db.example.com", dcm.KindPassthrough, false, dcm.InsecureNone
				r.Balance = dcm.BalanceSource // OpenShift's default for TCP routes
			})},
		{name: "passthrough with roundrobin", host: "db.example.com", ann: map[string]string{AnnotationRouteBalance: "roundrobin"},
			edit: func(s map[string]any) { s["tls"] = map[string]any{"termination": "passthrough"} },
			want: with(func(r *dcm.Route) {
				r.Host, r.Kind, r.Sticky, r.Insecure = "db.example.com", dcm.KindPassthrough, false, dcm.InsecureNone
			})},
		{name: "passthrough with a path", host: "db.example.com",
			edit:  func(s map[string]any) { s["tls"] = map[string]any{"termination": "passthrough"}; s["path"] = "/x" },
			field: "spec.path", why: dcm.RejectUnsupported},
		{name: "passthrough with a certificate", host: "db.example.com",
			edit:  func(s map[string]any) { s["tls"] = map[string]any{"termination": "passthrough", "certificate": "x"} },
			field: "spec.tls.certificate", why: dcm.RejectInvalidValue},
		{name: "passthrough, insecure Allow", host: "db.example.com",
			edit: func(s map[string]any) {
				s["tls"] = map[string]any{"termination": "passthrough", "insecureEdgeTerminationPolicy": "Allow"}
			}, field: "spec.tls.insecureEdgeTerminationPolicy", why: dcm.RejectUnsupported},
		{name: "unknown termination", host: "web.example.com",
			edit:  func(s map[string]any) { s["tls"] = map[string]any{"termination": "Edge"} },
			field: "spec.tls.termination", why: dcm.RejectInvalidValue},
		{name: "to a non-Service", host: "web.example.com",
			edit:  func(s map[string]any) { s["to"].(map[string]any)["kind"] = "Deployment" },
			field: "spec.to.kind", why: dcm.RejectUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := osRoute("web", tc.host, tc.edit)
			if tc.ann != nil {
				u.SetAnnotations(tc.ann)
			}
			got, err := RouteFromOpenShift(u, tc.opts)
			if tc.field != "" {
				checkRefusal(t, err, tc.why, tc.field)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !equalRoute(got.Route, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got.Route, tc.want)
			}
		})
	}
}

func equalRoute(a, b dcm.Route) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// The inline certificate is checked like a Secret's; the route carries
// its version, the PEM (key included) goes to the caller only.
func TestRouteInlineCert(t *testing.T) {
	ca := testkit.NewCA(t)
	leaf, other := ca.Leaf(t, "web.example.com"), ca.Leaf(t, "web.example.com")
	tlsOf := func(crt, key []byte, chain string) func(map[string]any) {
		return func(s map[string]any) {
			s["tls"] = map[string]any{"termination": "edge", "certificate": string(crt), "key": string(key), "caCertificate": chain}
		}
	}
	got, err := RouteFromOpenShift(osRoute("web", "web.example.com", tlsOf(leaf.CertPEM, leaf.KeyPEM, string(ca.CertPEM()))), RouteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := got.Route
	if r.Kind != dcm.KindEdge || r.TLS == nil || r.TLS.Secret != "route:demo/web" || len(r.TLS.Version) != 32 {
		t.Fatalf("route %+v tls %+v", r, r.TLS)
	}
	if !strings.Contains(string(got.CertPEM), string(leaf.KeyPEM)) || !strings.Contains(string(got.CertPEM), string(ca.CertPEM())) {
		t.Error("the PEM lacks the key or the chain")
	}
	if j, _ := json.Marshal(r); strings.Contains(string(j), "PRIVATE KEY") || strings.Contains(string(j), "CERTIFICATE") {
		t.Errorf("the route carries PEM: %s", j)
	}
	// Another certificate, another version.
	got2, err := RouteFromOpenShift(osRoute("web", "web.example.com", tlsOf(other.CertPEM, other.KeyPEM, "")), RouteOptions{})
	if err != nil || got2.Route.TLS.Version == r.TLS.Version {
		t.Errorf("second certificate: %v, version %s", err, got2.Route.TLS.Version)
	}
	for name, edit := range map[string]func(map[string]any){
		"mismatched key": tlsOf(leaf.CertPEM, other.KeyPEM, ""),
		"no key":         tlsOf(leaf.CertPEM, nil, ""),
		"garbage chain":  tlsOf(leaf.CertPEM, leaf.KeyPEM, "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"),
	} {
		_, err := RouteFromOpenShift(osRoute("web", "web.example.com", edit), RouteOptions{})
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if msg := RejectMessage(err); strings.Contains(msg, "PRIVATE") || strings.Contains(msg, "MII") {
			t.Errorf("%s: the message quotes PEM: %s", name, msg)
		}
	}
}

// A Route's targetPort is the endpoints' port: a number is matched against
// the EndpointSlices' (container) ports, not the Service's.
func TestRoutePortName(t *testing.T) {
	svc := testService("web") // port http: 80 → 8080
	svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "admin", Port: 81, TargetPort: intstr.FromString("admin")})
	sl := slice("web-a", discoveryv1.AddressTypeIPv4, map[string]int32{"http": 8080, "admin": 9090})
	for _, tc := range []struct {
		port, want string
		ok         bool
	}{
		{"8080", "http", true}, {"9090", "admin", true}, {"http", "http", true}, {"", "http", true},
		{"80", "", false}, // the Service's port, not the endpoints'
	} {
		got, ok := routePortName(svc, []*discoveryv1.EndpointSlice{sl}, tc.port)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%q: %q %v, want %q %v", tc.port, got, ok, tc.want, tc.ok)
		}
	}
	// No slices yet: a numeric targetPort of the Service still resolves.
	if got, ok := routePortName(svc, nil, "8080"); got != "http" || !ok {
		t.Errorf("without slices: %q %v", got, ok)
	}
}

// routeSource adds Routes to a test Source.
func routeSource(tb testing.TB, rep Reporter) (*Source, *cluster, cache.Indexer) {
	s, cl := newTestSource(tb, Options{}, rep)
	routes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	s.routeListers[""] = cache.NewGenericLister(routes, RouteGVR.GroupResource())
	s.rw.opts = &RouteWatchOptions{}
	_ = cl.svc.Add(testService("web"))
	_ = cl.eps.Add(testSlice("web", "web-1", ready("web-0", "10.0.0.1")))
	return s, cl, routes
}

// An Ingress and a Route on one host/path compete under one rule: the
// older serves, the younger is rejected with reason conflict and serves
// again when the older goes. An Ingress and a Route of one name never
// share a backend.
func TestRouteIngressConflict(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, routeOlder := range []bool{true, false} {
		t.Run(fmt.Sprintf("route older %v", routeOlder), func(t *testing.T) {
			rec := &recorder{}
			s, cl, routes := routeSource(t, rec)
			rt := osRoute("web", "x.example.com", nil)
			ing := testIngress("web", "x.example.com", t0, httpPath("/", prefix, svcBackend("web", "http")))
			if routeOlder {
				rt.SetCreationTimestamp(metav1.NewTime(t0.Add(-time.Hour)))
			} else {
				rt.SetCreationTimestamp(metav1.NewTime(t0.Add(time.Hour)))
			}
			_ = routes.Add(rt)
			mustSync(t, s, "route/demo/web")
			_ = cl.ing.Add(ing)
			mustSync(t, s, "ingress/demo/web")

			winner, loser := "be_http:demo:route_web", dcm.ObjectRef{Kind: KindIngress, Namespace: "demo", Name: "web"}
			owner := "Route demo/web"
			if !routeOlder {
				winner, loser, owner = "be_http:demo:web", dcm.ObjectRef{Kind: KindRoute, Namespace: "demo", Name: "web"}, "Ingress demo/web"
			}
			d, _ := s.Desired()
			if got := backendNames(d); !slices.Equal(got, []string{winner}) {
				t.Fatalf("backends %v, want %s", got, winner)
			}
			rej := s.Rejections()
			if len(rej) != 1 || rej[0].Object != loser || rej[0].Reason != dcm.RejectConflict ||
				!strings.Contains(rej[0].Message, "already served by "+owner+", which is older") {
				t.Fatalf("rejections %+v", rej)
			}
			if b := backend(t, s, winner); len(b.Endpoints) != 1 {
				t.Errorf("winner endpoints %+v", b.Endpoints)
			}

			// The winner goes: the loser serves.
			if routeOlder {
				_ = routes.Delete(rt)
				mustSync(t, s, "route/demo/web")
			} else {
				_ = cl.ing.Delete(ing)
				mustSync(t, s, "ingress/demo/web")
			}
			d, _ = s.Desired()
			other := "be_http:demo:web"
			if !routeOlder {
				other = "be_http:demo:route_web"
			}
			if got := backendNames(d); !slices.Equal(got, []string{other}) {
				t.Errorf("after the winner went: backends %v, want %s", got, other)
			}
			if rej := s.Rejections(); len(rej) != 0 {
				t.Errorf("after the winner went: rejections %+v", rej)
			}
		})
	}

	// Other paths of one host do not compete; the names stay apart.
	s, cl, routes := routeSource(t, nil)
	_ = routes.Add(osRoute("web", "x.example.com", func(sp map[string]any) { sp["path"] = "/api" }))
	mustSync(t, s, "route/demo/web")
	_ = cl.ing.Add(testIngress("web", "x.example.com", t0, httpPath("/", prefix, svcBackend("web", "http"))))
	mustSync(t, s, "ingress/demo/web")
	d, _ := s.Desired()
	if got := backendNames(d); !slices.Equal(got, []string{"be_http:demo:route_web", "be_http:demo:web"}) {
		t.Errorf("backends %v", got)
	}
}

// The inline certificate's PEM is kept for the driver by version, under a
// key no Secret can have, and dropped with the Route.
func TestRouteSourceInlineCert(t *testing.T) {
	ca := testkit.NewCA(t)
	leaf := ca.Leaf(t, "x.example.com")
	s, _, routes := routeSource(t, nil)
	rt := osRoute("web", "x.example.com", func(sp map[string]any) {
		sp["tls"] = map[string]any{"termination": "edge", "certificate": string(leaf.CertPEM), "key": string(leaf.KeyPEM)}
	})
	_ = routes.Add(rt)
	mustSync(t, s, "route/demo/web")
	b := backend(t, s, "be_edge:demo:route_web")
	if b.Route.TLS == nil || b.Route.TLS.Version == "" {
		t.Fatalf("tls %+v", b.Route.TLS)
	}
	pem, err := s.PEMs().CertPEM("route:demo/web", b.Route.TLS.Version)
	if err != nil || !strings.Contains(string(pem), string(leaf.KeyPEM)) {
		t.Fatalf("CertPEM: %v", err)
	}
	if _, err := s.PEMs().CertPEM("demo/web", b.Route.TLS.Version); err == nil {
		t.Error("the inline certificate is also under a Secret's key")
	}
	if rej := s.Rejections(); len(rej) != 0 {
		t.Errorf("rejections %+v", rej)
	}
	_ = routes.Delete(rt)
	mustSync(t, s, "route/demo/web")
	if _, err := s.PEMs().CertPEM("route:demo/web", b.Route.TLS.Version); err == nil {
		t.Error("the key of a deleted Route is kept")
	}
}

// Without listers (the API is not served) a Route key syncs to nothing.
func TestRouteWithoutAPI(t *testing.T) {
	s, _ := newTestSource(t, Options{}, nil)
	mustSync(t, s, "route/demo/web")
	if d, _ := s.Desired(); len(d.Backends) != 0 {
		t.Errorf("backends %v", backendNames(d))
	}
}

// A reencrypt Route's inline destination CA is kept for the driver under
// the Route's key; without one, it needs --default-backend-ca-file.
func TestRouteSourceReencrypt(t *testing.T) {
	destCA := testkit.NewCA(t)
	s, _, routes := routeSource(t, nil)
	rt := osRoute("web", "x.example.com", func(sp map[string]any) {
		sp["tls"] = map[string]any{"termination": "reencrypt", "destinationCACertificate": string(destCA.CertPEM())}
	})
	_ = routes.Add(rt)
	mustSync(t, s, "route/demo/web")
	b := backend(t, s, "be_reencrypt:demo:route_web")
	if b.Route.Upstream == nil || b.Route.Upstream.CA != "route:demo/web" || b.Route.Upstream.Version == "" {
		t.Fatalf("upstream %+v", b.Route.Upstream)
	}
	if p, err := s.PEMs().CAPEM("route:demo/web", b.Route.Upstream.Version); err != nil || string(p) != string(destCA.CertPEM()) {
		t.Fatalf("CAPEM: %v", err)
	}
	_ = routes.Delete(rt)
	mustSync(t, s, "route/demo/web")
	if _, err := s.PEMs().CAPEM("route:demo/web", b.Route.Upstream.Version); err == nil {
		t.Error("the CA of a deleted Route is kept")
	}

	noCA := osRoute("plain", "y.example.com", func(sp map[string]any) { sp["tls"] = map[string]any{"termination": "reencrypt"} })
	_ = routes.Add(noCA)
	mustSync(t, s, "route/demo/plain")
	if rej := s.Rejections(); len(rej) != 1 || rej[0].Reason != dcm.RejectUnsupported || !strings.Contains(rej[0].Message, "--default-backend-ca-file") {
		t.Errorf("rejections %+v", rej)
	}
}
