package cluster

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/e2e/kapitest"
	"github.com/dcm-router/dcm/internal/testkit"
)

// TestRouteExternalCertificate: through the real API server, an edge
// Route with spec.tls.externalCertificate is served with its Secret's
// certificate (checked by serial) and admitted; a rotation of the Secret
// reaches HAProxy as a set ssl cert, without a reload; deleting the Secret
// makes the Route Admitted=False ExternalCertificateValidationFailed, and
// creating it again admits it again — the same worker throughout.
func TestRouteExternalCertificate(t *testing.T) {
	installRouteCRD(t)
	t.Cleanup(func() { removeRouteCRD(t) })
	ns := kapitest.Namespace(t, env.admin)
	ctx := context.Background()
	createApp(t, ns, "web", 1, "web."+ns+".test", "/")
	host := "ext." + ns + ".test"
	ca := testkit.NewCA(t)
	leaf1, leaf2 := ca.Leaf(t, host), ca.Leaf(t, host)
	secretOf := func(l testkit.Leaf) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ext-tls"}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{corev1.TLSCertKey: l.CertPEM, corev1.TLSPrivateKeyKey: l.KeyPEM}}
	}
	secrets := env.admin.CoreV1().Secrets(ns)
	if _, err := secrets.Create(ctx, secretOf(leaf1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	u := osRoute(ns, "ext", host, "", "web", 100, nil)
	u.Object["spec"].(map[string]any)["tls"] = map[string]any{"termination": "edge",
		"externalCertificate": map[string]any{"name": "ext-tls"}}
	routes := adminDynamic(t).Resource(kube.RouteGVR).Namespace(ns)
	s := startRouteDCM(t, ns, nil)
	pid, reloads := s.WorkerPID(), s.Reloads()
	if _, err := routes.Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	expectBehindTLS(s.Stack, host, ca, leaf1)("the Secret's certificate served", http.StatusOK, "")
	admitted(t, routes, "ext", "True", "")

	cur, err := secrets.Get(ctx, "ext-tls", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Data = secretOf(leaf2).Data
	if _, err := secrets.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expectBehindTLS(s.Stack, host, ca, leaf2)("the rotated certificate served", http.StatusOK, "")
	if !slices.ContainsFunc(s.Commands(), func(c string) bool { return strings.HasPrefix(c, "set ssl cert certs/"+host+".pem") }) {
		t.Errorf("no set ssl cert for %s among %q", host, s.Commands())
	}

	if err := secrets.Delete(ctx, "ext-tls", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	admitted(t, routes, "ext", "False", kube.ReasonExternalCertificate)
	if _, err := secrets.Create(ctx, secretOf(leaf1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	admitted(t, routes, "ext", "True", "")
	expectBehindTLS(s.Stack, host, ca, leaf1)("served again once the Secret is back", http.StatusOK, "")
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("worker %d → %d, reloads %v → %v", pid, s.WorkerPID(), reloads, s.Reloads())
	}
}
