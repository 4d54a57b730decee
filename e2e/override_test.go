package e2e

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/system"
)

// TestAdminOverrides: an admin drains a pod's server; it takes no new
// request and stays drained through later syncs and observations until it
// is handed back; a weight override shifts the traffic share; both are in
// the audit log. Kubernetes never loses control of what is not overridden.
func TestAdminOverrides(t *testing.T) {
	// Observation passes every second instead of ten: the test is about
	// what a pass leaves of an override, and waits for two of them.
	s := harness.Start(t, harness.Options{Config: func(c *system.Config) { c.ObserveEvery = time.Second }})
	s.Scale("demo", "web", 2)
	s.DemoServes(webHost, "/", "demo", "web", 2)
	rec := s.Subscribe(t)
	pods := s.ReadyPods("demo", "web")
	drained, other := pods[0], pods[1]

	if err := s.Engine.SetServerState("alice", webBE, drained+":http", dcm.StateDrain); err != nil {
		t.Fatal(err)
	}
	s.Eventually("the drained pod gets no new request", 5*time.Second, func() error {
		return s.ServesExactly(webHost, "/", []string{other}, 10)
	})
	// A scale (a sync) and a full read-back of HAProxy later it is still
	// drained.
	passes := s.Counter("dcm_observation_passes_total")
	s.Scale("demo", "web", 3)
	s.Serves(webHost, "/", 2, func() ([]string, error) {
		var out []string
		for _, p := range s.ReadyPods("demo", "web") {
			if p != drained {
				out = append(out, p)
			}
		}
		return out, nil
	})
	s.Eventually("a full observation pass after the scale", 30*time.Second, func() error {
		if n := s.Counter("dcm_observation_passes_total"); n < passes+2 {
			return fmt.Errorf("%v passes since the scale, want 2 (the first may have begun before it)", n-passes)
		}
		return nil
	})
	if sv, _ := s.Backend(webBE).Server(drained + ":http"); sv.State != dcm.StateDrain {
		t.Fatalf("the drained server is %s after syncs", sv.State)
	}

	// Handed back: Kubernetes says ready, so it serves again.
	if err := s.Engine.SetServerState("alice", webBE, drained+":http", dcm.StateReady); err != nil {
		t.Fatal(err)
	}
	s.DemoServes(webHost, "/", "demo", "web", 3)

	// Weight 3 on one of three: it gets 3 requests in 5.
	if err := s.Engine.SetServerWeight("alice", webBE, drained+":http", 3); err != nil {
		t.Fatal(err)
	}
	s.Eventually("the weight takes effect", 5*time.Second, func() error {
		got, err := s.Served(webHost, "/", 50)
		if err != nil {
			return err
		}
		if got[drained] != 30 {
			return fmt.Errorf("%s got %d of 50 requests, want 30 (weights 3:1:1)", drained, got[drained])
		}
		return nil
	})
	if err := s.Engine.SetServerState("alice", webBE, "nope:http", dcm.StateDrain); !errors.Is(err, dcm.ErrNotFound) {
		t.Errorf("an unknown server: %v, want ErrNotFound", err)
	}
	actions := 0
	for _, ev := range rec.Events() {
		if ev.Type == dcm.EventAction && ev.Actor == "alice" {
			actions++
		}
	}
	if actions != 3 {
		t.Errorf("%d actions by alice in the audit log, want 3", actions)
	}
}
