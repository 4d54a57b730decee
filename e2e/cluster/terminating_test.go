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

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/plan"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/e2e/kapitest"
	"github.com/dcm-router/dcm/internal/testkit"
)

// createSlowApp is createApp for a Deployment whose pods take readiness
// seconds to turn Ready (a readiness probe's initial delay) and keep
// accepting for preStop seconds once deleted (a preStop sleep), within a
// 30 s grace period.
func createSlowApp(t *testing.T, ns, name, host string, readiness, preStop int) {
	t.Helper()
	labels := map[string]string{"app": name}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To(int64(30)),
					Containers: []corev1.Container{{
						Name: "app", Image: "local/pod",
						Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
						ReadinessProbe: &corev1.Probe{InitialDelaySeconds: int32(readiness),
							ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}}},
						Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: int64(preStop)}}},
					}},
				},
			},
		},
	}
	if _, err := env.admin.AppsV1().Deployments(ns).Create(context.Background(), dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createService(t, ns, name, labels)
	createIngress(t, ns, name, host, "/", name)
}

// answers is a load that remembers who answered each request, in order.
type answers struct {
	mu   sync.Mutex
	got  []string // pod name, or "HTTP <code>: <body>" / the error
	fail int
	stop chan struct{}
	done chan struct{}
}

// startAnswers sends requests to host/ until finish, at most 50000.
func startAnswers(s *harness.Stack, host string) *answers {
	a := &answers{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(a.done)
		for range 50000 {
			select {
			case <-a.stop:
				return
			default:
			}
			code, body, err := s.Get(host, "/")
			a.mu.Lock()
			switch {
			case err != nil:
				a.got, a.fail = append(a.got, err.Error()), a.fail+1
			case code != http.StatusOK:
				a.got, a.fail = append(a.got, fmt.Sprintf("HTTP %d: %s", code, body)), a.fail+1
			default:
				a.got = append(a.got, body)
			}
			a.mu.Unlock()
			time.Sleep(2 * time.Millisecond)
		}
	}()
	return a
}

// since returns the answers from the n-th on.
func (a *answers) since(n int) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.got[min(n, len(a.got)):])
}

func (a *answers) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.got)
}

func (a *answers) finish() (all []string, fail int) {
	close(a.stop)
	<-a.done
	return a.since(0), a.fail
}

// sliceConditions are the conditions the endpointslice controller wrote
// for pod in the Service's slices.
func sliceConditions(ns, svc, pod string) (discoveryv1.EndpointConditions, error) {
	list, err := env.admin.DiscoveryV1().EndpointSlices(ns).List(context.Background(),
		metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
	if err != nil {
		return discoveryv1.EndpointConditions{}, err
	}
	for _, sl := range list.Items {
		for _, ep := range sl.Endpoints {
			if ep.TargetRef != nil && ep.TargetRef.Name == pod {
				return ep.Conditions, nil
			}
		}
	}
	return discoveryv1.EndpointConditions{}, fmt.Errorf("no endpoint for %s", pod)
}

// TestLastPodTerminatingKeepsServing: deleting the only pod of a
// 1-replica Deployment under load fails no request. The endpointslice
// controller marks the pod ready=false, serving=true, terminating=true
// while its preStop sleep runs; dcm keeps its server ready, as kube-proxy's
// terminating-endpoint fallback, until the replacement is ready, then
// drains it; HAProxy answers from the old pod, then from the new one,
// without a reload.
func TestLastPodTerminatingKeepsServing(t *testing.T) {
	ns := kapitest.Namespace(t, env.admin)
	host := "last." + ns + ".test"
	// The replacement is ready 3 s after it starts; the old pod accepts
	// for 8 s after its deletion: the fallback must bridge the 3 s.
	createSlowApp(t, ns, "last", host, 3, 8)
	s := startDCM(t, ns)
	s.Serves(host, "/", 1, readyPods(ns, "last"))
	pid, reloads := s.WorkerPID(), s.Reloads()
	before, _ := readyPods(ns, "last")()
	old := before[0]
	backend := dcm.BackendName(dcm.KindHTTP, ns, "last")

	// The what-if, from the live snapshot, predicts the fallback: the old
	// server is neither drained nor retired while its pod terminates.
	sim := plan.Simulate(s.Engine.Snapshot(), []dcm.WhatIf{{Kind: dcm.WhatIfDeletePod, Namespace: ns, Pod: old}}, dcm.HAProxy26MemoryCosts())
	for _, st := range sim.Steps {
		for _, o := range st.Ops {
			if st.Phase == "pods terminating" && o.Kind == dcm.OpSetState && o.Server == old+":http" {
				t.Errorf("the preview takes the terminating pod out while it is the only one: %s", o)
			}
		}
	}
	if len(sim.Errors) > 0 || len(sim.Steps) == 0 || sim.Reloads > 0 {
		t.Errorf("preview of deleting %s: %+v", old, sim)
	}

	load := startAnswers(s, host)
	defer func() {
		if t.Failed() {
			dumpPods(t, ns)
		}
	}()
	if err := env.admin.CoreV1().Pods(ns).Delete(context.Background(), old, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Eventually("the old pod serving while terminating in its EndpointSlice", 10*time.Second, func() error {
		c, err := sliceConditions(ns, "last", old)
		if err != nil {
			return err
		}
		if ptr.Deref(c.Ready, true) || !ptr.Deref(c.Serving, true) || !ptr.Deref(c.Terminating, false) {
			return fmt.Errorf("conditions ready=%v serving=%v terminating=%v", ptr.Deref(c.Ready, true),
				ptr.Deref(c.Serving, true), ptr.Deref(c.Terminating, false))
		}
		return nil
	})
	mark := load.count()
	if err := testkit.Poll(5*time.Second, func() error {
		sv, ok := s.Backend(backend).Server(old + ":http")
		if !ok || sv.State != dcm.StateReady || !sv.Terminating {
			return fmt.Errorf("server %+v (found %v)", sv, ok)
		}
		return nil
	}); err != nil {
		// Not fatal: the load says what clients saw.
		t.Errorf("the terminating pod's server ready in dcm (the fallback): %v", err)
	}
	var fresh string
	s.Eventually("HAProxy answering from the replacement", 20*time.Second, func() error {
		got := load.since(mark)
		if len(got) == 0 || got[len(got)-1] == old {
			return errors.New("still the old pod")
		}
		fresh = got[len(got)-1]
		return nil
	})
	s.Eventually("the old pod gone", 30*time.Second, func() error {
		_, err := env.admin.CoreV1().Pods(ns).Get(context.Background(), old, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("pod %s still there (%v)", old, err)
	})
	all, fail := load.finish()
	after := all[mark:]

	if fail > 0 {
		var bad []string
		for _, a := range all {
			if a != old && a != fresh {
				bad = append(bad, a)
			}
		}
		t.Errorf("%d of %d requests failed while a pod served, e.g. %q", fail, len(all), bad[:min(5, len(bad))])
	}
	first := slices.Index(after, fresh)
	if first <= 0 || !slices.Contains(after[:first], old) {
		t.Fatalf("after the deletion: want answers from %s, then from %s; got %q…", old, fresh, after[:min(20, len(after))])
	}
	// One sync makes the replacement ready, then drains the old pod: a
	// request between the two commands may still reach it, no more.
	if n := len(slices.DeleteFunc(slices.Clone(after[first:]), func(a string) bool { return a != old })); n > 2 {
		t.Errorf("%s answered %d times after %s did: it should drain", old, n, fresh)
	}
	t.Logf("%d requests after the deletion: %d answered by the terminating %s, then by %s", len(after), first, old, fresh)
	if got := s.WorkerPID(); got != pid {
		t.Errorf("HAProxy worker PID changed from %d to %d", pid, got)
	}
	if got := s.Reloads(); got != reloads {
		t.Errorf("dcm reloaded %v times", got-reloads)
	}
}
