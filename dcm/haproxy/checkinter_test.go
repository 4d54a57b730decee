package haproxy

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/plan"
	"github.com/dcm-router/dcm/internal/testkit"
)

// TestCheckInterval: a route's check interval is its servers' `check
// inter`. The route's interval changed from the default (5s) to 100ms,
// the planner adds servers with it beside the old ones (named after it)
// and retires the old ones: a bounded load through the change loses no
// request, and the same worker runs. The old servers are deleted once
// idle and the cfg written carries the new interval. Then the pod stops
// listening: its server is DOWN within 2s, which three failed checks at
// 5s could not be. (HAProxy's TCP checks cannot be counted at a Go
// listener: they reset the connection before Accept returns it.)
func TestCheckInterval(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.12:0")
	mustf(t, err, "listen")
	pod := testkit.ServeBackend(t, l, "ci-pod")
	r := route("ns", "ci", "ci.test", "/", dcm.PathPrefix)
	r.Check = true
	ep := dcm.Endpoint{Name: "ci-pod:http", Addr: pod.Addr, Port: pod.Port, Weight: 1, State: dcm.StateReady, Pod: "ci-pod"}
	desired := func(ms int64) dcm.Desired {
		b := dcm.DesiredBackend{Name: r.BackendName(), Route: r, Endpoints: []dcm.Endpoint{ep}}.WithUpstreamNames()
		return dcm.Desired{Backends: dcm.DesiredList(b.WithCheck(true, ms))}
	}
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true}
	st := plan.Fresh(desired(0), caps)
	d, bind := startDriver(t, st)
	pid := workerPID(t, d)
	ctx := context.Background()
	testkit.Eventually(t, "the pod is up", 10*time.Second, func() error {
		if code, _ := get(t, bind, "ci.test", "/"); code != 200 {
			return fmt.Errorf("HTTP %d", code)
		}
		return nil
	})

	// The change, under a bounded load.
	var failed, served atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 2000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if code, _ := tryGet(bind, "ci.test", "/"); code != 200 {
				failed.Add(1)
			}
			served.Add(1)
		}
	}()
	time.Sleep(200 * time.Millisecond)
	p := plan.Compute(st, desired(100), caps)
	if p.Reload {
		t.Fatalf("the change reloads: %v", p.Reasons)
	}
	mustf(t, d.Apply(ctx, p.Ops, p.Next), "apply %v", p.Ops)
	mustf(t, d.Write(p.Next), "write")
	time.Sleep(500 * time.Millisecond) // requests keep flowing on the new servers
	close(stop)
	wg.Wait()
	if failed.Load() > 0 || served.Load() < 10 {
		t.Errorf("%d of %d requests failed through the change", failed.Load(), served.Load())
	}
	if workerPID(t, d) != pid {
		t.Error("the worker changed")
	}

	// The old servers go once HAProxy reports them idle. The connection
	// HAProxy keeps to the old server for reuse blocks del server until
	// its purge takes it, over up to three pool-purge-delay rounds (5s
	// each): TestApplyDelServerBusy waits for it, with the same
	// bound.
	next := p.Next
	testkit.Eventually(t, "the old server deleted", 30*time.Second, func() error {
		obs, err := d.Observe(ctx)
		if err != nil {
			return err
		}
		merged, _, _ := plan.Merge(next, obs, nil, true)
		q := plan.Compute(merged, desired(100), caps)
		if err := d.Apply(ctx, q.Ops, q.Next); err != nil {
			return err
		}
		next = q.Next
		if len(next.Backends[0].Servers) != 1 {
			return fmt.Errorf("servers %v", next.Backends[0].Servers)
		}
		return nil
	})
	mustf(t, d.Write(next), "write")
	cfg, err := readConfig(d.cfg.WorkDir)
	mustf(t, err, "read cfg")
	if !strings.Contains(string(cfg), "server ci-pod:http.i100 "+pod.Addr) || !strings.Contains(string(cfg), " check inter 100ms") {
		t.Fatalf("cfg:\n%s", cfg)
	}
	if workerPID(t, d) != pid {
		t.Error("the worker changed")
	}
	l.Close()
	testkit.Eventually(t, "the server DOWN at 100ms checks", 2*time.Second, func() error {
		if st := statField(t, d, r.BackendName(), "status")["ci-pod:http.i100"]; !strings.HasPrefix(st, "DOWN") {
			return fmt.Errorf("status %q", st)
		}
		return nil
	})
}
