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
	"github.com/dcm-router/dcm/internal/testkit"
)

// injField is one Kubernetes string field that can reach HAProxy: how to
// write a value into it, a valid value of the field with a hostile one
// inside (so the hostile part alone makes it invalid), a value too long for
// it, and what the refusal must say.
type injField struct {
	name   string
	set    func(ing *networkingv1.Ingress, sl *discoveryv1.EndpointSlice, v string)
	wrap   func(hostile string) string
	long   string
	reason string
	field  string
}

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

const (
	pathField = "spec.rules[0].http.paths[0]"
	svcField  = pathField + ".backend.service"
)

func inName(h string) string { return "inj" + h + "x" }

type (
	ingressT = networkingv1.Ingress
	sliceT   = discoveryv1.EndpointSlice
)

// injStringFields lists every string field dcm reads and passes on.
var injStringFields = []injField{
	{"namespace", func(i *ingressT, _ *sliceT, v string) { i.Namespace = v },
		inName, strings.Repeat("a", 64), dcm.RejectInvalidName, "metadata.namespace"},
	{"ingress name", func(i *ingressT, _ *sliceT, v string) { i.Name = v },
		inName, strings.Repeat("a", 254), dcm.RejectInvalidName, "metadata.name"},
	{"host", func(i *ingressT, _ *sliceT, v string) { i.Spec.Rules[0].Host = v },
		func(h string) string { return "inj" + h + "x.example.com" }, strings.Repeat("a", 64) + ".example.com", dcm.RejectInvalidHost, "spec.rules[0].host"},
	{"path", func(i *ingressT, _ *sliceT, v string) { i.Spec.Rules[0].HTTP.Paths[0].Path = v },
		func(h string) string { return "/inj" + h + "x" }, "/" + strings.Repeat("a", 2048), dcm.RejectInvalidPath, pathField + ".path"},
	{"service name", func(i *ingressT, _ *sliceT, v string) { i.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name = v },
		inName, strings.Repeat("a", 64), dcm.RejectInvalidName, svcField + ".name"},
	{"service port name", func(i *ingressT, _ *sliceT, v string) { i.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port.Name = v },
		inName, strings.Repeat("a", 64), dcm.RejectInvalidPort, svcField + ".port.name"},
	{"default backend service name", func(i *ingressT, _ *sliceT, v string) { i.Spec.DefaultBackend.Service.Name = v },
		inName, strings.Repeat("a", 64), dcm.RejectInvalidName, "spec.defaultBackend.service.name"},
	{"default backend port name", func(i *ingressT, _ *sliceT, v string) { i.Spec.DefaultBackend.Service.Port.Name = v },
		inName, strings.Repeat("a", 64), dcm.RejectInvalidPort, "spec.defaultBackend.service.port.name"},
	{"balance annotation", func(i *ingressT, _ *sliceT, v string) { i.Annotations[AnnotationBalance] = v },
		func(h string) string { return "roundrobin" + h }, "roundrobin" + strings.Repeat("a", 300), dcm.RejectInvalidValue, "metadata.annotations[" + AnnotationBalance + "]"},
	{"health-check annotation", func(i *ingressT, _ *sliceT, v string) { i.Annotations[AnnotationHealthCheck] = v },
		func(h string) string { return "true" + h }, "true" + strings.Repeat("e", 300), dcm.RejectInvalidValue, "metadata.annotations[" + AnnotationHealthCheck + "]"},
	{"slice port name", func(_ *ingressT, s *sliceT, v string) { s.Ports[0].Name = &v },
		inName, strings.Repeat("a", 64), dcm.RejectInvalidPort, "ports[0].name"},
	{"endpoint address", func(_ *ingressT, s *sliceT, v string) { s.Endpoints[0].Addresses[0] = v },
		func(h string) string { return "10.0.0.1" + h }, "10.0.0." + strings.Repeat("1", 300), dcm.RejectInvalidAddress, "endpoints[0].addresses[0]"},
	{"pod name", func(_ *ingressT, s *sliceT, v string) { s.Endpoints[0].TargetRef.Name = v },
		inName, strings.Repeat("a", 254), dcm.RejectInvalidName, "endpoints[0].targetRef.name"},
}

// injPortFields lists the numbers dcm passes on.
var injPortFields = []struct {
	name  string
	set   func(*networkingv1.Ingress, *discoveryv1.EndpointSlice, int32)
	field string
}{
	{"service port number", func(i *networkingv1.Ingress, _ *discoveryv1.EndpointSlice, p int32) {
		i.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port = networkingv1.ServiceBackendPort{Number: p}
	}, svcField + ".port.number"},
	{"default backend port number", func(i *networkingv1.Ingress, _ *discoveryv1.EndpointSlice, p int32) {
		i.Spec.DefaultBackend.Service.Port = networkingv1.ServiceBackendPort{Number: p}
	}, "spec.defaultBackend.service.port.number"},
	{"slice port number", func(_ *networkingv1.Ingress, s *discoveryv1.EndpointSlice, p int32) { s.Ports[0].Port = ptr(p) }, "ports[0].port"},
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
	for _, f := range injStringFields {
		values := map[string]string{"long": f.long}
		for _, h := range testkit.Hostile {
			values[h.Name] = f.wrap(h.Value)
		}
		for name, v := range values {
			t.Run(f.name+"/"+name, func(t *testing.T) {
				ing, sl := injObjects()
				f.set(ing, sl, v)
				checkRefusal(t, refusal(ing, sl), f.reason, f.field)
			})
		}
	}
	for _, f := range injPortFields {
		for _, p := range testkit.HostilePorts {
			t.Run(fmt.Sprintf("%s/%d", f.name, p), func(t *testing.T) {
				ing, sl := injObjects()
				f.set(ing, sl, p)
				checkRefusal(t, refusal(ing, sl), dcm.RejectInvalidPort, f.field)
			})
		}
	}
}

// TestInjectionIgnoredFields: strings dcm reads but never hands to HAProxy
// (the class it serves, TLS secret names and hosts while dcm serves plain
// HTTP, the workload annotation, a Service's port names) leave no trace in
// the routes or endpoints, however hostile.
func TestInjectionIgnoredFields(t *testing.T) {
	for _, h := range testkit.Hostile {
		t.Run(h.Name, func(t *testing.T) {
			v := inName(h.Value)
			ing, sl := injObjects()
			ing.Annotations[AnnotationIngressClass] = v
			ing.Annotations["dcm.io/unknown"] = v
			ing.Spec.IngressClassName = &v
			ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{v}, SecretName: v}}
			routes, err := IngressRoutes(ing)
			if err != nil {
				t.Fatalf("refused for a field dcm does not use: %v", err)
			}
			if s := fmt.Sprintf("%#v", routes); strings.Contains(s, "inj") {
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
