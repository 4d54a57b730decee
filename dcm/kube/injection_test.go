package kube_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/internal/injection"
)

// The corpus tests are an external test package: the corpus takes its
// annotation fields from this package's table, so it imports the package.

var checkRefusal = kube.CheckRefusal

func webBackend() *networkingv1.IngressServiceBackend {
	return &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Name: "http"}}
}

// injObjects is an Ingress and an EndpointSlice that are served as they are.
func injObjects() (*networkingv1.Ingress, *discoveryv1.EndpointSlice) {
	prefix := networkingv1.PathTypePrefix
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web", Annotations: map[string]string{}},
		Spec: networkingv1.IngressSpec{
			Rules: []networkingv1.IngressRule{{Host: "ok.example.com", IngressRuleValue: networkingv1.IngressRuleValue{
				HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{
					{Path: "/ok", PathType: &prefix, Backend: networkingv1.IngressBackend{Service: webBackend()}}}}}}},
			DefaultBackend: &networkingv1.IngressBackend{Service: webBackend()},
		},
	}
	name, port, tcp, ready := "http", int32(8080), corev1.ProtocolTCP, true
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web-a",
			Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &tcp}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "demo", Name: "web-0"}}},
	}
	return ing, sl
}

// webService is the web Service of the demo namespace, IPv4, with port.
func webService(port corev1.ServicePort) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{port}, IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}},
	}
}

// refusal converts both objects as the Source does and returns the refusal.
func refusal(ing *networkingv1.Ingress, sl *discoveryv1.EndpointSlice) error {
	if _, err := kube.IngressRoutes(ing); err != nil {
		return err
	}
	return kube.ValidateEndpointSlice(sl)
}

// TestInjectionCorpus puts every hostile value (and a value too long for
// the field) into every field that can reach HAProxy; each object is
// refused for that field with a specific reason. e2e/injection_test.go sends
// the same corpus through the real haproxy.
func TestInjectionCorpus(t *testing.T) {
	if ing, sl := injObjects(); refusal(ing, sl) != nil {
		t.Fatalf("the base objects are refused: %v", refusal(ing, sl))
	}
	for _, f := range injection.StringFields {
		for _, v := range f.Values() {
			t.Run(f.Name+"/"+v.Name, func(t *testing.T) {
				ing, sl := injObjects()
				f.Set(ing, sl, v.V)
				checkRefusal(t, refusal(ing, sl), f.Reason, f.Path)
			})
		}
	}
	for _, f := range injection.PortFields {
		for _, p := range injection.HostilePorts {
			t.Run(fmt.Sprintf("%s/%d", f.Name, p), func(t *testing.T) {
				ing, sl := injObjects()
				f.Set(ing, sl, p)
				checkRefusal(t, refusal(ing, sl), dcm.RejectInvalidPort, f.Path)
			})
		}
	}
}

// TestInjectionIgnoredFields: strings dcm reads but never hands to HAProxy
// (the class it serves, unknown annotations, the workload annotation, a
// Service's port names) leave no trace in
// the routes or endpoints, however hostile.
func TestInjectionIgnoredFields(t *testing.T) {
	for _, h := range injection.Hostile {
		t.Run(h.Name, func(t *testing.T) {
			v := injection.Marker + h.Value + "x"
			ing, sl := injObjects()
			ing.Annotations[kube.AnnotationIngressClass] = v
			ing.Annotations["dcm.io/unknown"] = v
			ing.Spec.IngressClassName = &v
			routes, err := kube.IngressRoutes(ing)
			if err != nil {
				t.Fatalf("refused for a field dcm does not use: %v", err)
			}
			if s := fmt.Sprintf("%#v", routes); strings.Contains(s, injection.Marker) {
				t.Errorf("the routes carry the value: %s", s)
			}

			svc := webService(corev1.ServicePort{Name: "http", Port: 80})
			svc.Annotations = map[string]string{kube.AnnotationWorkload: "Deployment/" + v}
			w, err := kube.Workload(svc, []*discoveryv1.EndpointSlice{sl})
			var ie *dcm.InvalidError
			if w != nil || !errors.As(err, &ie) || ie.Field != "metadata.annotations["+kube.AnnotationWorkload+"]" {
				t.Errorf("workload annotation: %+v, %v", w, err)
			}

			// A Service port named with the value: the route asks for the
			// number, the slice carries the name, and is refused for it.
			svc = webService(corev1.ServicePort{Name: v, Port: 80})
			sl.Ports[0].Name = &v
			if eps := kube.ServiceEndpoints(svc, []*discoveryv1.EndpointSlice{sl}, "80"); len(eps) != 0 {
				t.Errorf("endpoints from a slice with a hostile port name: %+v", eps)
			}
			checkRefusal(t, kube.ValidateEndpointSlice(sl), dcm.RejectInvalidPort, "ports[0].name")
		})
	}
}

func TestRouteInjectionCorpus(t *testing.T) {
	if _, err := kube.RouteFromOpenShift(&unstructured.Unstructured{Object: injection.Route("demo", "web", "ok.example.com")}, kube.RouteOptions{}); err != nil {
		t.Fatalf("the base Route is refused: %v", err)
	}
	for _, f := range injection.RouteFields {
		for _, v := range f.Values() {
			t.Run(f.Name+"/"+v.Name, func(t *testing.T) {
				r := injection.Route("demo", "web", "ok.example.com")
				f.Set(r, v.V)
				_, err := kube.RouteFromOpenShift(&unstructured.Unstructured{Object: r}, kube.RouteOptions{})
				checkRefusal(t, err, f.Reason, f.Path)
				if strings.Contains(kube.RejectMessage(err), "PRIVATE KEY") {
					t.Errorf("the message quotes the key: %s", kube.RejectMessage(err))
				}
			})
		}
	}
	for _, f := range injection.RouteNumberFields {
		for _, n := range f.Values {
			t.Run(fmt.Sprintf("%s/%d", f.Name, n), func(t *testing.T) {
				r := injection.Route("demo", "web", "ok.example.com")
				f.Set(r, n)
				_, err := kube.RouteFromOpenShift(&unstructured.Unstructured{Object: r}, kube.RouteOptions{})
				checkRefusal(t, err, f.Reason, f.Path)
			})
		}
	}
}
