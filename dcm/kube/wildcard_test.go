package kube

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dcm-router/dcm/dcm"
)

func TestWildcardConversion(t *testing.T) {
	subdomain := func(host string) *unstructured.Unstructured {
		return osRoute("w", host, func(spec map[string]any) { spec["wildcardPolicy"] = "Subdomain" })
	}
	tests := []struct {
		name   string
		host   string
		allow  bool
		want   string // the route's host, or the reject reason
		reason string
	}{
		{"Subdomain serves the domain of spec.host", "www.example.com", true, "*.example.com", ""},
		{"refused without the flag", "www.example.com", false, "", dcm.RejectUnsupported},
		{"no Route claims a top-level domain", "example.com", true, "", dcm.RejectInvalidHost},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := RouteFromOpenShift(subdomain(tt.host), RouteOptions{AllowWildcard: tt.allow})
			if tt.reason != "" {
				var ie *dcm.InvalidError
				if !errors.As(err, &ie) || ie.Reason != tt.reason || (!tt.allow && !strings.Contains(err.Error(), FlagAllowWildcardRoutes)) {
					t.Fatalf("err %v, want reason %s", err, tt.reason)
				}
				return
			}
			if err != nil || c.Route.Host != tt.want || !c.Route.Wildcard() {
				t.Fatalf("host %q (%v), want %q", c.Route.Host, err, tt.want)
			}
		})
	}
	routes, err := IngressRoutes(testIngress("w", "*.example.com", time.Now(), httpPath("/", prefix, svcBackend("web", "http"))))
	if err != nil || len(routes) != 1 || routes[0].Host != "*.example.com" {
		t.Fatalf("ingress routes %+v, %v", routes, err)
	}
	if _, err := IngressRoutes(testIngress("w", "*.com", time.Now(), httpPath("/", prefix, svcBackend("web", "http")))); err == nil {
		t.Error("*.com accepted")
	}
}

// Wildcard ownership goes per domain, as OpenShift's host admission has
// it: a wildcard Route claims its domain for its namespace, so another
// namespace's route under it is refused; an older route of another
// namespace under the domain blocks the wildcard; exact hosts of two
// namespaces under one domain do not block each other. Without
// AllowWildcardRoutes a wildcard Ingress is refused with the flag's name.
func TestWildcardOwnership(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	type obj struct {
		ns, host string
		wild     bool
	}
	tests := []struct {
		name    string
		objs    []obj // oldest first
		allow   bool
		served  []string
		refused map[string]string // backend → message part
	}{
		{
			name:    "a wildcard claims its domain",
			objs:    []obj{{"a", "www.ex.com", true}, {"a", "x.ex.com", false}, {"b", "y.ex.com", false}},
			allow:   true,
			served:  []string{"be_http:a:a1", "be_http:a:route_a0w"},
			refused: map[string]string{"b": "has host *.ex.com, blocking routes under it"},
		},
		{
			name:    "an older host of another namespace blocks the wildcard",
			objs:    []obj{{"b", "y.ex.com", false}, {"a", "www.ex.com", true}},
			allow:   true,
			served:  []string{"be_http:b:b0"},
			refused: map[string]string{"a": "has a host under ex.com, blocking *.ex.com"},
		},
		{
			name:   "exact hosts of two namespaces share a domain",
			objs:   []obj{{"a", "x.ex.com", false}, {"b", "y.ex.com", false}, {"c", "www.other.com", true}},
			allow:  true,
			served: []string{"be_http:a:a0", "be_http:b:b1", "be_http:c:route_c2w"},
		},
		{
			name:    "without the flag a wildcard Ingress is refused",
			objs:    []obj{{"a", "*.ex.com", false}},
			refused: map[string]string{"a": FlagAllowWildcardRoutes},
		},
	}
	for _, tt := range tests {
		for _, reverse := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s reverse %v", tt.name, reverse), func(t *testing.T) {
				s, cl, routes := routeSource(t, nil)
				s.opts.AllowWildcardRoutes = tt.allow
				s.rw.opts.Convert.AllowWildcard = tt.allow
				var keys []string
				for i, o := range tt.objs {
					created := metav1.NewTime(t0.Add(time.Duration(i) * time.Hour))
					_ = cl.svc.Add(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: "web"},
						Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}})
					if o.wild {
						r := osRoute(fmt.Sprintf("%s%dw", o.ns, i), o.host, func(spec map[string]any) { spec["wildcardPolicy"] = "Subdomain" })
						r.SetNamespace(o.ns)
						r.SetCreationTimestamp(created)
						_ = routes.Add(r)
						keys = append(keys, "route/"+o.ns+"/"+r.GetName())
						continue
					}
					ing := testIngress(fmt.Sprintf("%s%d", o.ns, i), o.host, created.Time, httpPath("/", prefix, svcBackend("web", "http")))
					ing.Namespace = o.ns
					_ = cl.ing.Add(ing)
					keys = append(keys, "ingress/"+o.ns+"/"+ing.Name)
				}
				if reverse {
					slices.Reverse(keys)
				}
				for _, k := range keys {
					mustSync(t, s, k)
				}
				d, _ := s.Desired()
				if got, want := backendNames(d), slices.Sorted(slices.Values(tt.served)); !slices.Equal(got, want) {
					t.Errorf("served %v, want %v", got, want)
				}
				rej := s.Rejections()
				if len(rej) != len(tt.refused) {
					t.Fatalf("rejections %+v, want %v", rej, tt.refused)
				}
				for _, r := range rej {
					if part, ok := tt.refused[r.Object.Namespace]; !ok || !strings.Contains(r.Message, part) {
						t.Errorf("rejection %+v, want one with %q", r, part)
					}
				}
			})
		}
	}
}
