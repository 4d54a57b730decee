package cluster

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/e2e/kapitest"
	"github.com/dcm-router/dcm/internal/testkit"
	"github.com/dcm-router/dcm/system"
)

// generatedRoute is the Route route-controller-manager makes for the
// Ingress's host and path: named <ingress>-<random>, the Ingress's
// annotations, owned by it as its controller, targetPort the Service
// port's name.
func generatedRoute(ing *networkingv1.Ingress, host, path, service string) *unstructured.Unstructured {
	u := osRoute(ing.Namespace, ing.Name+"-x7k2p", host, path, service, 100, nil)
	u.Object["spec"].(map[string]any)["port"] = map[string]any{"targetPort": "http"}
	u.SetAnnotations(ing.Annotations)
	u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "networking.k8s.io/v1", Kind: "Ingress",
		Name: ing.Name, UID: ing.UID, Controller: ptr.To(true)}})
	return u
}

// dcmEntry reports whether dcm has an entry in the Route's status.ingress.
func dcmEntry(u *unstructured.Unstructured) bool {
	entries, _, _ := unstructured.NestedSlice(u.Object, "status", "ingress")
	for _, e := range entries {
		if m, ok := e.(map[string]any); ok && m["routerName"] == kube.DefaultRouterName {
			return true
		}
	}
	return false
}

// TestIngressWithGeneratedRoute: an Ingress and the Route
// route-controller-manager makes of it, through the real API server, are
// served once, from the Ingress: one backend, no rejection, no status
// entry of dcm's on the Route. When the Ingress leaves dcm's class, the
// Route is served on its own and admitted; back in the class, the Route
// leaves again and dcm takes its entry out.
func TestIngressWithGeneratedRoute(t *testing.T) {
	installRouteCRD(t)
	t.Cleanup(func() { removeRouteCRD(t) })
	ns := kapitest.Namespace(t, env.admin)
	ctx := context.Background()
	host := "pair." + ns + ".test"
	createApp(t, ns, "web", 1, host, "/")
	ing, err := env.admin.NetworkingV1().Ingresses(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	routes := adminDynamic(t).Resource(kube.RouteGVR).Namespace(ns)
	gen := generatedRoute(ing, host, "/", "web")
	if _, err := routes.Create(ctx, gen, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := startRouteDCMIn(t, []string{ns}, func(c *system.Config) { c.IngressClass = "dcm" })
	// Not dcm's class yet: the Route serves, admitted.
	s.Serves(host, "/", 1, readyPods(ns, "web"))
	admitted(t, routes, gen.GetName(), "True", "")

	setClass := func(class string) {
		t.Helper()
		cur, err := env.admin.NetworkingV1().Ingresses(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Spec.IngressClassName = ptr.To(class)
		if _, err := env.admin.NetworkingV1().Ingresses(ns).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setClass("dcm")
	s.Eventually("the Ingress alone serves, the Route has no entry of dcm's", 15*time.Second, func() error {
		snap := s.Engine.Snapshot()
		if len(snap.Rejected) != 0 {
			return fmt.Errorf("rejected %+v", snap.Rejected)
		}
		var sources []string
		for _, b := range snap.Backends {
			if b.Route.Host == host {
				sources = append(sources, string(b.Route.Source))
			}
		}
		if len(sources) != 1 || sources[0] != "ingress" {
			return fmt.Errorf("backends of %s from %v", host, sources)
		}
		u, err := routes.Get(ctx, gen.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if dcmEntry(u) {
			return fmt.Errorf("status.ingress still has dcm's entry")
		}
		return nil
	})
	if err := s.ServesExactly(host, "/", mustPods(t, ns, "web"), 4); err != nil {
		t.Error(err)
	}
	if n := sourceEvents(s.Stack, "conflict"); n != 0 {
		t.Errorf("%d conflict events", n)
	}
	setClass("other")
	admitted(t, routes, gen.GetName(), "True", "")
	s.Serves(host, "/", 1, readyPods(ns, "web"))
}

// TestIngressTerminationAnnotation: route.openshift.io/termination on an
// Ingress, as route-controller-manager reads it: reencrypt ends the
// client's TLS with the spec.tls Secret and verifies the pod against
// --default-backend-ca-file; passthrough hands the TLS connection to the
// pod, whose own certificate the client sees; edge serves a host that is
// not in spec.tls with the default certificate and redirects plain HTTP.
func TestIngressTerminationAnnotation(t *testing.T) {
	ns := kapitest.Namespace(t, env.admin)
	ctx := context.Background()
	front, podCA := testkit.NewCA(t), testkit.NewCA(t)
	caFile := filepath.Join(t.TempDir(), "service-ca.crt")
	if err := os.WriteFile(caFile, podCA.CertPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	pod := func(svc string, y byte, leaf testkit.Leaf) {
		b := startTLSPod(t, 253, y, svc+"-0", leaf)
		createService(t, ns, svc, nil)
		sl := &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: svc + "-1", Labels: map[string]string{
				discoveryv1.LabelServiceName: svc, discoveryv1.LabelManagedBy: "e2e.dcm.io"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(b.Port))}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{b.Addr}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
				TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: b.Name}}},
		}
		if _, err := env.admin.DiscoveryV1().EndpointSlices(ns).Create(ctx, sl, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	reHost, ptHost := "re."+ns+".test", "pt."+ns+".test"
	pod("re", 1, podCA.Leaf(t, "re."+ns+".svc"))
	ptLeaf := podCA.Leaf(t, ptHost)
	pod("pt", 2, ptLeaf)
	reLeaf := front.Leaf(t, reHost)
	if _, err := env.admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "re-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: reLeaf.CertPEM, corev1.TLSPrivateKeyKey: reLeaf.KeyPEM}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	re := ingressFor(ns, "re", reHost, "/", "re")
	re.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{reHost}, SecretName: "re-tls"}}
	re.Annotations = map[string]string{kube.AnnotationIngressTermination: "reencrypt"}
	pt := ingressFor(ns, "pt", ptHost, "/", "pt")
	pt.Annotations = map[string]string{kube.AnnotationIngressTermination: "passthrough"}
	for _, ing := range []*networkingv1.Ingress{re, pt} {
		if _, err := env.admin.NetworkingV1().Ingresses(ns).Create(ctx, ing, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	edHost := "ed." + ns + ".test"
	createApp(t, ns, "ed", 1, edHost, "/")
	ed, err := env.admin.NetworkingV1().Ingresses(ns).Get(ctx, "ed", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ed.Annotations = map[string]string{kube.AnnotationIngressTermination: "edge"}
	if _, err := env.admin.NetworkingV1().Ingresses(ns).Update(ctx, ed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	o := dcmOptions(t, ns)
	scoped := o.Config // the test's namespace only: other tests' objects stay out
	o.Config = func(c *system.Config) { scoped(c); c.DefaultBackendCAFile = caFile }
	s := harness.Start(t, o)
	expectBehindTLS(s, reHost, front, reLeaf)("reencrypt: the verified pod serves", 200, "re-0")
	expectBehindTLS(s, ptHost, podCA, ptLeaf)("passthrough: the pod's own certificate", 200, "pt-0")
	edPods := mustPods(t, ns, "ed")
	s.Eventually("edge without spec.tls: HTTPS with the default certificate, plain HTTP redirected", 15*time.Second, func() error {
		code, body, _, err := testkit.InsecureHTTPSGet(s.HTTPSAddr, edHost, "/")
		if err != nil || code != 200 || !slices.Contains(edPods, strings.TrimSpace(body)) {
			return fmt.Errorf("HTTPS %d %q %v, want 200 from %v", code, body, err, edPods)
		}
		code, loc, err := plainGet(s.HTTPAddr, edHost, "/x")
		if err != nil || code != http.StatusFound || !strings.HasPrefix(loc, "https://"+edHost) || !strings.HasSuffix(loc, "/x") {
			return fmt.Errorf("plain HTTP %d %q %v, want 302 to https", code, loc, err)
		}
		return nil
	})
	if r := s.Engine.Snapshot().Rejected; len(r) != 0 {
		t.Errorf("rejected %+v", r)
	}
}
