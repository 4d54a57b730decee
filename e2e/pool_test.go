package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/routing"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/internal/testkit"
)

// poolRoute is a route of namespace test on host, served by one pod.
func poolRoute(name, host, path string) dcm.Route {
	return dcm.Route{Namespace: "test", Name: name, Source: dcm.SourceIngress, Object: name, Kind: dcm.KindHTTP,
		Host: host, Path: path, PathType: dcm.PathPrefix, Balance: dcm.BalanceRoundRobin}
}

// withRoutes is desired with the given routes, each served by its pod.
func withRoutes(base dcm.Desired, routes []dcm.Route, pods []pod) dcm.Desired {
	out := dcm.Desired{Backends: slices.Clone(base.Backends)}
	for i, r := range routes {
		out.Backends = append(out.Backends, &dcm.DesiredBackend{Name: r.BackendName(), Route: r,
			Endpoints: []dcm.Endpoint{pods[i].endpoint(dcm.StateReady)}})
	}
	slices.SortFunc(out.Backends, func(a, b *dcm.DesiredBackend) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// answers waits until host+path reaches the pod named want.
func answers(s *harness.Stack, host, path, want string) {
	s.Eventually(host+path+" answers "+want, 5*time.Second, func() error {
		code, body, err := s.Get(host, path)
		if err != nil {
			return err
		}
		if code != http.StatusOK || body != want {
			return fmt.Errorf("HTTP %d %q", code, body)
		}
		return nil
	})
}

// filesEqualRuntime checks that HAProxy's routing maps equal the map files.
func filesEqualRuntime(t *testing.T, s *harness.Stack) {
	t.Helper()
	runtime, err := s.Driver.RuntimeMaps(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s.Engine.FlushFiles() // written behind the syncs
	files, err := s.Driver.ReadFiles()
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range runtime {
		if !bytes.Equal(files.Maps[name], b) {
			t.Errorf("%s differs\nfile:\n%s\nruntime:\n%s", name, files.Maps[name], b)
		}
	}
}

// passthroughRoute is a passthrough route of namespace test for host.
func passthroughRoute(name, host string) dcm.Route {
	r := poolRoute(name, host, "/")
	r.Kind, r.Balance = dcm.KindPassthrough, dcm.BalanceSource // the TCP spares'
	return r
}

// servedWith waits until a TLS client for host, verifying against ca,
// gets 200 from the pod named want with leaf as the served certificate:
// the pod's own for a passthrough route (the connection went through
// HAProxy undecrypted), the route's for edge and reencrypt.
func servedWith(s *harness.Stack, host, want string, ca *testkit.CA, leaf testkit.Leaf) {
	s.Eventually(host+" serves "+want+" with its certificate", 5*time.Second, func() error {
		code, body, got, err := testkit.HTTPSGet(s.HTTPSAddr, host, "/", ca.Pool())
		switch {
		case err != nil:
			return err
		case code != http.StatusOK || body != want:
			return fmt.Errorf("HTTP %d %q", code, body)
		case got.SerialNumber.Cmp(leaf.Cert.SerialNumber) != 0:
			return fmt.Errorf("certificate serial %s, not the expected one", got.SerialNumber)
		}
		return nil
	})
}

// notServedWith checks that host has no TLS route any more: HAProxy
// terminates the connection with another certificate than leaf (the
// default one) and answers 503 (no route).
func notServedWith(s *harness.Stack, host string, leaf testkit.Leaf) error {
	code, body, got, err := testkit.InsecureHTTPSGet(s.HTTPSAddr, host, "/")
	switch {
	case err != nil:
		return err
	case got.SerialNumber.Cmp(leaf.Cert.SerialNumber) == 0:
		return fmt.Errorf("certificate %s is still served", got.SerialNumber)
	case code != http.StatusServiceUnavailable:
		return fmt.Errorf("HTTP %d %q", code, body)
	}
	return nil
}

// TestRoutesWithoutReload: 16 times an HTTP route and a passthrough route
// are created, answer from their pods (the passthrough route over TLS that
// the pod terminates, with its own certificate, picked by SNI), are
// deleted and answer 503 (dcm's default backend: no route; the
// passthrough host's TLS is then terminated by HAProxy), all through
// spare backends of their kind with the HAProxy worker and the reload
// count unchanged. Clients see the route's backend name, never the spare's.
func TestRoutesWithoutReload(t *testing.T) {
	ca := testkit.NewCA(t)
	app := startPod(t, "127.0.4.1", "app")
	src := harness.NewStaticSource(desiredApp(app.endpoint(dcm.StateReady)))
	s := harness.Start(t, harness.Options{Source: src})
	base := desiredApp(app.endpoint(dcm.StateReady))
	pid, reloads := s.WorkerPID(), s.Reloads()
	spares := s.Spares()
	if got := len(s.Engine.Snapshot().Pool); got != spares {
		t.Fatalf("%d free spares at start, want %d", got, spares)
	}
	start := time.Now()
	for i := range 16 {
		name, tname := fmt.Sprintf("r%d", i), fmt.Sprintf("t%d", i)
		host, thost := name+".test", tname+".test"
		p := startPod(t, fmt.Sprintf("127.0.4.%d", 10+i), "pod-"+name)
		leaf := ca.Leaf(t, thost)
		tp := pod(testkit.StartTLSBackend(t, fmt.Sprintf("127.0.4.%d", 40+i), "pod-"+tname, leaf))
		r, tr := poolRoute(name, host, "/"), passthroughRoute(tname, thost)
		src.Set(withRoutes(base, []dcm.Route{r, tr}, []pod{p, tp}))
		answers(s, host, "/", p.Name)
		servedWith(s, thost, tp.Name, ca, leaf)
		// HAProxy serves a change a moment before the engine records it:
		// wait for the snapshot.
		s.Eventually(fmt.Sprintf("round %d: the snapshot names the spares", i), 5*time.Second, func() error {
			for _, want := range []struct {
				route dcm.Route
				kind  string
			}{{r, "http"}, {tr, "passthrough"}} {
				b, ok := s.SnapshotBackend(want.route.BackendName())
				if !ok || b.Name != "be_"+want.kind+":test:"+want.route.Name || !strings.HasPrefix(b.Slot, "be_"+want.kind+":_pool:") {
					return fmt.Errorf("backend %s (%v) slot %q", want.route.BackendName(), ok, b.Slot)
				}
			}
			return nil
		})
		filesEqualRuntime(t, s)

		src.Set(base)
		s.Eventually(host+" is gone", 5*time.Second, func() error { return s.ExpectStatus(host, "/", http.StatusServiceUnavailable) })
		s.Eventually(thost+" is gone", 5*time.Second, func() error { return notServedWith(s, thost, leaf) })
		s.Eventually(name+"'s and "+tname+"'s spares are back", 5*time.Second, func() error {
			if n := len(s.Engine.Snapshot().Pool); n != spares {
				return fmt.Errorf("%d spares free", n)
			}
			return nil
		})
		answers(s, "app.test", "/", app.Name)
	}
	t.Logf("16 rounds of an HTTP and a passthrough route created/served/deleted in %s", time.Since(start).Round(time.Millisecond))
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("worker %d → %d, reloads %v → %v: routes reloaded", pid, s.WorkerPID(), reloads, s.Reloads())
	}
	filesEqualRuntime(t, s)
	if got := s.Counter("dcm_runtime_errors_total"); got != 0 {
		t.Errorf("%v runtime errors", got)
	}
}

// TestPoolExhausted: routes beyond the pool reload exactly once, with reason
// pool-exhausted; the reload renders them and refills the pool.
func TestPoolExhausted(t *testing.T) {
	app := startPod(t, "127.0.5.1", "app")
	base := desiredApp(app.endpoint(dcm.StateReady))
	src := harness.NewStaticSource(base)
	s := harness.Start(t, harness.Options{Source: src, Config: harness.PoolSize(2)})
	pid := s.WorkerPID()
	var routes []dcm.Route
	var pods []pod
	for i := range 3 {
		name := fmt.Sprintf("x%d", i)
		routes = append(routes, poolRoute(name, name+".test", "/"))
		pods = append(pods, startPod(t, fmt.Sprintf("127.0.5.%d", 10+i), "pod-"+name))
	}
	// Two fit: no reload.
	src.Set(withRoutes(base, routes[:2], pods[:2]))
	answers(s, "x0.test", "/", pods[0].Name)
	answers(s, "x1.test", "/", pods[1].Name)
	if s.Reloads() != 0 || s.WorkerPID() != pid {
		t.Fatalf("%v reloads for routes that fit the pool", s.Reloads())
	}
	// The third does not.
	src.Set(withRoutes(base, routes, pods))
	answers(s, "x2.test", "/", pods[2].Name)
	s.Eventually("one reload", 5*time.Second, func() error {
		if n := s.Counter("dcm_reloads_total", "reason", string(dcm.ReasonPoolExhausted)); n != 1 {
			return fmt.Errorf("%v pool-exhausted reloads", n)
		}
		return nil
	})
	if s.Reloads() != 1 || s.WorkerPID() == pid {
		t.Errorf("reloads %v, worker %d → %d", s.Reloads(), pid, s.WorkerPID())
	}
	for i, r := range routes {
		answers(s, r.Host, "/", pods[i].Name)
		if b := s.Backend(r.BackendName()); b.Slot != "" {
			t.Errorf("%s still in spare %s after the reload", b.Name, b.Slot)
		}
	}
	// HTTP ran out: the reload gives it as many spares as it has routes
	// (plan.PoolBurst, when fewer); the other kinds keep theirs.
	snap := s.Engine.Snapshot()
	httpSpares := 0
	for _, name := range snap.Pool {
		if k, _ := routing.SpareKind(name); k == dcm.KindHTTP {
			httpSpares++
		}
	}
	if want := len(snap.Backends); httpSpares != want || len(snap.Pool)-httpSpares != s.Spares()-snap.Caps.Pool {
		t.Errorf("pool after the reload %v: %d HTTP spares, want %d (one per HTTP route), and the other kinds' %d", snap.Pool, httpSpares, want, s.Spares()-snap.Caps.Pool)
	}
	filesEqualRuntime(t, s)
}

// TestDeletedRoutesRefillThePool: routes rendered at start have backends of
// their own name, not spares. Deleted, their emptied backends join the pool
// (the cfg renders them as spares, equal to runtime), and the next new
// routes run in them without a reload, each still known by its own route's
// name in the snapshot while HAProxy knows the old one.
func TestDeletedRoutesRefillThePool(t *testing.T) {
	app := startPod(t, "127.0.5.101", "app")
	base := desiredApp(app.endpoint(dcm.StateReady))
	var old []dcm.Route
	var oldPods []pod
	for i := range 3 {
		name := fmt.Sprintf("old%d", i)
		old = append(old, poolRoute(name, name+".test", "/"))
		oldPods = append(oldPods, startPod(t, fmt.Sprintf("127.0.5.%d", 110+i), "pod-"+name))
	}
	src := harness.NewStaticSource(withRoutes(base, old, oldPods))
	s := harness.Start(t, harness.Options{Source: src, Config: harness.PoolSize(1)})
	pid, reloads := s.WorkerPID(), s.Reloads()
	for i, r := range old {
		answers(s, r.Host, "/", oldPods[i].Name)
		if b := s.Backend(r.BackendName()); b.Slot != "" {
			t.Fatalf("%s rendered in spare %s at start", b.Name, b.Slot)
		}
	}

	src.Set(base)
	// A backend returns to the pool once its servers are deleted, which
	// waits for HAProxy to close their idle connections.
	s.Eventually("the deleted routes' backends are spares", harness.RetireWait, func() error {
		if got := s.Engine.Snapshot().Pool; len(got) != s.Spares()+len(old) {
			return fmt.Errorf("pool %v", got)
		}
		return nil
	})
	for _, r := range old {
		if err := s.ExpectStatus(r.Host, "/", http.StatusServiceUnavailable); err != nil {
			t.Errorf("%s after its deletion: %v", r.Host, err)
		}
	}
	filesEqualRuntime(t, s)
	cfg, err := s.Engine.Config(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Drift) > 0 {
		t.Errorf("drift with recycled spares: %v", cfg.Drift)
	}

	// Four new routes, four spares: one numbered, three recycled.
	var fresh []dcm.Route
	var freshPods []pod
	for i := range 4 {
		name := fmt.Sprintf("new%d", i)
		fresh = append(fresh, poolRoute(name, name+".test", "/"))
		freshPods = append(freshPods, startPod(t, fmt.Sprintf("127.0.5.%d", 120+i), "pod-"+name))
	}
	src.Set(withRoutes(base, fresh, freshPods))
	recycled := 0
	for i, r := range fresh {
		answers(s, r.Host, "/", freshPods[i].Name)
		b := s.Backend(r.BackendName())
		if b.Name != r.BackendName() || b.Slot == "" {
			t.Errorf("%s: backend %s in %q", r.Name, b.Name, b.Slot)
		}
		if strings.HasPrefix(b.Slot, "be_http:test:old") {
			recycled++
		}
	}
	if recycled != len(old) {
		t.Errorf("%d new routes in the deleted routes' backends, want %d", recycled, len(old))
	}
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("worker %d → %d, reloads %v → %v", pid, s.WorkerPID(), reloads, s.Reloads())
	}
	answers(s, "app.test", "/", app.Name)
	filesEqualRuntime(t, s)
	if cfg, err = s.Engine.Config(context.Background()); err != nil || len(cfg.Drift) > 0 {
		t.Errorf("drift %v, err %v", cfg.Drift, err)
	}
}

// TestOverlappingPathsInSpares: /, /api and /api/v1 on one host, created
// one at a time most generic first, then deleted and created in reverse
// order: each path reaches its own pod every time, without a reload.
func TestOverlappingPathsInSpares(t *testing.T) {
	app := startPod(t, "127.0.6.1", "app")
	base := desiredApp(app.endpoint(dcm.StateReady))
	src := harness.NewStaticSource(base)
	s := harness.Start(t, harness.Options{Source: src})
	paths := []string{"/", "/api", "/api/v1"}
	routes := make([]dcm.Route, len(paths))
	pods := make([]pod, len(paths))
	for i, p := range paths {
		name := []string{"root", "api", "v1"}[i]
		routes[i] = poolRoute(name, "multi.test", p)
		pods[i] = startPod(t, fmt.Sprintf("127.0.6.%d", 10+i), "pod-"+name)
	}
	probes := []struct{ path, want string }{
		{"/", "pod-root"}, {"/x", "pod-root"}, {"/apix", "pod-root"}, {"/api", "pod-api"},
		{"/api/x", "pod-api"}, {"/api/v10", "pod-api"}, {"/api/v1", "pod-v1"}, {"/api/v1/y", "pod-v1"},
	}
	check := func(n int) {
		t.Helper()
		for _, p := range probes {
			want := p.want
			// Until the more specific route exists, the longest existing prefix answers.
			for want != "pod-root" && !slices.ContainsFunc(routes[:n], func(r dcm.Route) bool { return "pod-"+r.Name == want }) {
				want = map[string]string{"pod-v1": "pod-api", "pod-api": "pod-root"}[want]
			}
			answers(s, "multi.test", p.path, want)
		}
		filesEqualRuntime(t, s)
	}
	for n := 1; n <= 3; n++ { // most generic first
		src.Set(withRoutes(base, routes[:n], pods[:n]))
		check(n)
	}
	src.Set(base)
	s.Eventually("multi.test is gone", 5*time.Second, func() error { return s.ExpectStatus("multi.test", "/", http.StatusServiceUnavailable) })
	// Reverse: most specific first; check once all exist.
	for n := len(routes) - 1; n >= 0; n-- {
		src.Set(withRoutes(base, routes[n:], pods[n:]))
		answers(s, "multi.test", paths[n], pods[n].Name)
	}
	check(3)
	if n := s.Reloads(); n != 0 {
		t.Errorf("%v reloads", n)
	}
}

// TestPassthroughAcrossReload: more passthrough routes than passthrough
// spares reload once (pool-exhausted); after it both hosts still pass
// through to their pods and a host of no route is still terminated by
// HAProxy, so the new worker took over the HTTPS address and fe_https's
// unix socket.
func TestPassthroughAcrossReload(t *testing.T) {
	ca := testkit.NewCA(t)
	app := startPod(t, "127.0.6.1", "app")
	base := desiredApp(app.endpoint(dcm.StateReady))
	src := harness.NewStaticSource(base)
	s := harness.Start(t, harness.Options{Source: src, Config: harness.PoolSize(1)})
	pid := s.WorkerPID()
	var routes []dcm.Route
	var pods []pod
	var leaves []testkit.Leaf
	for i := range 2 {
		name := fmt.Sprintf("p%d", i)
		leaf := ca.Leaf(t, name+".test")
		routes = append(routes, passthroughRoute(name, name+".test"))
		pods = append(pods, pod(testkit.StartTLSBackend(t, fmt.Sprintf("127.0.6.%d", 10+i), "pod-"+name, leaf)))
		leaves = append(leaves, leaf)
	}
	src.Set(withRoutes(base, routes[:1], pods[:1]))
	servedWith(s, "p0.test", pods[0].Name, ca, leaves[0])
	if s.Reloads() != 0 || s.WorkerPID() != pid {
		t.Fatalf("%v reloads for a route that fits the pool", s.Reloads())
	}
	src.Set(withRoutes(base, routes, pods))
	s.Eventually("one pool-exhausted reload", 10*time.Second, func() error {
		if n := s.Counter("dcm_reloads_total", "reason", string(dcm.ReasonPoolExhausted)); n != 1 {
			return fmt.Errorf("%v pool-exhausted reloads", n)
		}
		return nil
	})
	for i := range routes {
		servedWith(s, routes[i].Host, pods[i].Name, ca, leaves[i])
	}
	if s.WorkerPID() == pid {
		t.Error("the worker did not change")
	}
	s.Eventually("a host of no route is terminated by HAProxy", 5*time.Second, func() error {
		return notServedWith(s, "nothing.test", leaves[0])
	})
	answers(s, "app.test", "/", app.Name)
	filesEqualRuntime(t, s)
}
