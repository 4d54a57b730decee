package kube

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/injection"
)

// injObjects is an Ingress and an EndpointSlice that are served as they are.
func injObjects() (*networkingv1.Ingress, *discoveryv1.EndpointSlice) {
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web", Annotations: map[string]string{}},
		Spec: networkingv1.IngressSpec{
			Rules:          []networkingv1.IngressRule{httpRule("ok.example.com", httpPath("/ok", prefix, svcBackend("web", "http")))},
			DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Name: "http"}}},
		},
	}
	return ing, slice("web-a", discoveryv1.AddressTypeIPv4, map[string]int32{"http": 8080}, ready("web-0", "10.0.0.1"))
}

// refusal converts both objects as the Source does and returns the refusal.
func refusal(ing *networkingv1.Ingress, sl *discoveryv1.EndpointSlice) error {
	if _, err := IngressRoutes(ing); err != nil {
		return err
	}
	return ValidateEndpointSlice(sl)
}

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
			ing.Annotations[AnnotationIngressClass] = v
			ing.Annotations["dcm.io/unknown"] = v
			ing.Spec.IngressClassName = &v
			routes, err := IngressRoutes(ing)
			if err != nil {
				t.Fatalf("refused for a field dcm does not use: %v", err)
			}
			if s := fmt.Sprintf("%#v", routes); strings.Contains(s, injection.Marker) {
				t.Errorf("the routes carry the value: %s", s)
			}

			svc := service("web", v4, corev1.ServicePort{Name: "http", Port: 80})
			svc.Annotations = map[string]string{AnnotationWorkload: "Deployment/" + v}
			w, err := Workload(svc, []*discoveryv1.EndpointSlice{sl})
			var ie *dcm.InvalidError
			if w != nil || !errors.As(err, &ie) || ie.Field != "metadata.annotations["+AnnotationWorkload+"]" {
				t.Errorf("workload annotation: %+v, %v", w, err)
			}

			// A Service port named with the value: the route asks for the
			// number, the slice carries the name, and is refused for it.
			svc = service("web", v4, corev1.ServicePort{Name: v, Port: 80})
			sl.Ports[0].Name = &v
			if eps := ServiceEndpoints(svc, []*discoveryv1.EndpointSlice{sl}, "80"); len(eps) != 0 {
				t.Errorf("endpoints from a slice with a hostile port name: %+v", eps)
			}
			checkRefusal(t, ValidateEndpointSlice(sl), dcm.RejectInvalidPort, "ports[0].name")
		})
	}
}
