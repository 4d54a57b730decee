package cluster

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/e2e/kapitest"
	"github.com/dcm-router/dcm/internal/testkit"
	"github.com/dcm-router/dcm/system"
)

// TestWildcardRoute: with --allow-wildcard-routes, an edge Route with
// wildcardPolicy Subdomain and host www.<domain>, its certificate for
// *.<domain> inline, serves a.<domain> and b.<domain> over HTTPS with that
// certificate (checked by serial, by SNI) and over plain HTTP (Allow);
// an Ingress for an exact host under the domain keeps its host, two labels
// under the domain find nothing. An Ingress host *.<domain> with its
// certificate from a Secret is served the same. The Route comes and goes
// without a reload.
func TestWildcardRoute(t *testing.T) {
	installRouteCRD(t)
	t.Cleanup(func() { removeRouteCRD(t) })
	ns := kapitest.Namespace(t, env.admin)
	ctx := context.Background()
	domain := "wild." + ns + ".test"
	exact := "exact." + domain
	createApp(t, ns, "exact", 1, exact, "/")
	createApp(t, ns, "wild", 1, "wild-app."+ns+".test", "/")
	s := startRouteDCMIn(t, []string{ns}, func(c *system.Config) { c.AllowWildcardRoutes = true })
	rec := s.Subscribe(t)
	s.Serves(exact, "/", 1, readyPods(ns, "exact"))
	unmatched, _, err := s.Get("nobody."+domain, "/")
	if err != nil {
		t.Fatal(err)
	}
	pid, reloads := s.WorkerPID(), s.Reloads()

	ca := testkit.NewCA(t)
	leaf := ca.Leaf(t, "*."+domain)
	u := osRoute(ns, "wild", "www."+domain, "", "wild", 100, nil)
	spec := u.Object["spec"].(map[string]any)
	spec["wildcardPolicy"] = "Subdomain"
	spec["tls"] = map[string]any{"termination": "edge",
		"certificate": string(leaf.CertPEM), "key": string(leaf.KeyPEM), "insecureEdgeTerminationPolicy": "Allow"}
	routes := adminDynamic(t).Resource(kube.RouteGVR).Namespace(ns)
	if _, err := routes.Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wildPods := mustPods(t, ns, "wild")
	for _, host := range []string{"a." + domain, "b." + domain, "www." + domain} {
		s.Eventually(host+" served over TLS with the wildcard certificate", 15*time.Second, func() error {
			code, body, got, err := testkit.HTTPSGet(s.HTTPSAddr, host, "/", ca.Pool())
			switch {
			case err != nil:
				return err
			case code != http.StatusOK || !slices.Contains(wildPods, strings.TrimSpace(body)):
				return fmt.Errorf("HTTP %d %q, want 200 from %v", code, body, wildPods)
			case got.SerialNumber.Cmp(leaf.Cert.SerialNumber) != 0:
				return fmt.Errorf("serial %s, want %s", got.SerialNumber, leaf.Cert.SerialNumber)
			}
			return nil
		})
		if err := s.ServesExactly(host, "/", wildPods, 4); err != nil {
			t.Errorf("plain HTTP %s: %v", host, err)
		}
	}
	admitted(t, routes, "wild", "True", "")
	if err := s.ServesExactly(exact, "/", mustPods(t, ns, "exact"), 6); err != nil {
		t.Errorf("the exact host under the wildcard: %v", err)
	}
	if err := s.ExpectStatus("a.b."+domain, "/", unmatched); err != nil {
		t.Errorf("two labels under the domain: %v, want %d", err, unmatched)
	}

	// An Ingress host *.<domain>, its certificate from a Secret.
	ingDomain := "ing." + ns + ".test"
	ingLeaf := ca.Leaf(t, "*."+ingDomain)
	if _, err := env.admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wild-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: ingLeaf.CertPEM, corev1.TLSPrivateKeyKey: ingLeaf.KeyPEM}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ing := ingressFor(ns, "wild-ing", "*."+ingDomain, "/", "wild")
	ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"*." + ingDomain}, SecretName: "wild-tls"}}
	if _, err := env.admin.NetworkingV1().Ingresses(ns).Create(ctx, ing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Eventually("x."+ingDomain+" served with the Ingress's wildcard certificate", 15*time.Second, func() error {
		code, body, got, err := testkit.HTTPSGet(s.HTTPSAddr, "x."+ingDomain, "/", ca.Pool())
		switch {
		case err != nil:
			return err
		case code != http.StatusOK || !slices.Contains(wildPods, strings.TrimSpace(body)):
			return fmt.Errorf("HTTP %d %q", code, body)
		case got.SerialNumber.Cmp(ingLeaf.Cert.SerialNumber) != 0:
			return fmt.Errorf("serial %s, want %s", got.SerialNumber, ingLeaf.Cert.SerialNumber)
		}
		return nil
	})

	if err := routes.Delete(ctx, "wild", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Eventually("a."+domain+" no longer served", 15*time.Second, func() error {
		return s.ExpectStatus("a."+domain, "/", unmatched)
	})
	if err := s.ServesExactly(exact, "/", mustPods(t, ns, "exact"), 4); err != nil {
		t.Errorf("the exact host after the wildcard went: %v", err)
	}
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("HAProxy reloaded: worker %d → %d, reloads %v → %v (reasons %v)", pid, s.WorkerPID(), reloads, s.Reloads(), rec.ReloadReasons())
	}
}

// TestWildcardRouteRefusedWithoutFlag: without --allow-wildcard-routes a
// Subdomain Route is not admitted, with a reason that names the flag.
func TestWildcardRouteRefusedWithoutFlag(t *testing.T) {
	installRouteCRD(t)
	t.Cleanup(func() { removeRouteCRD(t) })
	ns := kapitest.Namespace(t, env.admin)
	createApp(t, ns, "web", 1, "web."+ns+".test", "/")
	s := startRouteDCMIn(t, []string{ns}, nil)
	s.Serves("web."+ns+".test", "/", 1, readyPods(ns, "web"))
	u := osRoute(ns, "wild", "www.wild."+ns+".test", "", "web", 100, nil)
	u.Object["spec"].(map[string]any)["wildcardPolicy"] = "Subdomain"
	routes := adminDynamic(t).Resource(kube.RouteGVR).Namespace(ns)
	if _, err := routes.Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	admitted(t, routes, "wild", "False", dcm.RejectUnsupported)
	named := false
	for _, r := range s.Engine.Snapshot().Rejected {
		named = named || r.Object.Name == "wild" && strings.Contains(r.Message, kube.FlagAllowWildcardRoutes)
	}
	if !named {
		t.Errorf("no rejection of wild names %s: %+v", kube.FlagAllowWildcardRoutes, s.Engine.Snapshot().Rejected)
	}
	if code, _, err := s.Get("a.wild."+ns+".test", "/"); err != nil || code == http.StatusOK {
		t.Errorf("a.wild served without the flag: %d %v", code, err)
	}
}

// TestWildcardOwnsDomain: a wildcard Route claims its domain for its
// namespace, as OpenShift's host admission does: a younger Route of another
// namespace for a host under the domain is not admitted
// (HostAlreadyClaimed) and not served; once the wildcard goes, it is.
func TestWildcardOwnsDomain(t *testing.T) {
	installRouteCRD(t)
	t.Cleanup(func() { removeRouteCRD(t) })
	nsA, nsB := kapitest.Namespace(t, env.admin), kapitest.Namespace(t, env.admin)
	ctx := context.Background()
	domain := "owned." + nsA + ".test"
	createApp(t, nsA, "wild", 1, "wild-app."+nsA+".test", "/")
	createApp(t, nsB, "other", 1, "other-app."+nsB+".test", "/")
	s := startRouteDCMIn(t, []string{nsA, nsB}, func(c *system.Config) { c.AllowWildcardRoutes = true })
	routesA := adminDynamic(t).Resource(kube.RouteGVR).Namespace(nsA)
	u := osRoute(nsA, "wild", "www."+domain, "", "wild", 100, nil)
	u.Object["spec"].(map[string]any)["wildcardPolicy"] = "Subdomain"
	if _, err := routesA.Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Serves("b."+domain, "/", 1, readyPods(nsA, "wild"))
	afterA(t, routesA, "wild")
	routesB := adminDynamic(t).Resource(kube.RouteGVR).Namespace(nsB)
	if _, err := routesB.Create(ctx, osRoute(nsB, "b", "b."+domain, "", "other", 100, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	admitted(t, routesB, "b", "False", dcm.RejectHostClaimed)
	if err := s.ServesExactly("b."+domain, "/", mustPods(t, nsA, "wild"), 4); err != nil {
		t.Errorf("b.%s while the wildcard holds the domain: %v", domain, err)
	}
	if err := routesA.Delete(ctx, "wild", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	admitted(t, routesB, "b", "True", "")
	s.Serves("b."+domain, "/", 1, readyPods(nsB, "other"))
}
