package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dcm-router/dcm/system"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/e2e/kapitest"
	"github.com/dcm-router/dcm/internal/testkit"
)

// startDCM runs dcm on the deploy/ ServiceAccount's token, watching ns.
func startDCM(t *testing.T, ns string) *harness.Stack {
	t.Helper()
	return harness.Start(t, dcmOptions(t, ns))
}

// served deploys one app in a fresh namespace, starts dcm and waits until
// HAProxy serves every replica.
func served(t *testing.T, app string, replicas int32) (ns, host string, s *harness.Stack) {
	t.Helper()
	ns = kapitest.Namespace(t, env.admin)
	host = app + "." + ns + ".test"
	createApp(t, ns, app, replicas, host, "/")
	s = startDCM(t, ns)
	s.Serves(host, "/", int(replicas), readyPods(ns, app))
	return ns, host, s
}

// TestDeploymentScaleOutAndIn: a Deployment scaled through the API flows
// through the real deployment, replicaset and endpointslice controllers into
// HAProxy at runtime: every pod reached, the worker PID never changes.
func TestDeploymentScaleOutAndIn(t *testing.T) {
	ns, host, s := served(t, "web", 1)
	pid, reloads := s.WorkerPID(), s.Reloads()

	scale(t, ns, "web", 4)
	s.Serves(host, "/", 4, readyPods(ns, "web"))
	scale(t, ns, "web", 1)
	s.Serves(host, "/", 1, readyPods(ns, "web"))

	if got := s.WorkerPID(); got != pid {
		t.Errorf("HAProxy worker PID changed from %d to %d", pid, got)
	}
	if got := s.Reloads(); got != reloads {
		t.Errorf("dcm reloaded %v times for endpoint changes", got-reloads)
	}
}

// TestScaleToZeroAndBack: 503 with no pod, then 200 from each pod again.
func TestScaleToZeroAndBack(t *testing.T) {
	ns, host, s := served(t, "zero", 1)
	scale(t, ns, "zero", 0)
	s.Eventually("503 at zero replicas", 15*time.Second, func() error {
		return s.ExpectStatus(host, "/", http.StatusServiceUnavailable)
	})
	scale(t, ns, "zero", 1)
	s.Serves(host, "/", 1, readyPods(ns, "zero"))
	scale(t, ns, "zero", 2)
	s.Serves(host, "/", 2, readyPods(ns, "zero"))
}

// TestPodReplacement: a deleted pod is replaced by the ReplicaSet; traffic
// moves from the old pod to the new one without a reload.
func TestPodReplacement(t *testing.T) {
	ns, host, s := served(t, "repl", 2)
	pid := s.WorkerPID()
	before, _ := readyPods(ns, "repl")()
	victim := before[0]
	if err := env.admin.CoreV1().Pods(ns).Delete(context.Background(), victim, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Serves(host, "/", 2, func() ([]string, error) {
		pods, err := readyPods(ns, "repl")()
		for _, p := range pods {
			if p == victim {
				return nil, errors.New("the deleted pod is still ready")
			}
		}
		return pods, err
	})
	if s.WorkerPID() != pid {
		t.Error("HAProxy reloaded for a pod replacement")
	}
}

// TestSelectorlessServiceHandEditedSlice: the pods stay alive, so only dcm
// can explain why removed endpoints stop receiving traffic; requests in
// flight on them still complete.
func TestSelectorlessServiceHandEditedSlice(t *testing.T) {
	ns := kapitest.Namespace(t, env.admin)
	host := "manual." + ns + ".test"
	createService(t, ns, "manual", nil)
	createIngress(t, ns, "manual", host, "/", "manual")
	backends := []testkit.Backend{
		startPod(t, 250, 1, 8080, "m-a"),
		startPod(t, 250, 2, 8080, "m-b"),
		startPod(t, 250, 3, 8080, "m-c"),
	}
	slices := env.admin.DiscoveryV1().EndpointSlices(ns)
	slice := handSlice(ns, backends)
	created, err := slices.Create(context.Background(), slice, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := startDCM(t, ns)
	all := []string{"m-a", "m-b", "m-c"}
	s.Serves(host, "/", 3, func() ([]string, error) { return all, nil })
	pid := s.WorkerPID()

	var wg sync.WaitGroup
	codes := make(chan int, 6)
	for range 6 { // two per pod
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _, _ := s.Get(host, "/slow?ms=1500")
			codes <- code
		}()
	}
	s.Eventually("the slow requests are in the pods", 10*time.Second, func() error {
		held := 0
		for _, b := range backends {
			held += b.Held()
		}
		if held != 6 {
			return fmt.Errorf("%d of 6 requests in the pods", held)
		}
		return nil
	})
	kept := handSlice(ns, backends[:1])
	kept.ResourceVersion = created.ResourceVersion
	if _, err := slices.Update(context.Background(), kept, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Serves(host, "/", 1, func() ([]string, error) { return []string{"m-a"}, nil })
	wg.Wait()
	close(codes)
	for code := range codes {
		if code != http.StatusOK {
			t.Errorf("a request in flight on a removed endpoint got HTTP %d", code)
		}
	}
	if s.WorkerPID() != pid {
		t.Error("HAProxy reloaded for an EndpointSlice edit")
	}
}

// handSlice is an EndpointSlice a user (or another controller) manages for
// a Service without a selector.
func handSlice(ns string, backends []testkit.Backend) *discoveryv1.EndpointSlice {
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "manual-1", Labels: map[string]string{
			discoveryv1.LabelServiceName: "manual", discoveryv1.LabelManagedBy: "e2e.dcm.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}},
	}
	for _, b := range backends {
		sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{b.Addr},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: b.Name},
		})
	}
	return sl
}

// TestTwoIngressesOneHostAndRouteChanges: two Ingresses share a host with
// different paths, each path reaches its own pods; an Ingress added and
// deleted takes effect. Without spare backends (--pool-size=0, the option
// this test is about) each is a reload that says why; TestIngressesThroughSpares
// is the same change as shipped, without one.
func TestTwoIngressesOneHostAndRouteChanges(t *testing.T) {
	ns := kapitest.Namespace(t, env.admin)
	host := "shared." + ns + ".test"
	createApp(t, ns, "front", 1, host, "/")
	createApp(t, ns, "api", 2, host, "/api")
	o := dcmOptions(t, ns)
	namespaced := o.Config
	o.Config = func(c *system.Config) { namespaced(c); c.PoolSize, c.StickyPoolSize = 0, 0 }
	s := harness.Start(t, o)
	rec := s.Subscribe(t)
	s.Serves(host, "/", 1, readyPods(ns, "front"))
	s.Serves(host, "/api", 2, readyPods(ns, "api"))
	s.Serves(host, "/api/v1/x", 2, readyPods(ns, "api"))
	s.Serves(host, "/apix", 1, readyPods(ns, "front"))

	// A third app on a new host: added, served, removed.
	extra := "extra." + ns + ".test"
	createApp(t, ns, "extra", 1, extra, "/")
	s.Serves(extra, "/", 1, readyPods(ns, "extra"))
	if err := env.admin.NetworkingV1().Ingresses(ns).Delete(context.Background(), "extra", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Eventually("the deleted route answers 503", 15*time.Second, func() error {
		return s.ExpectStatus(extra, "/", http.StatusServiceUnavailable)
	})
	s.Eventually("reloads recorded with their reasons", 5*time.Second, func() error {
		reasons := rec.ReloadReasons()
		for _, want := range []dcm.ReloadReason{dcm.ReasonRouteAdded, dcm.ReasonRouteRemoved} {
			if !slices.Contains(reasons, want) {
				return fmt.Errorf("no reload with reason %s (reasons: %v)", want, reasons)
			}
		}
		return nil
	})
	// The shared host kept working throughout.
	s.Serves(host, "/api", 2, readyPods(ns, "api"))
}

// TestIngressesThroughSpares: with spare backends (dynamic mode, as dcm
// runs by default), an Ingress created is served, one deleted answers 503
// and one whose host changes moves to the new host, all without a reload.
func TestIngressesThroughSpares(t *testing.T) {
	ns := kapitest.Namespace(t, env.admin)
	host := "front." + ns + ".test"
	createApp(t, ns, "front", 1, host, "/")
	s := harness.Start(t, dcmOptions(t, ns))
	s.Serves(host, "/", 1, readyPods(ns, "front"))
	pid, reloads := s.WorkerPID(), s.Reloads()

	extra := "extra." + ns + ".test"
	createApp(t, ns, "extra", 1, extra, "/")
	s.Serves(extra, "/", 1, readyPods(ns, "extra"))
	ctx := context.Background()
	if err := env.admin.NetworkingV1().Ingresses(ns).Delete(ctx, "extra", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Eventually("the deleted route answers 503", 15*time.Second, func() error {
		return s.ExpectStatus(extra, "/", http.StatusServiceUnavailable)
	})

	moved := "moved." + ns + ".test"
	ing, err := env.admin.NetworkingV1().Ingresses(ns).Get(ctx, "front", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ing.Spec.Rules[0].Host = moved
	if _, err := env.admin.NetworkingV1().Ingresses(ns).Update(ctx, ing, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Serves(moved, "/", 1, readyPods(ns, "front"))
	s.Eventually("the old host answers 503", 15*time.Second, func() error {
		return s.ExpectStatus(host, "/", http.StatusServiceUnavailable)
	})
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("worker %d → %d, reloads %v → %v: routes reloaded", pid, s.WorkerPID(), reloads, s.Reloads())
	}
}
