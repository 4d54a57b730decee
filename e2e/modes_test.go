package e2e

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/haproxy"
)

// TestForcedReloadServesTheSame: after a sequence of runtime changes, a
// reload loads the files dcm wrote, and they serve exactly what the runtime
// served: the files always equal the runtime state.
func TestForcedReloadServesTheSame(t *testing.T) {
	s := startStack(t, stackOptions{})
	for _, n := range []int32{4, 2, 5} {
		s.scale("demo", "web", n)
		s.waitServes(webHost, "/", "demo", "web", int(n))
	}
	s.scale("demo", "shop", 3)
	s.waitServes(shopHost, "/", "demo", "shop", 3)
	s.eventually("retired servers are deleted", 10*time.Second, func() error {
		if n := len(s.backend(webBE).Servers); n != 5 {
			return errString("servers of gone pods are still there")
		}
		return nil
	})
	before := s.observed(t)
	pid := s.workerPID()

	s.eng.RequestReload(dcm.ReasonManual)
	s.eventually("the manual reload happens", 10*time.Second, func() error {
		if s.counter("dcm_reloads_total", "reason", "manual") != 1 {
			return errString("no manual reload yet")
		}
		return nil
	})
	if s.workerPID() == pid {
		t.Fatal("the worker PID did not change: no reload happened")
	}
	if after := s.observed(t); !slices.Equal(before, after) {
		t.Errorf("HAProxy's servers changed across the reload\nbefore %v\nafter  %v", before, after)
	}
	s.waitServes(webHost, "/", "demo", "web", 5)
	s.waitServes(shopHost, "/", "demo", "shop", 3)
	s.waitServes(shopHost, "/api", "demo", "api", 1)
}

// observed lists HAProxy's servers as "backend/server addr:port weight state".
func (s *stack) observed(t *testing.T) []string {
	t.Helper()
	obs, err := s.driver.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for b, servers := range obs {
		for _, sv := range servers {
			out = append(out, b+"/"+sv.Name+" "+sv.Addr+":"+itoa(sv.Port)+" w"+itoa(sv.Weight)+" "+string(sv.State))
		}
	}
	slices.Sort(out)
	return out
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	if n == 0 {
		return "0"
	}
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

// TestSlotsMode: with one free slot per backend, dcm reloads exactly when a
// backend runs out of slots, with reason slots-exhausted, and serves right.
func TestSlotsMode(t *testing.T) {
	s := startStack(t, stackOptions{caps: dcm.Caps{Mode: dcm.ModeSlots, Slots: 1, AddServer: true}})
	s.scale("demo", "web", 1)
	s.waitServes(webHost, "/", "demo", "web", 1)
	s.eventually("the retired slot is idle and free", 10*time.Second, func() error {
		// The initial render had 2 pods + 1 free slot; the slot of the pod
		// scaled in is reusable once HAProxy reports it idle.
		for _, sv := range s.backend(webBE).Servers {
			if sv.State == dcm.StateDrain || sv.State == dcm.StateMaint && !sv.Idle() {
				return errString(sv.Name + " still busy")
			}
		}
		return nil
	})
	base := s.counter("dcm_reloads_total", "reason", string(dcm.ReasonSlotsExhausted))
	before := s.backend(webBE).Servers
	slots := len(before)

	// Fill every slot: no reload.
	s.scale("demo", "web", int32(slots))
	s.waitServes(webHost, "/", "demo", "web", slots)
	if got := s.counter("dcm_reloads_total", "reason", string(dcm.ReasonSlotsExhausted)); got != base {
		t.Fatalf("reloaded (%v) while free slots were left (%d slots before: %+v)", got-base, slots, before)
	}
	// One more pod than slots: exactly one reload, for slots-exhausted.
	total := s.reloads()
	s.scale("demo", "web", int32(slots+1))
	s.waitServes(webHost, "/", "demo", "web", slots+1)
	if got := s.counter("dcm_reloads_total", "reason", string(dcm.ReasonSlotsExhausted)); got != base+1 {
		t.Errorf("slots-exhausted reloads: %v, want 1", got-base)
	}
	if got := s.reloads(); got != total+1 {
		t.Errorf("reloads: %v, want exactly 1", got-total)
	}
	if n := len(s.backend(webBE).Servers); n != slots+2 {
		t.Errorf("after the reload web has %d slots, want %d (pods + 1 free)", n, slots+2)
	}
}

// TestReloadMode: the router without DCM reloads on every endpoint change,
// each with its reason.
func TestReloadMode(t *testing.T) {
	s := startStack(t, stackOptions{caps: dcm.Caps{Mode: dcm.ModeReload, AddServer: true}})
	s.waitServes(webHost, "/", "demo", "web", 2)
	rec := s.subscribe(t)
	pid := s.workerPID()
	before := s.counter("dcm_reloads_total", "reason", string(dcm.ReasonEndpointsChange))
	s.scale("demo", "web", 3)
	s.waitServes(webHost, "/", "demo", "web", 3)
	s.scale("demo", "web", 1)
	s.waitServes(webHost, "/", "demo", "web", 1)
	// A new pod is added not ready, then made ready; a removed one drains
	// then goes: at least one reload for each of the two scales.
	if got := s.counter("dcm_reloads_total", "reason", string(dcm.ReasonEndpointsChange)) - before; got < 2 {
		t.Errorf("%v endpoints-changed reloads, want at least 2", got)
	}
	if s.workerPID() == pid {
		t.Error("worker PID unchanged in reload mode")
	}
	for _, r := range rec.reloadReasons() {
		if r != dcm.ReasonEndpointsChange {
			t.Errorf("unexpected reload reason %q", r)
		}
	}
	if s.counter("dcm_updates_total", "result", "dynamic") != 0 {
		t.Error("reload mode applied something at runtime without reloading")
	}
}

// TestFilesEqualRuntimeAfterEverySync: the cfg on disk lists exactly the
// servers HAProxy has, after runtime changes alone.
func TestFilesEqualRuntimeAfterEverySync(t *testing.T) {
	s := startStack(t, stackOptions{})
	s.scale("demo", "web", 6)
	s.waitServes(webHost, "/", "demo", "web", 6)
	cfg, err := os.ReadFile(filepath.Join(s.dir, haproxy.ConfigName))
	if err != nil {
		t.Fatal(err)
	}
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
	for _, sv := range s.backend(webBE).Servers {
		inRuntime = append(inRuntime, sv.Name+" "+sv.Addr+":"+itoa(sv.Port))
	}
	slices.Sort(inFile)
	if !slices.Equal(inFile, inRuntime) {
		t.Errorf("cfg servers %v\nruntime     %v", inFile, inRuntime)
	}
	if !bytes.Contains(cfg, []byte("backend "+webBE)) {
		t.Error("web backend missing in the cfg")
	}
}
