package cluster

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/e2e/kapitest"
)

// TestRouteWithoutPortServesEveryPort: a Route without spec.port to a
// Service of two ports sends traffic to both ports of its pod, as
// OpenShift's router does. The pod listens on 8080 and 9090 and answers
// with a different name on each.
func TestRouteWithoutPortServesEveryPort(t *testing.T) {
	installRouteCRD(t)
	t.Cleanup(func() { removeRouteCRD(t) })
	ns := kapitest.Namespace(t, env.admin)
	ctx := context.Background()
	http, admin := startPod(t, 251, 1, 8080, "port-http"), startPod(t, 251, 1, 9090, "port-admin")
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "two"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)},
			{Name: "admin", Port: 81, TargetPort: intstr.FromInt32(9090)}}},
	}
	if _, err := env.admin.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "two-1", Labels: map[string]string{
			discoveryv1.LabelServiceName: "two", discoveryv1.LabelManagedBy: "e2e.dcm.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)},
			{Name: ptr.To("admin"), Port: ptr.To[int32](9090)}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{http.Addr}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
	}
	if http.Addr != admin.Addr {
		t.Fatalf("the pod's two ports at %s and %s", http.Addr, admin.Addr)
	}
	if _, err := env.admin.DiscoveryV1().EndpointSlices(ns).Create(ctx, sl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := startRouteDCMIn(t, []string{ns}, nil)
	host := "ports." + ns + ".test"
	u := osRoute(ns, "ports", host, "", "two", 100, nil)
	delete(u.Object["spec"].(map[string]any), "port")
	if _, err := adminDynamic(t).Resource(kube.RouteGVR).Namespace(ns).Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	both := []string{"port-http", "port-admin"}
	s.Serves(host, "/", 2, func() ([]string, error) { return both, nil })
	if err := s.ServesExactly(host, "/", both, 8); err != nil {
		t.Error(err)
	}
}
