package kube

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// An Ingress and the Route route-controller-manager makes of it are one
// route: the Ingress's, with no conflict and no rejection, whichever comes
// first. When the Ingress goes (before the garbage collector takes the
// Route), or belongs to another class, the Route is served on its own. A
// Route owned by another object is not skipped.
func TestIngressAndItsRoute(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	const host = "web.example.com"
	ing := testIngress("web", host, t0, httpPath("/", prefix, svcBackend("web", "http")))
	ing.UID = types.UID("ing-uid")
	route := osRoute("web-x7k2p", host, func(spec map[string]any) { spec["path"] = "/" })
	route.SetCreationTimestamp(metav1.NewTime(t0.Add(time.Second)))
	route.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "networking.k8s.io/v1", Kind: "Ingress",
		Name: "web", UID: ing.UID, Controller: ptr(true)}})
	for _, order := range [][]string{{"ingress", "route"}, {"route", "ingress"}} {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			s, cl, routes := routeSource(t, nil)
			for _, o := range order {
				if o == "ingress" {
					_ = cl.ing.Add(ing)
					mustSync(t, s, "ingress/demo/web")
				} else {
					_ = routes.Add(route)
					mustSync(t, s, "route/demo/web-x7k2p")
				}
			}
			d, _ := s.Desired()
			if len(d.Backends) != 1 || d.Backends[0].Route.Source != "ingress" {
				t.Errorf("backends %+v, want the Ingress's alone", backendNames(d))
			}
			if rej := s.Rejections(); len(rej) != 0 {
				t.Errorf("rejections %+v", rej)
			}
			_ = cl.ing.Delete(ing)
			mustSync(t, s, "ingress/demo/web")
			d, _ = s.Desired()
			if len(d.Backends) != 1 || d.Backends[0].Route.Source != "route" {
				t.Errorf("after the Ingress: backends %v, want the Route's", backendNames(d))
			}
		})
	}
	t.Run("owned by another Ingress object", func(t *testing.T) {
		s, cl, routes := routeSource(t, nil)
		other := route.DeepCopy()
		other.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "networking.k8s.io/v1", Kind: "Ingress",
			Name: "web", UID: "old-uid", Controller: ptr(true)}})
		_ = cl.ing.Add(ing)
		mustSync(t, s, "ingress/demo/web")
		_ = routes.Add(other)
		mustSync(t, s, "route/demo/web-x7k2p")
		if rej := s.Rejections(); len(rej) != 1 {
			t.Errorf("a Route of an older Ingress of that name: rejections %+v, want its conflict", rej)
		}
	})
}
