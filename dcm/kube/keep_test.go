package kube

import (
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dcm-router/dcm/dcm"
)

// keptObject is an Ingress or a Route for TestRefusedUpdateKeepsServing:
// version makes the object at a resourceVersion with a balance annotation.
type keptObject struct {
	kind, key, backend, annotation string
	version                        func(rv, balance string) any
}

func keptObjects() []keptObject {
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	return []keptObject{
		{kind: KindIngress, key: "ingress/demo/web", backend: "be_http:demo:web", annotation: AnnotationBalance,
			version: func(rv, balance string) any {
				ing := testIngress("web", "x.example.com", t0, httpPath("/", prefix, svcBackend("web", "http")))
				ing.ResourceVersion, ing.UID = rv, "uid-web"
				ing.Annotations = map[string]string{AnnotationBalance: balance}
				return ing
			}},
		{kind: KindRoute, key: "route/demo/web", backend: "be_http:demo:route_web", annotation: AnnotationRouteBalance,
			version: func(rv, balance string) any {
				rt := osRoute("web", "x.example.com", nil)
				rt.SetCreationTimestamp(metav1.NewTime(t0))
				rt.SetResourceVersion(rv)
				rt.SetUID("uid-web")
				rt.SetAnnotations(map[string]string{AnnotationRouteBalance: balance})
				return rt
			}},
	}
}

// An update that is refused keeps the last accepted version serving, says
// so once (reason, why, the version served), keeps claiming its host/path
// against a younger object, and gives way to the fixed version or to the
// deletion. An object invalid from the start serves nothing.
func TestRefusedUpdateKeepsServing(t *testing.T) {
	for _, o := range keptObjects() {
		t.Run(o.kind, func(t *testing.T) {
			rec := &recorder{}
			s, cl, routes := routeSource(t, rec)
			put := func(obj any) {
				t.Helper()
				if u, ok := obj.(*unstructured.Unstructured); ok {
					_ = routes.Update(u)
				} else {
					_ = cl.ing.Update(obj.(*networkingv1.Ingress))
				}
				mustSync(t, s, o.key)
			}
			balance := func() string { return backend(t, s, o.backend).Route.Balance }
			ref := dcm.ObjectRef{Kind: o.kind, Namespace: "demo", Name: "web"}

			put(o.version("10", "leastconn"))
			if balance() != dcm.BalanceLeastConn || len(s.Rejections()) != 0 {
				t.Fatalf("first version: balance %s, rejections %+v", balance(), s.Rejections())
			}
			put(o.version("11", "bogus"))
			if got := balance(); got != dcm.BalanceLeastConn {
				t.Errorf("refused update: balance %s, want the kept leastconn", got)
			}
			rej := s.Rejections()
			if len(rej) != 1 || rej[0].Object != ref || rej[0].Reason != dcm.RejectInvalidValue ||
				!strings.HasPrefix(rej[0].Message, "update refused, resourceVersion 10 still served: ") ||
				!strings.Contains(rej[0].Message, o.annotation) {
				t.Errorf("rejections %+v", rej)
			}
			if host, kept := s.keptHost(routeKeyOf(o)); !kept || host != "x.example.com" {
				t.Errorf("keptHost = %q %v", host, kept)
			}
			// A status write moves the resourceVersion: no new report.
			put(o.version("12", "bogus"))
			if n := rec.count("rejected " + ref.String()); n != 1 {
				t.Errorf("refusal reported %d times: %q", n, rec.list())
			}

			// The kept version still owns x.example.com/ against a younger one.
			late := testIngress("late", "x.example.com", time.Now(), httpPath("/", prefix, svcBackend("web", "http")))
			_ = cl.ing.Add(late)
			mustSync(t, s, "ingress/demo/late")
			if rec.count("rejected Ingress demo/late conflict") != 1 {
				t.Errorf("younger object not refused as a conflict: %q", rec.list())
			}

			put(o.version("13", "random"))
			if got := balance(); got != dcm.BalanceRandom || rec.count("accepted "+ref.String()) != 1 {
				t.Errorf("fixed: balance %s, reports %q", got, rec.list())
			}
			if _, kept := s.keptHost(routeKeyOf(o)); kept {
				t.Error("still kept once fixed")
			}

			put(o.version("14", "bogus"))
			if rej := s.Rejections(); len(rej) != 2 || !strings.Contains(rej[1].Message+rej[0].Message, "resourceVersion 13 still served") {
				t.Errorf("second refusal: %+v", rej)
			}
			// Deleted: its routes go, the younger one takes the host.
			if u, ok := o.version("14", "bogus").(*unstructured.Unstructured); ok {
				_ = routes.Delete(u)
			} else {
				_ = cl.ing.Delete(o.version("14", "bogus"))
			}
			mustSync(t, s, o.key)
			mustSync(t, s, "ingress/demo/late")
			d, _ := s.Desired()
			if got := backendNames(d); len(got) != 1 || got[0] != "be_http:demo:late" {
				t.Errorf("after delete: backends %v", got)
			}

			// Invalid from the start, or a new object of the same name
			// after an invalid one: nothing served.
			put(o.version("20", "bogus"))
			next := o.version("21", "bogus")
			if u, ok := next.(*unstructured.Unstructured); ok {
				u.SetUID("uid-other")
			} else {
				next.(*networkingv1.Ingress).UID = types.UID("uid-other")
			}
			put(next)
			if d, _ := s.Desired(); len(d.Backends) != 1 {
				t.Errorf("invalid object served: %v", backendNames(d))
			}
		})
	}
}

func routeKeyOf(o keptObject) string {
	if o.kind == KindRoute {
		return routeKey("demo", "web")
	}
	return "demo/web"
}

// A new object of the same name (another UID) is not the one that was
// accepted: its invalid version keeps nothing of the old one.
func TestRefusedUpdateOfAnotherObject(t *testing.T) {
	s, cl, _ := routeSource(t, nil)
	o := keptObjects()[0]
	_ = cl.ing.Add(o.version("1", "leastconn").(*networkingv1.Ingress))
	mustSync(t, s, o.key)
	next := o.version("2", "bogus").(*networkingv1.Ingress)
	next.UID = "uid-new"
	_ = cl.ing.Update(next)
	mustSync(t, s, o.key)
	if d, _ := s.Desired(); len(d.Backends) != 0 {
		t.Errorf("a new invalid object serves the old one's routes: %v", backendNames(d))
	}
}
