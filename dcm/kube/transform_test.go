package kube

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

// decorate gives an object what an API server and kubectl apply add and
// dcm never reads: managed fields, the last-applied annotation, and for a
// slice's endpoints their node, zone, hints and topology.
func decorate(obj runtime.Object) runtime.Object {
	obj = obj.DeepCopyObject()
	m := obj.(metav1.Object)
	m.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply,
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)}})
	ann := map[string]string{lastApplied: `{"apiVersion":"v1"}`}
	for k, v := range m.GetAnnotations() {
		ann[k] = v
	}
	m.SetAnnotations(ann)
	if sl, ok := obj.(*discoveryv1.EndpointSlice); ok {
		for i := range sl.Endpoints {
			sl.Endpoints[i].NodeName, sl.Endpoints[i].Zone = ptr("node-1"), ptr("zone-a")
			sl.Endpoints[i].Hints = &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "zone-a"}}}
			sl.Endpoints[i].DeprecatedTopology = map[string]string{"kubernetes.io/hostname": "node-1"}
		}
	}
	return obj
}

// TestStripUnreadKeepsRoutes: a cluster whose objects carry what the
// informers' transform drops gives the very desired state of one whose
// objects never had it, at the start and after an update through the
// watch; the caches hold the objects stripped, and the clientset's own
// objects are left as they were.
func TestStripUnreadKeepsRoutes(t *testing.T) {
	old := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	web := testIngress("web", "web.example.com", old, httpPath("/", prefix, svcBackend("web", "http")))
	web.Annotations = map[string]string{AnnotationBalance: "leastconn", AnnotationSticky: "true"}
	web.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"web.example.com"}, SecretName: "web-tls"}}
	api := testIngress("api", "api.example.com", old, httpPath("/v1", prefix, numBackend("api", 80)))
	apiSvc := testService("api")
	apiSvc.Annotations = map[string]string{AnnotationWorkload: "deployment/api"}
	leaf := testkit.NewCA(t).Leaf(t, "web.example.com")
	tls := tlsSecret("web-tls", leaf.CertPEM, leaf.KeyPEM)
	objs := []runtime.Object{web, api, testService("web"), apiSvc, tls,
		testSlice("web", "web-abc", ready("web-7d9f8c6b5-aaaaa", "10.0.0.1"), ready("web-7d9f8c6b5-bbbbb", "10.0.0.2")),
		testSlice("api", "api-abc", ready("api-0", "10.0.1.1"))}
	decorated := make([]runtime.Object, len(objs))
	for i, o := range objs {
		decorated[i] = decorate(o)
	}
	plain, full := fake.NewClientset(objs...), fake.NewClientset(decorated...)
	ps, fs := runSource(t, plain), runSource(t, full)
	// same waits until both sources serve the web backend on addr.
	same := func(when, addr string) {
		t.Helper()
		testkit.Eventually(t, when, waitLimit, func() error {
			p, _ := ps.Desired()
			f, _ := fs.Desired()
			for _, d := range []dcm.Desired{p, f} {
				if b, ok := d.Backend("be_edge:demo:web"); !ok || len(b.Endpoints) != 2 || b.Endpoints[1].Addr != addr {
					return fmt.Errorf("web not on %s yet", addr)
				}
			}
			if len(p.Backends) != 2 || !reflect.DeepEqual(derefBackends(p), derefBackends(f)) {
				return fmt.Errorf("desired states differ:\n%+v\n%+v", derefBackends(p), derefBackends(f))
			}
			return nil
		})
	}
	same("the start", "10.0.0.2")

	sl := testSlice("web", "web-abc", ready("web-7d9f8c6b5-aaaaa", "10.0.0.1"), ready("web-7d9f8c6b5-ccccc", "10.0.0.3"))
	ctx := t.Context()
	if _, err := plain.DiscoveryV1().EndpointSlices("demo").Update(ctx, sl, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := full.DiscoveryV1().EndpointSlices("demo").Update(ctx, decorate(sl).(*discoveryv1.EndpointSlice), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	same("an update", "10.0.0.3")
	if b := backend(t, fs, "be_edge:demo:web"); b.Route.TLS == nil || b.Route.TLS.Version == "" || !b.Route.Sticky || b.Route.Balance != "leastconn" {
		t.Errorf("web after the update: %+v", b)
	}

	ls := fs.listers[""]
	svcs, _ := ls.services.List(labels.Everything())
	ings, _ := ls.ingresses.List(labels.Everything())
	cached := []metav1.Object{}
	for _, o := range svcs {
		cached = append(cached, o)
	}
	for _, o := range ings {
		cached = append(cached, o)
	}
	secrets, _ := ls.secrets.List(labels.Everything())
	for _, o := range secrets {
		cached = append(cached, o)
	}
	for _, o := range ls.slices.List() {
		sl := o.(*discoveryv1.EndpointSlice)
		cached = append(cached, sl)
		for _, e := range sl.Endpoints {
			if e.NodeName != nil || e.Zone != nil || e.Hints != nil || e.DeprecatedTopology != nil {
				t.Errorf("slice %s caches an endpoint's topology: %+v", sl.Name, e)
			}
		}
	}
	for _, o := range cached {
		if o.GetManagedFields() != nil || o.GetAnnotations()[lastApplied] != "" {
			t.Errorf("%s caches managed fields or the last-applied annotation", o.GetName())
		}
	}
	if len(cached) != 7 { // 2 Ingresses, 2 Services, a Secret, 2 slices
		t.Errorf("%d objects cached, want 7", len(cached))
	}
	kept, err := full.CoreV1().Services("demo").Get(context.Background(), "api", metav1.GetOptions{})
	if err != nil || kept.ManagedFields == nil || kept.Annotations[lastApplied] == "" || kept.Annotations[AnnotationWorkload] == "" {
		t.Errorf("the clientset's own Service was changed: %+v, %v", kept.ObjectMeta, err)
	}
}

// runSource runs a Source on client until the test ends.
func runSource(t *testing.T, client *fake.Clientset) *Source {
	t.Helper()
	s := NewSource(client, Options{}, nil, testkit.Logger(t))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return s
}

func derefBackends(d dcm.Desired) []dcm.DesiredBackend {
	out := make([]dcm.DesiredBackend, len(d.Backends))
	for i, b := range d.Backends {
		out[i] = *b
	}
	return out
}

// TestStripUnreadLeavesOthers: an object without anything to drop comes
// back as it was, not copied; one with something is a copy.
func TestStripUnreadLeavesOthers(t *testing.T) {
	svc := testService("web")
	if got, _ := StripUnread(svc); got != any(svc) {
		t.Error("a Service with nothing to drop was copied")
	}
	dec := decorate(svc).(*corev1.Service)
	got, _ := StripUnread(dec)
	if got == any(dec) || dec.ManagedFields == nil {
		t.Error("the transform changed its argument in place")
	}
	if s := got.(*corev1.Service); s.ManagedFields != nil || len(s.Annotations) != 0 || s.Spec.Ports[0].Name != "http" {
		t.Errorf("stripped %+v", s)
	}
}
