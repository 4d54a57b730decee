package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/haproxy"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/system"
)

// TestForcedReloadServesTheSame: after a sequence of runtime changes, a
// reload loads the files dcm wrote, and they serve exactly what the runtime
// served: the files always equal the runtime state.
func TestForcedReloadServesTheSame(t *testing.T) {
	s := harness.Start(t, harness.Options{})
	for _, n := range []int32{4, 2, 5} {
		s.Scale("demo", "web", n)
		s.DemoServes(webHost, "/", "demo", "web", int(n))
	}
	s.Scale("demo", "shop", 3)
	s.DemoServes(shopHost, "/", "demo", "shop", 3)
	s.Eventually("retired servers are deleted", harness.RetireWait, func() error {
		if n := len(s.Backend(webBE).Servers); n != 5 {
			return errors.New("servers of gone pods are still there")
		}
		return nil
	})
	before := s.Observed(t)
	pid := s.WorkerPID()

	s.Engine.RequestReload(dcm.ReasonManual)
	s.Eventually("the manual reload happens", 10*time.Second, func() error {
		if s.Counter("dcm_reloads_total", "reason", "manual") != 1 {
			return errors.New("no manual reload yet")
		}
		return nil
	})
	if s.WorkerPID() == pid {
		t.Fatal("the worker PID did not change: no reload happened")
	}
	if after := s.Observed(t); !slices.Equal(before, after) {
		t.Errorf("HAProxy's servers changed across the reload\nbefore %v\nafter  %v", before, after)
	}
	s.DemoServes(webHost, "/", "demo", "web", 5)
	s.DemoServes(shopHost, "/", "demo", "shop", 3)
	s.DemoServes(shopHost, "/api", "demo", "api", 1)
}

// TestSlotsMode: with one free slot per backend, dcm reloads exactly when a
// backend runs out of slots, with reason slots-exhausted, and serves right.
func TestSlotsMode(t *testing.T) {
	s := harness.Start(t, harness.Options{Config: func(c *system.Config) { c.Mode, c.Slots = dcm.ModeSlots, 1 }})
	s.Scale("demo", "web", 1)
	s.DemoServes(webHost, "/", "demo", "web", 1)
	s.Eventually("the retired slot is idle and free", 10*time.Second, func() error {
		// The initial render had 2 pods + 1 free slot; the slot of the pod
		// scaled in is reusable once HAProxy reports it idle.
		servers := s.Backend(webBE).Servers
		ready, free := 0, 0
		for _, sv := range servers {
			if sv.State == dcm.StateDrain || sv.State == dcm.StateMaint && !sv.Idle() {
				return errors.New(sv.Name + " still busy")
			}
			switch {
			case sv.State == dcm.StateReady:
				ready++
			case sv.Endpoint == "" || sv.Retired:
				free++
			}
		}
		// Under load the snapshot can lag the serving pod, and the pod
		// scaled in keeps its slot (in maint, idle) while it terminates:
		// count the slots only once the snapshot shows the one ready pod
		// and both free slots (never used, or retired: its pod is gone).
		if ready != 1 || free != 2 || len(servers) != 3 {
			return fmt.Errorf("%d ready and %d free of %d servers, want 1 and 2 of 3: %+v", ready, free, len(servers), servers)
		}
		return nil
	})
	base := s.Counter("dcm_reloads_total", "reason", string(dcm.ReasonSlotsExhausted))
	before := s.Backend(webBE).Servers
	slots := len(before)

	// Fill every slot: no reload.
	s.Scale("demo", "web", int32(slots))
	s.DemoServes(webHost, "/", "demo", "web", slots)
	if got := s.Counter("dcm_reloads_total", "reason", string(dcm.ReasonSlotsExhausted)); got != base {
		t.Fatalf("reloaded (%v) while free slots were left (%d slots before: %+v)", got-base, slots, before)
	}
	// One more pod than slots: exactly one reload, for slots-exhausted.
	total := s.Reloads()
	s.Scale("demo", "web", int32(slots+1))
	s.DemoServes(webHost, "/", "demo", "web", slots+1)
	// The new worker can serve before dcm has seen it take over (and
	// counted the reload): on a busy machine, wait for the count first.
	s.Eventually("the reload is counted", 10*time.Second, func() error {
		if s.Reloads() == total {
			return errors.New("no reload counted yet")
		}
		return nil
	})
	if got := s.Counter("dcm_reloads_total", "reason", string(dcm.ReasonSlotsExhausted)); got != base+1 {
		t.Errorf("slots-exhausted reloads: %v, want 1", got-base)
	}
	if got := s.Reloads(); got != total+1 {
		t.Errorf("reloads: %v, want exactly 1", got-total)
	}
	if n := len(s.Backend(webBE).Servers); n != slots+2 {
		t.Errorf("after the reload web has %d slots, want %d (pods + 1 free)", n, slots+2)
	}
}

// TestReloadMode: the router without DCM reloads on every endpoint change,
// each with its reason.
func TestReloadMode(t *testing.T) {
	s := harness.Start(t, harness.Options{Config: func(c *system.Config) { c.Mode = dcm.ModeReload }})
	s.DemoServes(webHost, "/", "demo", "web", 2)
	rec := s.Subscribe(t)
	pid := s.WorkerPID()
	before := s.Counter("dcm_reloads_total", "reason", string(dcm.ReasonEndpointsChange))
	s.Scale("demo", "web", 3)
	s.DemoServes(webHost, "/", "demo", "web", 3)
	s.Scale("demo", "web", 1)
	s.DemoServes(webHost, "/", "demo", "web", 1)
	// A new pod is added not ready, then made ready; a removed one drains
	// then goes: at least one reload for each of the two scales.
	if got := s.Counter("dcm_reloads_total", "reason", string(dcm.ReasonEndpointsChange)) - before; got < 2 {
		t.Errorf("%v endpoints-changed reloads, want at least 2", got)
	}
	if s.WorkerPID() == pid {
		t.Error("worker PID unchanged in reload mode")
	}
	for _, r := range rec.ReloadReasons() {
		if r != dcm.ReasonEndpointsChange {
			t.Errorf("unexpected reload reason %q", r)
		}
	}
	if s.Counter("dcm_updates_total", "result", "dynamic") != 0 {
		t.Error("reload mode applied something at runtime without reloading")
	}
}

// TestFilesEqualRuntimeAfterEverySync: the cfg on disk lists exactly the
// servers HAProxy has, after runtime changes alone.
func TestFilesEqualRuntimeAfterEverySync(t *testing.T) {
	s := harness.Start(t, harness.Options{})
	s.Scale("demo", "web", 6)
	s.DemoServes(webHost, "/", "demo", "web", 6)
	s.Engine.FlushFiles() // written behind the sync that served them
	files, err := haproxy.ReadFiles(s.Dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg := files.Text()
	var inFile []string
	backend := ""
	for _, line := range strings.Split(string(cfg), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 2 && f[0] == "backend":
			backend = f[1]
		case len(f) >= 3 && f[0] == "server" && backend == webBE:
			inFile = append(inFile, f[1]+" "+f[2])
		}
	}
	var inRuntime []string
	for _, sv := range s.Backend(webBE).Servers {
		inRuntime = append(inRuntime, sv.Name+" "+sv.Addr+":"+strconv.Itoa(sv.Port))
	}
	slices.Sort(inFile)
	if !slices.Equal(inFile, inRuntime) {
		t.Errorf("cfg servers %v\nruntime     %v", inFile, inRuntime)
	}
	if !bytes.Contains(cfg, []byte("backend "+webBE)) {
		t.Error("web backend missing in the cfg")
	}
}
