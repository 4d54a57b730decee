package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/e2e/kapitest"
	"github.com/dcm-router/dcm/internal/testkit"
)

// TestIngressReencryptThroughAPIServer: through the real API server and
// dcm's own ServiceAccount, a kubernetes.io/tls Secret carrying the host's
// certificate and, in ca.crt, the pods' CA (as cert-manager issues it), and
// an Ingress naming it in spec.tls and dcm.io/backend-ca: HTTPS reaches the
// pod, which terminates TLS with a certificate for secure.<ns>.svc that
// HAProxy verifies; a pod whose certificate another CA signed, put in the
// EndpointSlice instead, gets nothing (503). Same worker, no reload.
func TestIngressReencryptThroughAPIServer(t *testing.T) {
	ns := kapitest.Namespace(t, env.admin)
	host := "secure." + ns + ".test"
	front, podCA, rogue := testkit.NewCA(t), testkit.NewCA(t), testkit.NewCA(t)
	good := startTLSPod(t, 252, 7, "secure-good", podCA.Leaf(t, "secure."+ns+".svc"))
	bad := startTLSPod(t, 252, 8, "secure-bad", rogue.Leaf(t, "secure."+ns+".svc"))
	createService(t, ns, "secure", nil)
	ctx := context.Background()
	slice := func(b testkit.Backend) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "secure-1", Labels: map[string]string{
				discoveryv1.LabelServiceName: "secure", discoveryv1.LabelManagedBy: "e2e.dcm.io"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(b.Port))}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{b.Addr}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
				TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: b.Name}}},
		}
	}
	created, err := env.admin.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice(good), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	leaf := front.Leaf(t, host)
	if _, err := env.admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "secure-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: leaf.CertPEM, corev1.TLSPrivateKeyKey: leaf.KeyPEM, kube.CAKey: podCA.CertPEM()}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ing := ingressFor(ns, "secure", host, "/", "secure")
	ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{host}, SecretName: "secure-tls"}}
	ing.Annotations = map[string]string{kube.AnnotationBackendCA: "secure-tls"}
	if _, err := env.admin.NetworkingV1().Ingresses(ns).Create(ctx, ing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := harness.Start(t, dcmOptions(t, ns))
	expect := expectBehindTLS(s, host, front, leaf)
	expect("the verified pod serves", 200, "secure-good")
	pid, reloads := s.WorkerPID(), s.Reloads()

	next := slice(bad)
	next.ResourceVersion = created.ResourceVersion
	if _, err := env.admin.DiscoveryV1().EndpointSlices(ns).Update(ctx, next, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("a pod of another CA gets nothing", 503, "")
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("worker %d → %d, reloads %v → %v", pid, s.WorkerPID(), reloads, s.Reloads())
	}
}

// expectBehindTLS returns a check that waits until HTTPS to host, served
// with leaf (verified against front), answers code and, unless empty, body:
// what a reencrypt route's pods give once HAProxy verified them, or 503.
func expectBehindTLS(s *harness.Stack, host string, front *testkit.CA, leaf testkit.Leaf) func(what string, code int, body string) {
	return func(what string, code int, body string) {
		s.Eventually(what, 15*time.Second, func() error {
			got, b, served, err := testkit.HTTPSGet(s.HTTPSAddr, host, "/", front.Pool())
			switch {
			case err != nil:
				return err
			case served.SerialNumber.Cmp(leaf.Cert.SerialNumber) != 0:
				return fmt.Errorf("certificate serial %s, not the route's", served.SerialNumber)
			case got != code || (body != "" && b != body):
				return fmt.Errorf("HTTP %d %q", got, b)
			}
			return nil
		})
	}
}
