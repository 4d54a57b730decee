package e2e

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/demo"
	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/e2e/harness"
)

// TestWeightedRouteKeepsShares: web's Ingress is split 80/20 between the
// web and canary Services (dcm.io/weights). The primary is scaled 2→6→3 at
// runtime; after each step every server's weight has been recomputed and
// pushed without a reload, and 2,000 requests through the real haproxy
// split 80/20 within 5 points.
func TestWeightedRouteKeepsShares(t *testing.T) {
	s := harness.Start(t, harness.Options{Apps: []demo.App{
		{Namespace: "demo", Name: "web", Host: webHost, Path: "/", Replicas: 2},
		{Namespace: "demo", Name: "canary", Host: "canary.demo.localhost", Path: "/", Replicas: 1},
	}})
	s.DemoServes(webHost, "/", "demo", "web", 2)
	s.DemoServes("canary.demo.localhost", "/", "demo", "canary", 1)
	pid, reloads := s.WorkerPID(), s.Reloads()

	ingresses := s.Client.NetworkingV1().Ingresses("demo")
	ing, err := ingresses.Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ing.Annotations == nil {
		ing.Annotations = map[string]string{}
	}
	ing.Annotations[kube.AnnotationWeights] = "web=80,canary=20"
	if _, err := ingresses.Update(context.Background(), ing, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, n := range []int32{2, 6, 3} {
		s.Scale("demo", "web", n)
		want := dcm.ServerWeights([]int{80, 20}, []int{int(n), 1})
		s.Eventually(fmt.Sprintf("web×%d and canary×1 serve with weights %v", n, want), 20*time.Second, func() error {
			return weightsApplied(s, int(n), want)
		})
		const total = 2000
		got, err := s.Served(webHost, "/", total)
		if err != nil {
			t.Fatalf("web×%d: %v", n, err)
		}
		var web, canary int
		for pod, c := range got {
			switch {
			case strings.HasPrefix(pod, "web-"):
				web += c
			case strings.HasPrefix(pod, "canary-"):
				canary += c
			default:
				t.Fatalf("answered by %q, neither web nor canary", pod)
			}
		}
		share := float64(web) / total
		t.Logf("web×%d canary×1, weights %v: web %d, canary %d of %d (web %.1f %%)", n, want, web, canary, total, 100*share)
		if math.Abs(share-0.8) > 0.05 {
			t.Errorf("web×%d: web got %.1f %% of the requests, want 80±5 %%", n, 100*share)
		}
	}
	if got := s.WorkerPID(); got != pid {
		t.Errorf("HAProxy worker PID changed from %d to %d: something reloaded", pid, got)
	}
	if got := s.Reloads(); got != reloads {
		t.Errorf("dcm_reloads_total moved from %v to %v", reloads, got)
	}
}

// weightsApplied checks the web backend in the engine's snapshot (what dcm
// applied, refreshed by what HAProxy reports; the split of the requests
// is the proof that HAProxy has the weights): a
// ready server for every ready pod of web (weight want[0]) and of canary
// (weight want[1]), nothing else ready.
func weightsApplied(s *harness.Stack, webPods int, want []int) error {
	ready := map[string]int{}
	for _, p := range s.ReadyPods("demo", "web") {
		ready[p] = want[0]
	}
	for _, p := range s.ReadyPods("demo", "canary") {
		ready[p] = want[1]
	}
	if len(ready) != webPods+1 {
		return fmt.Errorf("%d pods ready, want %d", len(ready), webPods+1)
	}
	var seen []string
	for _, srv := range s.Backend(webBE).Servers {
		if srv.State != dcm.StateReady {
			continue
		}
		w, ok := ready[srv.Pod]
		if !ok {
			return fmt.Errorf("server %s of pod %q is ready, the pod is not", srv.Name, srv.Pod)
		}
		if srv.Weight != w {
			return fmt.Errorf("server %s: weight %d, want %d", srv.Name, srv.Weight, w)
		}
		seen = append(seen, srv.Pod)
	}
	if len(seen) != len(ready) {
		slices.Sort(seen)
		return fmt.Errorf("ready servers for %v, ready pods %v", seen, ready)
	}
	return nil
}
