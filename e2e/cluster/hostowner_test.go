package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/e2e/kapitest"
	"github.com/dcm-router/dcm/internal/testkit"
	"github.com/dcm-router/dcm/system"
)

// startRouteDCMIn is startRouteDCM watching several namespaces.
func startRouteDCMIn(t *testing.T, namespaces []string, edit func(*system.Config)) routeStack {
	t.Helper()
	o := dcmOptions(t, namespaces[0])
	o.Config = func(c *system.Config) {
		c.Namespaces, c.HTTPSRedirectPort = namespaces, 443
		c.RoutesRecheck, c.RoutesMaxRecheck = 200*time.Millisecond, time.Second
		if edit != nil {
			edit(c)
		}
	}
	return routeStack{Stack: harness.Start(t, o)}
}

// TestHostOwnedByNamespace: namespace A serves host H with an Ingress on
// /a and a Route on /r; namespace B's younger Route (/admin) and Ingress
// (/b) for H are refused with HostAlreadyClaimed — the Route's status as
// OpenShift writes it, the Ingress in the event log — and not served: A's
// paths still answer, B's answer as an unknown host does. A's objects
// deleted, B's are served. No reload.
func TestHostOwnedByNamespace(t *testing.T) {
	installRouteCRD(t)
	t.Cleanup(func() { removeRouteCRD(t) })
	nsA, nsB := kapitest.Namespace(t, env.admin), kapitest.Namespace(t, env.admin)
	ctx := context.Background()
	host := "shared." + nsA + ".test"
	createApp(t, nsA, "web", 1, host, "/a")
	routesA := adminDynamic(t).Resource(kube.RouteGVR).Namespace(nsA)
	if _, err := routesA.Create(ctx, osRoute(nsA, "r", host, "/r", "web", 100, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createApp(t, nsB, "other", 1, "other."+nsB+".test", "/")
	s := startRouteDCMIn(t, []string{nsA, nsB}, nil)
	rec := s.Subscribe(t)
	s.Serves(host, "/a", 1, readyPods(nsA, "web"))
	s.Serves(host, "/r", 1, readyPods(nsA, "web"))
	pid, reloads := s.WorkerPID(), s.Reloads()
	unmatched, _, err := s.Get("nobody."+nsA+".test", "/")
	if err != nil {
		t.Fatal(err)
	}
	afterA(t, routesA, "r")

	routesB := adminDynamic(t).Resource(kube.RouteGVR).Namespace(nsB)
	if _, err := routesB.Create(ctx, osRoute(nsB, "admin", host, "/admin", "other", 100, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createIngress(t, nsB, "b", host, "/b", "other")
	admitted(t, routesB, "admin", "False", dcm.RejectHostClaimed)
	refused(t, s.Stack, rec, dcm.ObjectRef{Kind: kube.KindIngress, Namespace: nsB, Name: "b"},
		fmt.Sprintf("host %q belongs to namespace %s", host, nsA))
	if got := s.Counter("dcm_rejected_objects_total", "reason", dcm.RejectHostClaimed); got != 2 {
		t.Errorf("dcm_rejected_objects_total{reason=HostAlreadyClaimed} = %v, want 2", got)
	}
	for _, path := range []string{"/admin", "/b"} {
		if err := s.ExpectStatus(host, path, unmatched); err != nil {
			t.Errorf("%s%s of namespace B: %v, want %d as an unknown host", host, path, err, unmatched)
		}
	}
	for _, path := range []string{"/a", "/r"} {
		if err := s.ServesExactly(host, path, mustPods(t, nsA, "web"), 6); err != nil {
			t.Errorf("%s%s of namespace A: %v", host, path, err)
		}
	}

	if err := env.admin.NetworkingV1().Ingresses(nsA).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := routesA.Delete(ctx, "r", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Serves(host, "/admin", 1, readyPods(nsB, "other"))
	s.Serves(host, "/b", 1, readyPods(nsB, "other"))
	admitted(t, routesB, "admin", "True", "")
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("HAProxy reloaded: worker %d → %d, reloads %v → %v (reasons %v)", pid, s.WorkerPID(), reloads, s.Reloads(), rec.ReloadReasons())
	}
}

// afterA waits until a clock second has passed since the Route was
// created: creationTimestamp counts seconds, and B's objects must be the
// younger ones, not tied with A's.
func afterA(t *testing.T, routes dynamic.ResourceInterface, name string) {
	t.Helper()
	u, err := routes.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created := u.GetCreationTimestamp().Time
	testkit.Eventually(t, "a second after "+name+" was created", 5*time.Second, func() error {
		if !time.Now().Truncate(time.Second).After(created) {
			return fmt.Errorf("still %s", created)
		}
		return nil
	})
}

// TestCrossNamespaceHostsAllowed: with --allow-cross-namespace-hosts, two
// namespaces' Ingresses share a host path by path.
func TestCrossNamespaceHostsAllowed(t *testing.T) {
	nsA, nsB := kapitest.Namespace(t, env.admin), kapitest.Namespace(t, env.admin)
	host := "shared." + nsA + ".test"
	createApp(t, nsA, "web", 1, host, "/a")
	createApp(t, nsB, "other", 1, host, "/b")
	s := startRouteDCMIn(t, []string{nsA, nsB}, func(c *system.Config) { c.AllowCrossNamespaceHosts = true })
	s.Serves(host, "/a", 1, readyPods(nsA, "web"))
	s.Serves(host, "/b", 1, readyPods(nsB, "other"))
	if r := s.Engine.Snapshot().Rejected; len(r) != 0 {
		t.Errorf("refused: %+v", r)
	}
}
