package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/e2e/kapitest"
)

// TestRefusedUpdateKeepsServing: an Ingress and a Route served through the
// real API server and haproxy are updated to another Service with a bad
// annotation value. The update is refused — in the event log, and in the
// Route's status (Admitted True, reason UpdateRefused, naming the version
// served) — and the last accepted version keeps serving: every request
// succeeds, on the old Service. Fixed, the new version serves. No reload.
func TestRefusedUpdateKeepsServing(t *testing.T) {
	installRouteCRD(t)
	t.Cleanup(func() { removeRouteCRD(t) })
	ns := kapitest.Namespace(t, env.admin)
	ctx := context.Background()
	ingHost, routeHost := "web."+ns+".test", "r."+ns+".test"
	createApp(t, ns, "web", 1, ingHost, "/")
	createApp(t, ns, "canary", 1, "canary."+ns+".test", "/")
	routes := adminDynamic(t).Resource(kube.RouteGVR).Namespace(ns)
	if _, err := routes.Create(ctx, osRoute(ns, "r", routeHost, "", "web", 100, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := startRouteDCM(t, ns, nil)
	rec := s.Subscribe(t)
	s.Serves(ingHost, "/", 1, readyPods(ns, "web"))
	s.Serves(routeHost, "/", 1, readyPods(ns, "web"))
	admitted(t, routes, "r", "True", "")
	pid, reloads := s.WorkerPID(), s.Reloads()

	ings := env.admin.NetworkingV1().Ingresses(ns)
	ing, err := ings.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	servedIng := ing.ResourceVersion
	ing.Annotations = map[string]string{kube.AnnotationBalance: "bogus"}
	ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name = "canary"
	if _, err := ings.Update(ctx, ing, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rt, err := routes.Get(ctx, "r", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	servedRoute := rt.GetResourceVersion()
	rt.SetAnnotations(map[string]string{kube.AnnotationRouteBalance: "bogus"})
	rt.Object["spec"].(map[string]any)["to"].(map[string]any)["name"] = "canary"
	if _, err := routes.Update(ctx, rt, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, o := range []struct {
		ref     dcm.ObjectRef
		version string
	}{
		{dcm.ObjectRef{Kind: kube.KindIngress, Namespace: ns, Name: "web"}, servedIng},
		{dcm.ObjectRef{Kind: kube.KindRoute, Namespace: ns, Name: "r"}, servedRoute},
	} {
		refused(t, s.Stack, rec, o.ref, "update refused, resourceVersion "+o.version+" still served")
	}
	admitted(t, routes, "r", "True", kube.ReasonUpdateRefused)
	// Still the old version, every request.
	for _, host := range []string{ingHost, routeHost} {
		if err := s.ServesExactly(host, "/", mustPods(t, ns, "web"), 20); err != nil {
			t.Errorf("%s after the refused update: %v", host, err)
		}
	}

	ing, err = ings.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ing.Annotations = map[string]string{kube.AnnotationBalance: "roundrobin"}
	if _, err := ings.Update(ctx, ing, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rt, err = routes.Get(ctx, "r", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rt.SetAnnotations(map[string]string{kube.AnnotationRouteBalance: "roundrobin"})
	if _, err := routes.Update(ctx, rt, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Serves(ingHost, "/", 1, readyPods(ns, "canary"))
	s.Serves(routeHost, "/", 1, readyPods(ns, "canary"))
	admitted(t, routes, "r", "True", "")
	if r := s.Engine.Snapshot().Rejected; len(r) != 0 {
		t.Errorf("still refused once fixed: %+v", r)
	}
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("HAProxy reloaded: worker %d → %d, reloads %v → %v (reasons %v)", pid, s.WorkerPID(), reloads, s.Reloads(), rec.ReloadReasons())
	}
}

// refused waits until the event log says obj was refused with a message
// that contains want, and the snapshot lists it so.
func refused(t *testing.T, s *harness.Stack, rec *harness.Recorder, obj dcm.ObjectRef, want string) {
	t.Helper()
	s.Eventually(obj.String()+" refused: "+want, 15*time.Second, func() error {
		found := false
		for _, ev := range rec.Events() {
			if ev.Type == dcm.EventRejected && ev.Object != nil && *ev.Object == obj && strings.Contains(ev.Message, want) {
				found = true
			}
		}
		if !found {
			return fmt.Errorf("no rejected event for %s saying %q", obj, want)
		}
		for _, r := range s.Engine.Snapshot().Rejected {
			if r.Object == obj && strings.Contains(r.Message, want) {
				return nil
			}
		}
		return fmt.Errorf("snapshot's rejected %+v", s.Engine.Snapshot().Rejected)
	})
}

func mustPods(t *testing.T, ns, app string) []string {
	t.Helper()
	pods, err := readyPods(ns, app)()
	if err != nil {
		t.Fatal(err)
	}
	return pods
}
