package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/e2e/kapitest"
	"github.com/dcm-router/dcm/internal/testkit"
	"github.com/dcm-router/dcm/system"
)

// labelPatch is a merge patch that sets (or, with v "", removes) a label.
func labelPatch(t *testing.T, k, v string) []byte {
	t.Helper()
	var val any = v
	if v == "" {
		val = nil
	}
	b, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{k: val}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// noStatusOfDCM checks that the Route has no entry of dcm's in its
// status.ingress, now or within a while: a check that something stays
// absent waits until it holds, then checks again after dcm had the time
// to write it.
func noStatusOfDCM(t *testing.T, routes dynamic.ResourceInterface, name string) {
	t.Helper()
	check := func() error {
		u, err := routes.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		entries, _, _ := unstructured.NestedSlice(u.Object, "status", "ingress")
		for _, e := range entries {
			if m, _ := e.(map[string]any); m["routerName"] == kube.DefaultRouterName {
				return fmt.Errorf("dcm's status entry %v", m)
			}
		}
		return nil
	}
	testkit.Eventually(t, "Route "+name+" without a status entry of dcm's", 15*time.Second, check)
}

// shardCase is one of TestShard's: how dcm is started and how an object
// is moved into (in true) or out of its shard.
type shardCase struct {
	name   string
	config func(c *system.Config)
	move   func(t *testing.T, ns string, in bool)
}

// TestShard: a Route and an Ingress outside dcm's shard — by their own
// label (--route-selector) or their namespace's (--namespace-selector) —
// are not served (they answer as an unknown host) and the Route gets no
// status entry from dcm; relabelled into the shard they are served and
// the Route Admitted; relabelled out, they answer as unknown again and
// dcm's status entry is gone. All at runtime, without a reload.
func TestShard(t *testing.T) {
	installRouteCRD(t)
	t.Cleanup(func() { removeRouteCRD(t) })
	ctx := context.Background()
	for _, tc := range []shardCase{
		{name: "route selector", config: func(c *system.Config) { c.RouteSelector = "shard=internal" },
			move: func(t *testing.T, ns string, in bool) {
				v := map[bool]string{true: "internal", false: ""}[in]
				if _, err := env.admin.NetworkingV1().Ingresses(ns).Patch(ctx, "web", types.MergePatchType, labelPatch(t, "shard", v), metav1.PatchOptions{}); err != nil {
					t.Fatal(err)
				}
				if _, err := adminDynamic(t).Resource(kube.RouteGVR).Namespace(ns).Patch(ctx, "r", types.MergePatchType, labelPatch(t, "shard", v), metav1.PatchOptions{}); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "namespace selector", config: func(c *system.Config) { c.NamespaceSelector = "router=internal" },
			move: func(t *testing.T, ns string, in bool) {
				v := map[bool]string{true: "internal", false: ""}[in]
				if _, err := env.admin.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, labelPatch(t, "router", v), metav1.PatchOptions{}); err != nil {
					t.Fatal(err)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) { testShard(t, tc) })
	}
}

func testShard(t *testing.T, tc shardCase) {
	ctx := context.Background()
	ns := kapitest.Namespace(t, env.admin)
	ingHost, routeHost := "web."+ns+".test", "r."+ns+".test"
	createApp(t, ns, "web", 1, ingHost, "/")
	routes := adminDynamic(t).Resource(kube.RouteGVR).Namespace(ns)
	if _, err := routes.Create(ctx, osRoute(ns, "r", routeHost, "", "web", 100, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	o := dcmOptions(t, ns)
	o.Config = func(c *system.Config) {
		c.Namespaces, c.HTTPSRedirectPort = []string{ns}, 443
		c.RoutesRecheck, c.RoutesMaxRecheck = 200*time.Millisecond, time.Second
		tc.config(c)
	}
	s := harness.Start(t, o)
	rec := s.Subscribe(t)
	pid, reloads := s.WorkerPID(), s.Reloads()
	unmatched, _, err := s.Get("nobody."+ns+".test", "/")
	if err != nil {
		t.Fatal(err)
	}
	unserved := func(what string) {
		t.Helper()
		for _, host := range []string{ingHost, routeHost} {
			s.Eventually(host+" "+what+": answers as an unknown host", 15*time.Second, func() error {
				return s.ExpectStatus(host, "/", unmatched)
			})
		}
		noStatusOfDCM(t, routes, "r")
	}
	unserved("outside the shard")

	tc.move(t, ns, true)
	s.Serves(ingHost, "/", 1, readyPods(ns, "web"))
	s.Serves(routeHost, "/", 1, readyPods(ns, "web"))
	admitted(t, routes, "r", "True", "")

	tc.move(t, ns, false)
	unserved("moved out of the shard")
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("HAProxy reloaded: worker %d → %d, reloads %v → %v (reasons %v)", pid, s.WorkerPID(), reloads, s.Reloads(), rec.ReloadReasons())
	}
}
