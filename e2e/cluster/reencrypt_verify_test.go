package cluster

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/e2e/kapitest"
	"github.com/dcm-router/dcm/internal/testkit"
	"github.com/dcm-router/dcm/system"
)

// serviceWithPods creates Service name and a hand-written EndpointSlice
// listing pods on its http port.
func serviceWithPods(t *testing.T, ns, name string, pods ...testkit.Backend) *discoveryv1.EndpointSlice {
	t.Helper()
	createService(t, ns, name, nil)
	sl := handSlice(ns, pods)
	sl.Name = name + "-1"
	sl.Labels[discoveryv1.LabelServiceName] = name
	sl.Ports[0].Port = ptr.To(int32(pods[0].Port))
	created, err := env.admin.DiscoveryV1().EndpointSlices(ns).Create(context.Background(), sl, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// httpsAnswers asks host n times, each on a fresh connection, and counts
// the answers by body (non-200 answers as "<status>").
func httpsAnswers(t *testing.T, addr, host string, front *testkit.CA, n int) map[string]int {
	t.Helper()
	out := map[string]int{}
	for range n {
		code, body, _, err := testkit.HTTPSGet(addr, host, "/", front.Pool())
		switch {
		case err != nil:
			out["error"]++
		case code != http.StatusOK:
			out[http.StatusText(code)]++
		default:
			out[body]++
		}
	}
	return out
}

// TestReencryptVerificationAsOpenShift: reencrypt Routes verify their pods
// as OpenShift's router does, through the real API server and haproxy. A
// Route with its own destinationCACertificate verifies the chain only: a
// pod whose certificate names something else entirely is served. A Route
// on the default destination CA verifies each Service's own name,
// <service>.<ns>.svc, the alternate backend's too: both serve; an
// alternate pod whose certificate names the primary Service is refused
// while the primary keeps serving. No reload.
func TestReencryptVerificationAsOpenShift(t *testing.T) {
	installRouteCRD(t)
	t.Cleanup(func() { removeRouteCRD(t) })
	ns := kapitest.Namespace(t, env.admin)
	ctx := context.Background()
	front, podCA, serviceCA := testkit.NewCA(t), testkit.NewCA(t), testkit.NewCA(t)
	caFile := filepath.Join(t.TempDir(), "service-ca.crt")
	if err := os.WriteFile(caFile, serviceCA.CertPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	routes := adminDynamic(t).Resource(kube.RouteGVR).Namespace(ns)

	custom := startTLSPod(t, 246, 1, "custom-pod", podCA.Leaf(t, "pods.internal.example"))
	serviceWithPods(t, ns, "custom", custom)
	customHost, splitHost := "custom."+ns+".test", "split."+ns+".test"
	customLeaf, splitLeaf := front.Leaf(t, customHost), front.Leaf(t, splitHost)
	u := osRoute(ns, "custom", customHost, "", "custom", 100, nil)
	spec := u.Object["spec"].(map[string]any)
	spec["port"] = map[string]any{"targetPort": "http"}
	spec["tls"] = map[string]any{"termination": "reencrypt", "certificate": string(customLeaf.CertPEM), "key": string(customLeaf.KeyPEM),
		"destinationCACertificate": string(podCA.CertPEM())}
	if _, err := routes.Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	primary := startTLSPod(t, 246, 2, "primary-pod", serviceCA.Leaf(t, "primary."+ns+".svc"))
	alt := startTLSPod(t, 246, 3, "alt-pod", serviceCA.Leaf(t, "alt."+ns+".svc"))
	impostor := startTLSPod(t, 246, 4, "impostor-pod", serviceCA.Leaf(t, "primary."+ns+".svc"))
	serviceWithPods(t, ns, "primary", primary)
	altSlice := serviceWithPods(t, ns, "alt", alt)
	split := osRoute(ns, "split", splitHost, "", "primary", 50, map[string]int64{"alt": 50})
	spec = split.Object["spec"].(map[string]any)
	spec["port"] = map[string]any{"targetPort": "http"}
	spec["tls"] = map[string]any{"termination": "reencrypt", "certificate": string(splitLeaf.CertPEM), "key": string(splitLeaf.KeyPEM)}
	if _, err := routes.Create(ctx, split, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	s := startRouteDCMIn(t, []string{ns}, func(c *system.Config) { c.DefaultBackendCAFile = caFile })
	expectBehindTLS(s.Stack, customHost, front, customLeaf)("own CA: the chain only", http.StatusOK, "custom-pod")
	expectBehindTLS(s.Stack, splitHost, front, splitLeaf)("default CA: the primary serves", http.StatusOK, "")
	pid, reloads := s.WorkerPID(), s.Reloads()
	if got := httpsAnswers(t, s.HTTPSAddr, splitHost, front, 20); got["primary-pod"] == 0 || got["alt-pod"] == 0 || got["primary-pod"]+got["alt-pod"] != 20 {
		t.Errorf("default CA: answers %v, want both pods, verified against their own Service's name", got)
	}

	// The impostor's certificate names the primary Service: fine for the
	// primary's servers, not for the alternate's.
	next := handSlice(ns, []testkit.Backend{impostor})
	next.Name, next.ResourceVersion = altSlice.Name, altSlice.ResourceVersion
	next.Labels[discoveryv1.LabelServiceName] = "alt"
	next.Ports[0].Port = ptr.To(int32(impostor.Port))
	if _, err := env.admin.DiscoveryV1().EndpointSlices(ns).Update(ctx, next, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Eventually("the alternate's pod replaced", 15*time.Second, func() error {
		for _, b := range s.Engine.Snapshot().Backends {
			if b.Route.Host != splitHost {
				continue
			}
			var live []string
			for _, sv := range b.Servers {
				if !sv.Retired {
					live = append(live, sv.Addr)
				}
			}
			if slices.Contains(live, impostor.Addr) && !slices.Contains(live, alt.Addr) {
				return nil
			}
			return fmt.Errorf("servers at %v", live)
		}
		return fmt.Errorf("no backend for %s", splitHost)
	})
	got := httpsAnswers(t, s.HTTPSAddr, splitHost, front, 20)
	if got["impostor-pod"] != 0 || got["primary-pod"] == 0 {
		t.Errorf("an alternate pod naming another Service: answers %v, want it refused and the primary serving", got)
	}
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("worker %d → %d, reloads %v → %v", pid, s.WorkerPID(), reloads, s.Reloads())
	}
}
