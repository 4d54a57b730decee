package e2e

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/haproxy"
	"github.com/dcm-router/dcm/internal/testkit"
)

// staticSource is a desired state the test sets by hand: it stands in for
// Kubernetes so a test can remove an endpoint while its pod keeps serving,
// which only dcm can then explain.
type staticSource struct {
	mu      sync.Mutex
	desired dcm.Desired
	seen    time.Time
	changed chan struct{}
}

func newStaticSource(d dcm.Desired) *staticSource {
	return &staticSource{desired: d, changed: make(chan struct{}, 1)}
}

func (s *staticSource) Desired() (dcm.Desired, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := s.seen
	s.seen = time.Time{}
	return s.desired, seen
}

func (s *staticSource) Changed() <-chan struct{} { return s.changed }
func (s *staticSource) Synced() bool             { return true }

func (s *staticSource) set(d dcm.Desired) {
	s.mu.Lock()
	s.desired, s.seen = d, time.Now()
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// pod is a local HTTP server answering its name, slowly on /slow?ms=N.
type pod testkit.Backend

func startPod(t *testing.T, ip, name string) pod { return pod(testkit.StartBackend(t, ip, name)) }

func (p pod) endpoint(st dcm.AdminState) dcm.Endpoint {
	return dcm.Endpoint{Name: p.Name + ":http", Addr: p.Addr, Port: p.Port, Weight: 1, State: st, Pod: p.Name}
}

var appRoute = dcm.Route{Namespace: "test", Name: "app", Source: dcm.SourceIngress, Kind: dcm.KindHTTP,
	Host: "app.test", Path: "/", PathType: dcm.PathPrefix, Balance: dcm.BalanceRoundRobin}

func desiredApp(eps ...dcm.Endpoint) dcm.Desired {
	return dcm.Desired{Backends: []dcm.DesiredBackend{{Name: appRoute.BackendName(), Route: appRoute, Endpoints: eps}}}
}

// TestRemovedServerDeletedOnlyWhenIdle: an endpoint removed while its pod
// still serves requests goes to maint at once (no new requests), its
// requests complete, and del server follows only after HAProxy reports the
// server idle.
func TestRemovedServerDeletedOnlyWhenIdle(t *testing.T) {
	a := startPod(t, "127.0.2.1", "a")
	b := startPod(t, "127.0.2.2", "b")
	src := newStaticSource(desiredApp(a.endpoint(dcm.StateReady), b.endpoint(dcm.StateReady)))
	s := startStack(t, stackOptions{source: src})
	be := appRoute.BackendName()
	rec := s.subscribe(t)

	var wg sync.WaitGroup
	var mu sync.Mutex
	var finished time.Time
	for range 4 { // round robin: two of them on b
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _, err := s.get("app.test", "/slow?ms=1200")
			if err != nil || code != http.StatusOK {
				t.Errorf("slow request: %d %v", code, err)
			}
			mu.Lock()
			finished = time.Now()
			mu.Unlock()
		}()
	}
	time.Sleep(200 * time.Millisecond)
	src.set(desiredApp(a.endpoint(dcm.StateReady)))
	s.eventually("b is in maint", 2*time.Second, func() error {
		sv, ok := s.backend(be).Server("b:http")
		if !ok || sv.State != dcm.StateMaint {
			return errString("b not in maint yet")
		}
		return nil
	})
	for range 10 {
		if _, body, _ := s.get("app.test", "/"); body != "a" {
			t.Fatalf("a new request reached %q after b went to maint", body)
		}
	}
	if _, ok := s.backend(be).Server("b:http"); !ok {
		t.Fatal("b was deleted while requests were in flight")
	}
	wg.Wait()
	s.eventually("b is deleted once idle", 5*time.Second, func() error {
		if _, ok := s.backend(be).Server("b:http"); ok {
			return errString("b still there")
		}
		return nil
	})
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, ev := range rec.events {
		for _, op := range ev.Ops {
			if op.Kind == dcm.OpDelServer && op.Server == "b:http" && ev.Time.Before(finished) {
				t.Errorf("del server at %s, before the last request finished at %s", ev.Time, finished)
			}
		}
	}
}

// TestRuntimeErrorConvergesThroughReload: a server deleted behind dcm's back
// makes the next command fail; dcm reports it, reloads with reason
// runtime-error and serves the desired state again.
func TestRuntimeErrorConvergesThroughReload(t *testing.T) {
	a := startPod(t, "127.0.2.3", "a")
	b := startPod(t, "127.0.2.4", "b")
	src := newStaticSource(desiredApp(a.endpoint(dcm.StateReady), b.endpoint(dcm.StateReady)))
	s := startStack(t, stackOptions{source: src})
	be := appRoute.BackendName()

	// Someone removes b by hand over the admin socket.
	cli := haproxy.NewClient(s.dir+"/admin.sock", haproxy.ClientOptions{})
	defer cli.Close()
	for _, op := range []dcm.Op{
		{Kind: dcm.OpSetState, Backend: be, Server: "b:http", State: dcm.StateMaint},
		{Kind: dcm.OpDelServer, Backend: be, Server: "b:http"},
	} {
		cmd, err := haproxy.CommandFor(op)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cli.Exec(context.Background(), []haproxy.Command{cmd}); err != nil {
			t.Fatal(err)
		}
	}
	// Before dcm observes it, Kubernetes changes b's weight.
	heavy := b.endpoint(dcm.StateReady)
	heavy.Weight = 3
	src.set(desiredApp(a.endpoint(dcm.StateReady), heavy))
	s.eventually("a reload for runtime-error", 10*time.Second, func() error {
		if s.counter("dcm_reloads_total", "reason", string(dcm.ReasonRuntimeError))+
			s.counter("dcm_reloads_total", "reason", string(dcm.ReasonDrift)) == 0 {
			return errString("no runtime-error reload")
		}
		return nil
	})
	got, err := s.served("app.test", "/", 40)
	if err != nil {
		t.Fatal(err)
	}
	if got["a"] != 10 || got["b"] != 30 {
		t.Errorf("after converging, a got %d and b %d of 40 requests, want 10 and 30", got["a"], got["b"])
	}
}
