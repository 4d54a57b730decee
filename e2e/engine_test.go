package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/haproxy"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/internal/testkit"
)

// pod is a local HTTP server answering its name, slowly on /slow?ms=N.
type pod testkit.Backend

func startPod(t *testing.T, ip, name string) pod { return pod(testkit.StartBackend(t, ip, name)) }

func (p pod) endpoint(st dcm.AdminState) dcm.Endpoint {
	return dcm.Endpoint{Name: p.Name + ":http", Addr: p.Addr, Port: p.Port, Weight: 1, State: st, Pod: p.Name}
}

var appRoute = dcm.Route{Namespace: "test", Name: "app", Source: dcm.SourceIngress, Kind: dcm.KindHTTP,
	Host: "app.test", Path: "/", PathType: dcm.PathPrefix, Balance: dcm.BalanceRoundRobin}

func desiredApp(eps ...dcm.Endpoint) dcm.Desired {
	return dcm.Desired{Backends: []*dcm.DesiredBackend{{Name: appRoute.BackendName(), Route: appRoute, Endpoints: eps}}}
}

// TestRemovedServerDeletedOnlyWhenIdle: an endpoint removed while its pod
// still serves requests goes to maint at once (no new requests), its
// requests complete, and del server follows only after HAProxy reports the
// server idle.
func TestRemovedServerDeletedOnlyWhenIdle(t *testing.T) {
	a := startPod(t, "127.0.2.1", "a")
	b := startPod(t, "127.0.2.2", "b")
	src := harness.NewStaticSource(desiredApp(a.endpoint(dcm.StateReady), b.endpoint(dcm.StateReady)))
	s := harness.Start(t, harness.Options{Source: src})
	be := appRoute.BackendName()
	rec := s.Subscribe(t)

	var wg sync.WaitGroup
	var mu sync.Mutex
	var finished time.Time
	for range 4 { // round robin: two of them on b
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _, err := s.Get("app.test", "/slow?ms=1200")
			if err != nil || code != http.StatusOK {
				t.Errorf("slow request: %d %v", code, err)
			}
			mu.Lock()
			finished = time.Now()
			mu.Unlock()
		}()
	}
	s.Eventually("the slow requests are in the pods", 5*time.Second, func() error {
		if held := testkit.Backend(a).Held() + testkit.Backend(b).Held(); held != 4 {
			return fmt.Errorf("%d of 4 requests in the pods", held)
		}
		return nil
	})
	src.Set(desiredApp(a.endpoint(dcm.StateReady)))
	s.Eventually("b is in maint", 2*time.Second, func() error {
		sv, ok := s.Backend(be).Server("b:http")
		if !ok || sv.State != dcm.StateMaint {
			return errors.New("b not in maint yet")
		}
		return nil
	})
	for range 10 {
		if _, body, _ := s.Get("app.test", "/"); body != "a" {
			t.Fatalf("a new request reached %q after b went to maint", body)
		}
	}
	if _, ok := s.Backend(be).Server("b:http"); !ok {
		t.Fatal("b was deleted while requests were in flight")
	}
	wg.Wait()
	// HAProxy 2.6 refuses del server while a kept-alive connection to the
	// server sits in its idle pool (purged over pool-purge-delay, 5 s by
	// default, half at a time): dcm reads the pool's size (idle_conn_cur,
	// safe_conn_cur) and keeps b in maint until it is empty, so it neither
	// sends a del server HAProxy refuses nor reloads for it.
	s.Eventually("b is deleted once idle", 25*time.Second, func() error {
		if _, ok := s.Backend(be).Server("b:http"); ok {
			return errors.New("b still there")
		}
		return nil
	})
	for _, ev := range rec.Events() {
		for _, op := range ev.Ops {
			if op.Kind == dcm.OpDelServer && op.Server == "b:http" && ev.Time.Before(finished) {
				t.Errorf("del server at %s, before the last request finished at %s", ev.Time, finished)
			}
		}
	}
	if n := s.Reloads(); n != 0 {
		t.Errorf("%v reloads: a del server refused while busy must wait, not reload", n)
	}
	if n := s.Counter("dcm_runtime_errors_total", "command", "del server"); n != 0 {
		t.Errorf("%v del server refused: dcm must wait for HAProxy's idle connections to the server to go", n)
	}
}

// TestRuntimeErrorConvergesThroughReload: a server deleted behind dcm's back
// makes the next command fail; dcm reports it, reloads with reason
// runtime-error and serves the desired state again.
func TestRuntimeErrorConvergesThroughReload(t *testing.T) {
	a := startPod(t, "127.0.2.3", "a")
	b := startPod(t, "127.0.2.4", "b")
	src := harness.NewStaticSource(desiredApp(a.endpoint(dcm.StateReady), b.endpoint(dcm.StateReady)))
	s := harness.Start(t, harness.Options{Source: src})
	be := appRoute.BackendName()

	// Someone removes b by hand over the admin socket.
	cli := haproxy.NewClient(s.Dir+"/admin.sock", haproxy.ClientOptions{})
	defer cli.Close()
	for _, op := range []dcm.Op{
		{Kind: dcm.OpSetState, Backend: be, Server: "b:http", State: dcm.StateMaint},
		{Kind: dcm.OpDelServer, Backend: be, Server: "b:http"},
	} {
		cmd, err := haproxy.CommandFor(op, haproxy.HTTP2{})
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
	src.Set(desiredApp(a.endpoint(dcm.StateReady), heavy))
	s.Eventually("a reload for runtime-error", 10*time.Second, func() error {
		if s.Counter("dcm_reloads_total", "reason", string(dcm.ReasonRuntimeError))+
			s.Counter("dcm_reloads_total", "reason", string(dcm.ReasonDrift)) == 0 {
			return errors.New("no runtime-error reload")
		}
		return nil
	})
	got, err := s.Served("app.test", "/", 40)
	if err != nil {
		t.Fatal(err)
	}
	if got["a"] != 10 || got["b"] != 30 {
		t.Errorf("after converging, a got %d and b %d of 40 requests, want 10 and 30", got["a"], got["b"])
	}
}
