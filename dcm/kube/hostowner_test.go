package kube

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dcm-router/dcm/dcm"
)

// A host belongs to the namespace of its oldest object, Ingress or Route:
// the owning namespace's other paths share the host, another namespace's
// objects for it are refused (HostAlreadyClaimed) whatever their path, and
// take over when the owner's objects are gone. With
// AllowCrossNamespaceHosts every path is served. Event order does not
// matter.
func TestHostOwnership(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	const host = "x.example.com"
	// a: namespace a's Ingress on /, oldest; ar: a's Route on /api, next;
	// b: namespace b's Ingress on /admin; br: b's Route on /b.
	a := testIngress("a", host, t0, httpPath("/", prefix, svcBackend("web", "http")))
	a.Namespace = "a"
	ar := osRoute("ar", host, func(spec map[string]any) { spec["path"] = "/api" })
	ar.SetNamespace("a")
	ar.SetCreationTimestamp(metav1.NewTime(t0.Add(30 * time.Minute)))
	b := testIngress("b", host, t0.Add(time.Hour), httpPath("/admin", prefix, svcBackend("web", "http")))
	b.Namespace = "b"
	br := osRoute("br", host, func(spec map[string]any) { spec["path"] = "/b" })
	br.SetNamespace("b")
	br.SetCreationTimestamp(metav1.NewTime(t0.Add(2 * time.Hour)))
	bAdmin := "be_http:b:b"
	keys := map[string]string{"a": "ingress/a/a", "ar": "route/a/ar", "b": "ingress/b/b", "br": "route/b/br"}

	for _, allow := range []bool{false, true} {
		for _, order := range [][]string{{"a", "ar", "b", "br"}, {"br", "b", "ar", "a"}, {"b", "a", "br", "ar"}} {
			t.Run(fmt.Sprintf("allow %v order %v", allow, order), func(t *testing.T) {
				rec := &recorder{}
				s, cl, routes := routeSource(t, rec)
				s.opts.AllowCrossNamespaceHosts = allow
				for _, ns := range []string{"a", "b"} {
					svc := testService("web")
					svc.Namespace = ns
					_ = cl.svc.Add(svc)
				}
				for _, n := range order {
					switch n {
					case "a":
						_ = cl.ing.Add(a)
					case "b":
						_ = cl.ing.Add(b)
					case "ar":
						_ = routes.Add(ar)
					case "br":
						_ = routes.Add(br)
					}
					mustSync(t, s, keys[n])
				}
				d, _ := s.Desired()
				want := []string{"be_http:a:a", "be_http:a:route_ar"}
				if allow {
					want = append(want, bAdmin, "be_http:b:route_br")
				}
				slices.Sort(want)
				if got := backendNames(d); !slices.Equal(got, want) {
					t.Fatalf("backends %v, want %v", got, want)
				}
				rej := s.Rejections()
				if allow {
					if len(rej) != 0 {
						t.Errorf("rejections %+v", rej)
					}
					return
				}
				if len(rej) != 2 {
					t.Fatalf("rejections %+v", rej)
				}
				for _, r := range rej {
					if r.Object.Namespace != "b" || r.Reason != dcm.RejectHostClaimed ||
						!strings.Contains(r.Message, `host "x.example.com" belongs to namespace a, whose Ingress a/a is older`) {
						t.Errorf("rejection %+v", r)
					}
				}

				// a's Ingress goes: a's Route still owns the host.
				_ = cl.ing.Delete(a)
				mustSync(t, s, keys["a"])
				if d, _ := s.Desired(); !slices.Equal(backendNames(d), []string{"be_http:a:route_ar"}) {
					t.Errorf("after a: backends %v", backendNames(d))
				}
				// Its Route goes too: b takes over, both of its objects.
				_ = routes.Delete(ar)
				mustSync(t, s, keys["ar"])
				d, _ = s.Desired()
				if got, want := backendNames(d), []string{bAdmin, "be_http:b:route_br"}; !slices.Equal(got, slices.Sorted(slices.Values(want))) {
					t.Errorf("after a's objects: backends %v, want %v", got, want)
				}
				if rej := s.Rejections(); len(rej) != 0 {
					t.Errorf("after a's objects: rejections %+v", rej)
				}
			})
		}
	}
}

// A host-less Ingress serves every host: no namespace owns "any host".
func TestHostlessIngressesOfTwoNamespaces(t *testing.T) {
	s, cl, _ := routeSource(t, nil)
	for _, ns := range []string{"a", "b"} {
		ing := testIngress("web", "", time.Now(), httpPath("/"+ns, prefix, svcBackend("web", "http")))
		ing.Namespace = ns
		_ = cl.ing.Add(ing)
		_ = cl.svc.Add(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}})
		mustSync(t, s, "ingress/"+ns+"/web")
	}
	if d, _ := s.Desired(); len(d.Backends) != 2 || len(s.Rejections()) != 0 {
		t.Errorf("backends %v, rejections %+v", backendNames(d), s.Rejections())
	}
}
