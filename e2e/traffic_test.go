package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/system"
)

// trafficFast reads HAProxy's counters every 100ms, so that a test waits
// for a count in a moment rather than the shipped interval.
func trafficFast(perServer bool) func(*system.Config) {
	return func(c *system.Config) { c.TrafficInterval, c.MetricsPerServer = 100*time.Millisecond, perServer }
}

// routeCount follows one route's series and fails the test if any read
// finds it lower than the one before: a counter must never go back.
type routeCount struct {
	s      *harness.Stack
	t      *testing.T
	labels []string
	last   map[string]float64
}

func (c *routeCount) read(name string, more ...string) float64 {
	c.t.Helper()
	v := c.s.Counter(name, append(c.labels, more...)...)
	key := name + strings.Join(more, ",")
	if v < c.last[key] {
		c.t.Errorf("%s%v went back from %v to %v", name, more, c.last[key], v)
	}
	c.last[key] = v
	return v
}

// reaches waits until the route has counted want requests, all 2xx, and
// checks that it counts no more.
func (c *routeCount) reaches(what string, want float64) {
	c.t.Helper()
	c.s.Eventually(fmt.Sprintf("%s: %v requests counted", what, want), 10*time.Second, func() error {
		if got := c.read("dcm_route_requests_total"); got != want {
			return fmt.Errorf("%v requests", got)
		}
		if got := c.read("dcm_route_responses_total", "code", "2xx"); got != want {
			return fmt.Errorf("%v 2xx responses", got)
		}
		return nil
	})
	// Two more reads of HAProxy: nothing is counted twice.
	time.Sleep(250 * time.Millisecond)
	if got := c.read("dcm_route_requests_total"); got != want {
		c.t.Errorf("%s: %v requests after settling, want %v", what, got, want)
	}
}

func send(t *testing.T, s *harness.Stack, host string, n int) {
	t.Helper()
	for range n {
		if code, body, err := s.Get(host, "/"); err != nil || code != http.StatusOK {
			t.Fatalf("GET %s: HTTP %d %q %v", host, code, body, err)
		}
	}
}

// TestRouteTrafficMetrics: a route added at runtime (carried by a spare)
// counts the requests sent to it under its own labels; a forced reload
// moves it to a backend of its own name in a new worker whose counters
// start at zero, and a sticky toggle moves it to a sticky spare at
// runtime: its series keep their labels and go on from where they were,
// never back.
func TestRouteTrafficMetrics(t *testing.T) {
	app := startPod(t, "127.0.19.1", "app")
	base := desiredApp(app.endpoint(dcm.StateReady))
	src := harness.NewStaticSource(base)
	s := harness.Start(t, harness.Options{Source: src, Config: trafficFast(true)})
	p := startPod(t, "127.0.19.2", "pod-moving")
	r := poolRoute("moving", "moving.test", "/")
	src.Set(withRoutes(base, []dcm.Route{r}, []pod{p}))
	answers(s, r.Host, "/", p.Name)
	if b := s.Backend(r.BackendName()); !strings.HasPrefix(b.Slot, "be_http:_pool:") {
		t.Fatalf("moving is carried by %q, want a spare", b.Slot)
	}
	c := &routeCount{s: s, t: t, labels: []string{"namespace", "test", "route", "moving", "kind", "http"}, last: map[string]float64{}}
	sent := 1.0 // answers' request
	send(t, s, r.Host, 19)
	sent += 19
	c.reaches("in a spare", sent)
	if got := c.read("dcm_route_bytes_out_total"); got == 0 {
		t.Error("no bytes out counted")
	}
	srv := s.Backend(r.BackendName()).Servers[0].Name
	if got := c.read("dcm_route_server_requests_total", "server", srv); got != sent {
		t.Errorf("server series: %v requests, want %v", got, sent)
	}

	pid := s.WorkerPID()
	s.Engine.RequestReload(dcm.ReasonManual)
	s.Eventually("the reload renders moving under its own name", 15*time.Second, func() error {
		c.read("dcm_route_requests_total")
		if s.WorkerPID() == pid {
			return fmt.Errorf("worker %d still", pid)
		}
		if b := s.Backend(r.BackendName()); b.Slot != "" {
			return fmt.Errorf("still in %s", b.Slot)
		}
		return nil
	})
	c.reaches("after the reload", sent)
	send(t, s, r.Host, 10)
	sent += 10
	c.reaches("in its own backend", sent)

	sticky := r
	sticky.Sticky = true
	src.Set(withRoutes(base, []dcm.Route{sticky}, []pod{p}))
	s.Eventually("moving moves to a sticky spare", 10*time.Second, func() error {
		c.read("dcm_route_requests_total")
		if b := s.Backend(r.BackendName()); !strings.HasPrefix(b.Slot, "be_sticky:_pool:") {
			return fmt.Errorf("carried by %q", b.Slot)
		}
		return nil
	})
	answers(s, r.Host, "/", p.Name)
	sent++
	send(t, s, r.Host, 9)
	sent += 9
	c.reaches("in a sticky spare", sent)
	if got := s.Reloads(); got != 1 {
		t.Errorf("%v reloads, want the forced one only", got)
	}
	t.Logf("%v requests counted across a spare, a reload and a move to a sticky spare", sent)
}

// TestRouteTrafficReadBeforeReload: with reads of HAProxy's counters an
// hour apart, requests still show in a route's series right after a
// reload: dcm reads the old worker's counters before it replaces it, so
// what it served since the last read is not lost with it.
func TestRouteTrafficReadBeforeReload(t *testing.T) {
	app := startPod(t, "127.0.19.3", "app")
	src := harness.NewStaticSource(desiredApp(app.endpoint(dcm.StateReady)))
	s := harness.Start(t, harness.Options{Source: src, Config: func(c *system.Config) { c.TrafficInterval = time.Hour }})
	c := &routeCount{s: s, t: t, labels: []string{"namespace", "test", "route", "app", "kind", "http"}, last: map[string]float64{}}
	sent := 0.0
	for round := range 2 {
		send(t, s, appRoute.Host, 7)
		sent += 7
		// HAProxy counts a request in req_tot as its stream ends, which
		// can be just after the client has the response: wait for the
		// worker's own count, so the read before the reload can see all.
		s.Eventually("HAProxy counts the requests", 5*time.Second, func() error {
			return workerCounted(s, appRoute.BackendName(), 7)
		})
		reloads := s.Reloads()
		s.Engine.RequestReload(dcm.ReasonManual)
		s.Eventually(fmt.Sprintf("reload %d", round+1), 15*time.Second, func() error {
			if s.Reloads() == reloads {
				return fmt.Errorf("%v reloads", reloads)
			}
			return nil
		})
		if got := c.read("dcm_route_requests_total"); got != sent {
			t.Errorf("after reload %d: %v requests counted, want %v", round+1, got, sent)
		}
	}
}

// workerCounted checks that the running worker's req_tot of backend is
// want (show stat straight from HAProxy, not dcm's totals).
func workerCounted(s *harness.Stack, backend string, want uint64) error {
	read, err := s.Driver.ReadTraffic(context.Background(), false)
	if err != nil {
		return err
	}
	for _, r := range read.Rows {
		if r.Proxy == backend && r.Server == "" {
			if r.Requests != want {
				return fmt.Errorf("%s: req_tot %d, want %d", backend, r.Requests, want)
			}
			return nil
		}
	}
	return fmt.Errorf("no row of %s in show stat", backend)
}
