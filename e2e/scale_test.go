package e2e

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dcm-router/dcm/dcm"
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
	s := startStack(t, stackOptions{})
	s.scale("demo", "web", 1)
	s.waitServes(webHost, "/", "demo", "web", 1)
	pid := s.workerPID()
	reloads := s.reloads()
	shop := s.startLoad(shopHost, "/")

	for _, n := range []int32{5, 2, 0, 3} {
		s.scale("demo", "web", n)
		if n == 0 {
			s.eventually("web answers 503 at zero replicas", 15*time.Second, func() error {
				return s.expectStatus(webHost, "/", http.StatusServiceUnavailable)
			})
			continue
		}
		s.waitServes(webHost, "/", "demo", "web", int(n))
	}

	// Replace a pod: delete it like kubectl would; the Deployment makes another.
	victim := s.readyPods("demo", "web")[0]
	if err := s.client.CoreV1().Pods("demo").Delete(context.Background(), victim, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s.eventually("the deleted pod is replaced", 15*time.Second, func() error {
		for _, p := range s.readyPods("demo", "web") {
			if p == victim {
				return errString("victim still ready")
			}
		}
		return nil
	})
	s.waitServes(webHost, "/", "demo", "web", 3)
	s.scale("demo", "web", 4)
	s.waitServes(webHost, "/", "demo", "web", 4)

	if got := s.workerPID(); got != pid {
		t.Errorf("HAProxy worker PID changed from %d to %d: something reloaded", pid, got)
	}
	if got := s.reloads(); got != reloads {
		t.Errorf("dcm_reloads_total moved from %v to %v", reloads, got)
	}
	if s.counter("dcm_updates_total", "result", "dynamic") == 0 {
		t.Error("no dynamic update was counted")
	}
	ok, fail, last := shop.finish()
	if fail > 0 || ok == 0 {
		t.Errorf("the shop route, never touched, had %d failures of %d requests (last: %s)", fail, ok+fail, last)
	}
	// Servers of scaled-in pods are gone from HAProxy once idle.
	s.eventually("retired servers are deleted", 10*time.Second, func() error {
		if n := len(s.backend(webBE).Servers); n != 4 {
			return errString("backend has servers for gone pods")
		}
		return nil
	})
}

func (s *stack) expectStatus(host, path string, want int) error {
	code, body, err := s.get(host, path)
	if err != nil {
		return err
	}
	if code != want {
		return errString("got HTTP " + http.StatusText(code) + ": " + body)
	}
	return nil
}

type errString string

func (e errString) Error() string { return string(e) }

// TestSlowRequestsCompleteOnScaleIn: requests in flight on pods that are
// scaled in all complete; their servers are drained, then put in maint, then
// deleted once HAProxy reports them idle.
func TestSlowRequestsCompleteOnScaleIn(t *testing.T) {
	s := startStack(t, stackOptions{})
	s.scale("demo", "web", 3)
	s.waitServes(webHost, "/", "demo", "web", 3)
	pid := s.workerPID()
	sub := s.subscribe(t)

	const inFlight = 9
	var wg sync.WaitGroup
	codes := make(chan int, inFlight)
	for range inFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _, err := s.get(webHost, "/slow?ms=1500")
			if err != nil {
				t.Errorf("slow request: %v", err)
			}
			codes <- code
		}()
	}
	time.Sleep(300 * time.Millisecond) // all requests reached their pods
	s.scale("demo", "web", 1)
	wg.Wait()
	close(codes)
	for code := range codes {
		if code != http.StatusOK {
			t.Errorf("a request in flight during scale-in got HTTP %d", code)
		}
	}
	s.waitServes(webHost, "/", "demo", "web", 1)
	s.eventually("scaled-in servers are deleted", 10*time.Second, func() error {
		if n := len(s.backend(webBE).Servers); n != 1 {
			return errString("servers of gone pods are still there")
		}
		return nil
	})
	// Each retired server went drain → maint → del, in that order.
	s.eventually("two servers retired through drain, maint, del", 5*time.Second, func() error {
		steps := sub.serverSteps(webBE)
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
	if s.workerPID() != pid {
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

// recorder collects the engine's events.
type recorder struct {
	mu     sync.Mutex
	events []dcm.Event
}

func (s *stack) subscribe(t *testing.T) *recorder {
	r := &recorder{}
	_, _, sub := s.eng.Hub().Subscribe(s.eng.Hub().Seq(), 10000)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case ev := <-sub.C:
				r.mu.Lock()
				r.events = append(r.events, ev)
				r.mu.Unlock()
			case <-sub.Done():
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	t.Cleanup(func() { cancel(); sub.Close(); <-done })
	return r
}

// serverSteps lists, per server of a backend, the states it was set to and
// "del" when it was deleted, in the order HAProxy received them.
func (r *recorder) serverSteps(backend string) map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]string{}
	for _, ev := range r.events {
		if ev.Type != dcm.EventApplied {
			continue
		}
		for _, op := range ev.Ops {
			if op.Backend != backend {
				continue
			}
			switch op.Kind {
			case dcm.OpSetState:
				out[op.Server] = append(out[op.Server], string(op.State))
			case dcm.OpDelServer:
				out[op.Server] = append(out[op.Server], "del")
			}
		}
	}
	return out
}

func (r *recorder) reloadReasons() []dcm.ReloadReason {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []dcm.ReloadReason
	for _, ev := range r.events {
		if ev.Type == dcm.EventReload && ev.Reload != nil && ev.Reload.Error == "" {
			out = append(out, ev.Reload.Reasons...)
		}
	}
	return out
}
