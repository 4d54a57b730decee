package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dcm-router/dcm/e2e/harness"
)

const (
	webHost  = "web.demo.localhost"
	shopHost = "shop.demo.localhost"
	webBE    = "be_http:demo:web"
)

// TestScaleWithoutReload: a demo app scaled 1→5→2→0→3, a pod replaced, scaled
// again. Every change is applied at runtime: the worker PID never changes,
// no reload happens, requests reach exactly the ready pods, 503 at zero, and
// the other routes never fail.
func TestScaleWithoutReload(t *testing.T) {
	s := harness.Start(t, harness.Options{})
	s.Scale("demo", "web", 1)
	s.DemoServes(webHost, "/", "demo", "web", 1)
	// Ready means dcm's first sync, not the demo's pods: shop must serve
	// before its load counts failures (CI once sent it 7 requests before
	// its pods were ready).
	s.DemoServes(shopHost, "/", "demo", "shop", 2)
	pid := s.WorkerPID()
	reloads := s.Reloads()
	shop := s.StartLoad(shopHost, "/")

	for _, n := range []int32{5, 2, 0, 3} {
		s.Scale("demo", "web", n)
		if n == 0 {
			s.Eventually("web answers 503 at zero replicas", 15*time.Second, func() error {
				return s.ExpectStatus(webHost, "/", http.StatusServiceUnavailable)
			})
			continue
		}
		s.DemoServes(webHost, "/", "demo", "web", int(n))
	}

	// Replace a pod: delete it like kubectl would; the Deployment makes another.
	victim := s.ReadyPods("demo", "web")[0]
	if err := s.Client.CoreV1().Pods("demo").Delete(context.Background(), victim, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Eventually("the deleted pod is replaced", 15*time.Second, func() error {
		for _, p := range s.ReadyPods("demo", "web") {
			if p == victim {
				return errors.New("victim still ready")
			}
		}
		return nil
	})
	s.DemoServes(webHost, "/", "demo", "web", 3)
	s.Scale("demo", "web", 4)
	s.DemoServes(webHost, "/", "demo", "web", 4)

	if got := s.WorkerPID(); got != pid {
		t.Errorf("HAProxy worker PID changed from %d to %d: something reloaded", pid, got)
	}
	if got := s.Reloads(); got != reloads {
		t.Errorf("dcm_reloads_total moved from %v to %v", reloads, got)
	}
	if s.Counter("dcm_updates_total", "result", "dynamic") == 0 {
		t.Error("no dynamic update was counted")
	}
	ok, fail, last := shop.Finish()
	if fail > 0 || ok == 0 {
		t.Errorf("the shop route, never touched, had %d failures of %d requests (last: %s)", fail, ok+fail, last)
	}
	// Servers of scaled-in pods are gone from HAProxy once idle.
	s.Eventually("retired servers are deleted", harness.RetireWait, func() error {
		if n := len(s.Backend(webBE).Servers); n != 4 {
			return errors.New("backend has servers for gone pods")
		}
		return nil
	})
}

// TestSlowRequestsCompleteOnScaleIn: requests in flight on pods that are
// scaled in all complete; their servers are drained, then put in maint, then
// deleted once HAProxy reports them idle.
func TestSlowRequestsCompleteOnScaleIn(t *testing.T) {
	s := harness.Start(t, harness.Options{})
	s.Scale("demo", "web", 3)
	s.DemoServes(webHost, "/", "demo", "web", 3)
	pid := s.WorkerPID()
	sub := s.Subscribe(t)

	const inFlight = 9
	var wg sync.WaitGroup
	codes := make(chan int, inFlight)
	for range inFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _, err := s.Get(webHost, "/slow?ms=1500")
			if err != nil {
				t.Errorf("slow request: %v", err)
			}
			codes <- code
		}()
	}
	s.Eventually("every slow request is in a pod", 10*time.Second, func() error {
		held := 0
		for _, p := range s.Cluster.Pods("demo", "web") {
			held += p.InFlight
		}
		if held != inFlight {
			return fmt.Errorf("%d of %d requests in the pods", held, inFlight)
		}
		return nil
	})
	s.Scale("demo", "web", 1)
	wg.Wait()
	close(codes)
	for code := range codes {
		if code != http.StatusOK {
			t.Errorf("a request in flight during scale-in got HTTP %d", code)
		}
	}
	s.DemoServes(webHost, "/", "demo", "web", 1)
	s.Eventually("scaled-in servers are deleted", harness.RetireWait, func() error {
		if n := len(s.Backend(webBE).Servers); n != 1 {
			return errors.New("servers of gone pods are still there")
		}
		return nil
	})
	// Each retired server went drain → maint → del, in that order.
	s.Eventually("two servers retired through drain, maint, del", 5*time.Second, func() error {
		steps := sub.ServerSteps(webBE)
		retired := 0
		for server, seq := range steps {
			if seq[len(seq)-1] != "del" {
				continue
			}
			retired++
			if !isSubsequence([]string{"drain", "maint", "del"}, seq) {
				t.Fatalf("%s went through %v, want drain, maint, del", server, seq)
			}
		}
		if retired != 2 {
			return fmt.Errorf("%d servers deleted, want 2 (steps: %v)", retired, steps)
		}
		return nil
	})
	if s.WorkerPID() != pid {
		t.Error("HAProxy reloaded during scale-in")
	}
}

func isSubsequence(want, got []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}
