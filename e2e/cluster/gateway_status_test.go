package cluster

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestGatewayStatusRestoredAfterForeignWrite: dcm owns the status it
// writes. When something else overwrites it (another controller, an
// admin, or dcm's own write undone by a stale copy — the race eb7dd49
// fixed, where a Gateway kept attachedRoutes 1 after its route went),
// the update event makes dcm compare again and write its status back,
// with no other change to trigger it.
func TestGatewayStatusRestoredAfterForeignWrite(t *testing.T) {
	f := newGatewayFixture(t, 18088)
	s := startGatewayDCM(t, f.ns, "127.0.20.124/30", 18088)
	s.Eventually("GatewayClass, Gateway and HTTPRoute status", 30*time.Second, func() error { return f.statusOK("127.0.20.124") })
	ctx := context.Background()
	g, err := f.gw.GatewayV1().Gateways(f.ns).Get(ctx, "gw", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g.Status.Listeners[0].AttachedRoutes = 0
	g.Status.Addresses = nil
	if _, err := f.gw.GatewayV1().Gateways(f.ns).UpdateStatus(ctx, g, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r, err := f.gw.GatewayV1().HTTPRoutes(f.ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r.Status.Parents = []gwv1.RouteParentStatus{}
	if _, err := f.gw.GatewayV1().HTTPRoutes(f.ns).UpdateStatus(ctx, r, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Eventually("dcm's status written back", 20*time.Second, func() error { return f.statusOK("127.0.20.124") })
}
