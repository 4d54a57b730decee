package kube

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

// The Source serves an HTTPRoute to a Service of another namespace once a
// ReferenceGrant allows it, writes the status of the class, the Gateway
// and the route (once: a resync that changes nothing writes nothing), and
// takes the backend away again when the grant is revoked.
func TestGatewaySourceWithFakeClients(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svc := testService("web")
	svc.Namespace = "apps"
	sl := testSlice("web", "web-abc", ready("web-0", "10.0.0.1"))
	sl.Namespace = "apps"
	client := fake.NewClientset(svc, sl)
	client.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{{GroupVersion: gwv1.GroupVersion.String(),
		APIResources: []metav1.APIResource{{Name: "gatewayclasses"}, {Name: "gateways"}, {Name: "httproutes"}, {Name: "referencegrants"}}}}
	route := testHTTPRoute("gw", "web", 1, "gw", []string{"a.example.com"}, "web")
	route.Spec.Rules[0].BackendRefs[0].Namespace = ptrTo(gwv1.Namespace("apps"))
	grant := &gwv1.ReferenceGrant{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "g"}, Spec: gwv1.ReferenceGrantSpec{
		From: []gwv1.ReferenceGrantFrom{{Group: gatewayGroup, Kind: KindHTTPRoute, Namespace: "gw"}},
		To:   []gwv1.ReferenceGrantTo{{Group: "", Kind: KindService}}}}
	gws := gwFakeClient(t, testClass(), testGateway("gw", "gw", 0, httpListener("http", 18080, "")), route, grant)
	rec := &recorder{}
	s := NewSource(client, Options{GatewayControllerName: testController, GatewayBinds: testBinds()}, rec,
		slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})))
	s.WatchGateways(GatewayWatchOptions{Client: gws, Core: client, Discovery: client.Discovery(), Status: true})
	defer func() {
		if t.Failed() {
			d, _ := s.Desired()
			t.Logf("backends %v rejections %+v desired %+v", backendNames(d), s.Rejections(), s.gw.desired)
		}
	}()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	name := dcm.BackendName(dcm.KindHTTP, "gw", gatewayRouteName("web", 0, "gw/gw", "http"))
	served := func() string {
		d, _ := s.Desired()
		b, ok := d.Backend(name)
		if !ok {
			return "none"
		}
		return fmt.Sprintf("%s unresolved=%v endpoints=%d", b.Route.Gateway.Bind, b.Route.Gateway.Unresolved, len(b.Endpoints))
	}
	testkit.Eventually(t, "the route served with the other namespace's endpoints", waitLimit, is(served, "127.0.20.1:18080 unresolved=false endpoints=1"))
	routeStatus := func() string {
		r, err := gws.GatewayV1().HTTPRoutes("gw").Get(ctx, "web", metav1.GetOptions{})
		if err != nil || len(r.Status.Parents) != 1 {
			return fmt.Sprint(err, r.Status.Parents)
		}
		c := r.Status.Parents[0].Conditions
		return condOf(c, "Accepted") + " " + condOf(c, "ResolvedRefs")
	}
	testkit.Eventually(t, "the HTTPRoute's status", waitLimit, is(routeStatus, "True/Accepted True/ResolvedRefs"))
	gwStatus := func() string {
		g, err := gws.GatewayV1().Gateways("gw").Get(ctx, "gw", metav1.GetOptions{})
		if err != nil || len(g.Status.Addresses) != 1 || len(g.Status.Listeners) != 1 {
			return fmt.Sprint(err, g.Status)
		}
		return fmt.Sprintf("%s %s %d", g.Status.Addresses[0].Value, condOf(g.Status.Conditions, "Programmed"), g.Status.Listeners[0].AttachedRoutes)
	}
	testkit.Eventually(t, "the Gateway's status", waitLimit, is(gwStatus, "127.0.20.1 True/Programmed 1"))
	classStatus := func() string {
		c, err := gws.GatewayV1().GatewayClasses().Get(ctx, "dcm", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		return condOf(c.Status.Conditions, "Accepted")
	}
	testkit.Eventually(t, "the class's status", waitLimit, is(classStatus, "True/Accepted"))

	// A resync that changes nothing writes nothing.
	writes := s.StatusWrites()
	mustSync(t, s, gatewayKey)
	s.gw.status.Add(statusRoute + "gw/web")
	s.gw.status.Add(statusGateway + "gw/gw")
	testkit.Eventually(t, "the status queue drained", waitLimit, func() error {
		if s.gw.status.Len() > 0 {
			return fmt.Errorf("%d queued", s.gw.status.Len())
		}
		return nil
	})
	if got := s.StatusWrites(); got != writes {
		t.Errorf("status writes %d → %d without a change", writes, got)
	}

	// The grant revoked: the rule has no backend left, and says why.
	if err := gws.GatewayV1().ReferenceGrants("apps").Delete(ctx, "g", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the route unresolved", waitLimit, is(served, "127.0.20.1:18080 unresolved=true endpoints=0"))
	testkit.Eventually(t, "ResolvedRefs False", waitLimit, is(routeStatus, "True/Accepted False/RefNotPermitted"))
	testkit.Eventually(t, "the rejection reported", waitLimit, rec.heard("rejected HTTPRoute gw/web RefNotPermitted", 1))

	// Granted again, then the Service deleted: BackendNotFound, no backend.
	if err := gws.Tracker().Create(schema.GroupVersionResource{Group: gwv1.GroupVersion.Group, Version: gwv1.GroupVersion.Version, Resource: "referencegrants"}, grant, "apps"); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "served again", waitLimit, is(served, "127.0.20.1:18080 unresolved=false endpoints=1"))
	if err := client.CoreV1().Services("apps").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the Service gone", waitLimit, is(served, "127.0.20.1:18080 unresolved=true endpoints=0"))
	testkit.Eventually(t, "ResolvedRefs False BackendNotFound", waitLimit, is(routeStatus, "True/Accepted False/BackendNotFound"))
}

// gwFakeClient is a fake Gateway API clientset holding objs under their
// v1 resources: the fake's own guess from the scheme may file a type
// that v1beta1 aliases (Gateway) under v1beta1, where v1 clients never
// find it.
func gwFakeClient(t *testing.T, objs ...runtime.Object) *gwfake.Clientset {
	t.Helper()
	c := gwfake.NewSimpleClientset()
	for _, o := range objs {
		var res, ns string
		switch o := o.(type) {
		case *gwv1.GatewayClass:
			res = "gatewayclasses"
		case *gwv1.Gateway:
			res, ns = "gateways", o.Namespace
		case *gwv1.HTTPRoute:
			res, ns = "httproutes", o.Namespace
		case *gwv1.ReferenceGrant:
			res, ns = "referencegrants", o.Namespace
		}
		if err := c.Tracker().Create(schema.GroupVersionResource{Group: gwv1.GroupVersion.Group, Version: gwv1.GroupVersion.Version, Resource: res}, o, ns); err != nil {
			t.Fatal(err)
		}
	}
	return c
}
