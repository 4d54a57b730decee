package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/internal/testkit"
)

// TestIngressTLSFromSecret: the Kubernetes path end to end, against the demo
// cluster — a kubernetes.io/tls Secret and an Ingress given spec.tls turn
// the host into an edge route served over HTTPS with that certificate; an
// update of the Secret rotates it at runtime; an update HAProxy could not
// load is rejected (with its reason, in the metric) and the last valid
// certificate stays. No reload, the same worker throughout.
func TestIngressTLSFromSecret(t *testing.T) {
	ca := testkit.NewCA(t)
	s := harness.Start(t, harness.Options{HTTPS: true,
		Caps: dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 4, RuntimeCerts: true}})
	s.DemoServes("web.demo.localhost", "/", "demo", "web", 2)
	pid, reloads := s.WorkerPID(), s.Reloads()
	ctx := context.Background()
	secrets := s.Client.CoreV1().Secrets("demo")
	secret := func(l testkit.Leaf, key []byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web-tls"}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{corev1.TLSCertKey: l.CertPEM, corev1.TLSPrivateKeyKey: key}}
	}
	serves := func(step string, want testkit.Leaf) {
		t.Helper()
		s.Eventually(step, 10*time.Second, func() error {
			code, _, leaf, err := testkit.HTTPSGet(s.HTTPSAddr, "web.demo.localhost", "/", ca.Pool())
			switch {
			case err != nil:
				return err
			case code != 200:
				return fmt.Errorf("HTTP %d", code)
			case leaf.SerialNumber.Cmp(want.Cert.SerialNumber) != 0:
				return fmt.Errorf("serial %s", leaf.SerialNumber)
			}
			return nil
		})
	}

	one := ca.Leaf(t, "web.demo.localhost")
	if _, err := secrets.Create(ctx, secret(one, one.KeyPEM), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ing, err := s.Client.NetworkingV1().Ingresses("demo").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"web.demo.localhost"}, SecretName: "web-tls"}}
	if _, err := s.Client.NetworkingV1().Ingresses("demo").Update(ctx, ing, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	serves("the Ingress's host served with the Secret's certificate", one)

	two := ca.Leaf(t, "web.demo.localhost")
	if _, err := secrets.Update(ctx, secret(two, two.KeyPEM), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	serves("the rotated certificate served", two)

	rejected := s.Counter("dcm_rejected_objects_total", "reason", dcm.RejectInvalidValue)
	if _, err := secrets.Update(ctx, secret(ca.Leaf(t, "web.demo.localhost"), one.KeyPEM), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Eventually("the mismatched key rejected", 10*time.Second, func() error {
		if got := s.Counter("dcm_rejected_objects_total", "reason", dcm.RejectInvalidValue); got != rejected+1 {
			return fmt.Errorf("%v rejections", got)
		}
		return nil
	})
	serves("the last valid certificate still served", two)

	if got := s.WorkerPID(); got != pid {
		t.Errorf("worker %d, was %d", got, pid)
	}
	if got := s.Reloads(); got != reloads {
		t.Errorf("%v reloads, was %v", got, reloads)
	}
}
