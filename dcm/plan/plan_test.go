package plan

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

func route(name string) dcm.Route {
	return dcm.Route{Namespace: "demo", Name: name, Kind: dcm.KindHTTP, Host: name + ".example", Path: "/",
		PathType: dcm.PathPrefix, Balance: dcm.BalanceRoundRobin, Check: true}
}

func ep(pod string, ip string, st dcm.AdminState) dcm.Endpoint {
	return dcm.Endpoint{Name: pod + ":http", Addr: ip, Port: 8080, Weight: 1, State: st, Pod: pod}
}

func desiredOf(r dcm.Route, eps ...dcm.Endpoint) dcm.Desired {
	return dcm.Desired{Backends: []*dcm.DesiredBackend{{Name: r.BackendName(), Route: r, Endpoints: eps}}}
}

func opStrings(ops []dcm.Op) []string {
	var out []string
	for _, o := range ops {
		out = append(out, o.String())
	}
	return out
}

func TestComputeScenarios(t *testing.T) {
	web := route("web")
	be := web.BackendName()
	dynamic := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true}
	slots1 := dcm.Caps{Mode: dcm.ModeSlots, Slots: 1, AddServer: true}
	reload := dcm.Caps{Mode: dcm.ModeReload, AddServer: true}
	a := ep("web-a", "127.0.1.1", dcm.StateReady)
	b := ep("web-b", "127.0.1.2", dcm.StateReady)
	c := ep("web-c", "127.0.1.3", dcm.StateReady)
	bDrain := b
	bDrain.State = dcm.StateDrain

	tests := []struct {
		name        string
		caps        dcm.Caps
		actual      dcm.State
		desired     dcm.Desired
		wantOps     []string
		wantReasons []dcm.ReloadReason
		wantWaiting int
	}{
		{
			name:    "scale out adds with checks then ready",
			caps:    dynamic,
			actual:  idle(Fresh(desiredOf(web, a), dynamic)),
			desired: desiredOf(web, a, b),
			wantOps: []string{
				"add-server " + be + "/web-b:http 127.0.1.2:8080 weight 1",
				"enable-health " + be + "/web-b:http",
				"set-state " + be + "/web-b:http ready",
			},
		},
		{
			name:    "terminating endpoint drains",
			caps:    dynamic,
			actual:  idle(Fresh(desiredOf(web, a, b), dynamic)),
			desired: desiredOf(web, a, bDrain),
			wantOps: []string{"set-state " + be + "/web-b:http drain"},
		},
		{
			name:        "removed endpoint goes to maint first",
			caps:        dynamic,
			actual:      idle(Fresh(desiredOf(web, a, bDrain), dynamic)),
			desired:     desiredOf(web, a),
			wantOps:     []string{"set-state " + be + "/web-b:http maint"},
			wantWaiting: 1,
		},
		{
			name:        "busy maint server is kept",
			caps:        dynamic,
			actual:      withSessions(Fresh(desiredOf(web, a, ep("web-b", "127.0.1.2", dcm.StateMaint)), dynamic), "web-b:http", 2),
			desired:     desiredOf(web, a),
			wantWaiting: 1,
		},
		{
			name:    "idle maint server is deleted",
			caps:    dynamic,
			actual:  idle(Fresh(desiredOf(web, a, ep("web-b", "127.0.1.2", dcm.StateMaint)), dynamic)),
			desired: desiredOf(web, a),
			wantOps: []string{"del-server " + be + "/web-b:http"},
		},
		{
			name:        "new route reloads",
			caps:        dynamic,
			actual:      dcm.State{},
			desired:     desiredOf(web, a),
			wantReasons: []dcm.ReloadReason{dcm.ReasonRouteAdded},
		},
		{
			name:        "slots: endpoint takes the free slot",
			caps:        slots1,
			actual:      idle(Fresh(desiredOf(web, a), slots1)),
			desired:     desiredOf(web, a, b),
			wantOps:     []string{"set-addr " + be + "/slot2 127.0.1.2:8080", "set-state " + be + "/slot2 ready"},
			wantReasons: nil,
		},
		{
			name:        "slots: no free slot reloads",
			caps:        slots1,
			actual:      idle(Fresh(desiredOf(web, a), slots1)),
			desired:     desiredOf(web, a, b, c),
			wantReasons: []dcm.ReloadReason{dcm.ReasonSlotsExhausted},
		},
		{
			name:        "reload mode reloads on any endpoint change",
			caps:        reload,
			actual:      idle(Fresh(desiredOf(web, a), reload)),
			desired:     desiredOf(web, a, b),
			wantReasons: []dcm.ReloadReason{dcm.ReasonEndpointsChange},
		},
		{
			name:        "a reload restores drain after loading the file",
			caps:        reload,
			actual:      idle(Fresh(desiredOf(web, a), reload)),
			desired:     desiredOf(web, a, bDrain),
			wantOps:     []string{"set-state " + be + "/web-b:http drain"},
			wantReasons: []dcm.ReloadReason{dcm.ReasonEndpointsChange},
		},
		{
			name:    "nothing to do",
			caps:    dynamic,
			actual:  idle(Fresh(desiredOf(web, a, b), dynamic)),
			desired: desiredOf(web, a, b),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Compute(tt.actual, tt.desired, tt.caps)
			if got := opStrings(p.Ops); !slices.Equal(got, tt.wantOps) {
				t.Errorf("ops\n got %q\nwant %q", got, tt.wantOps)
			}
			if !slices.Equal(p.Reasons, tt.wantReasons) || p.Reload != (len(tt.wantReasons) > 0) {
				t.Errorf("reload %v reasons %v, want %v", p.Reload, p.Reasons, tt.wantReasons)
			}
			if p.Waiting != tt.wantWaiting {
				t.Errorf("waiting %d, want %d", p.Waiting, tt.wantWaiting)
			}
		})
	}
}

func withSessions(st dcm.State, server string, n int) dcm.State {
	st = idle(st)
	for _, b := range st.Backends {
		for k := range b.Servers {
			if b.Servers[k].Name == server {
				b.Servers[k].Sessions = n
			}
		}
	}
	return st
}

// TestPlannerIsPortable: the planner must build for the browser, and must not
// reach for I/O, the clock or the host.
func TestPlannerIsPortable(t *testing.T) {
	// go test puts its own GOROOT/bin first in PATH.
	cmd := exec.Command("go", "build", "-o", os.DevNull, ".")
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("GOOS=js GOARCH=wasm go build: %v\n%s", err, out)
	}
	out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, ".", "../", "../routing").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, imp := range strings.Fields(string(out)) {
		switch {
		case imp == "github.com/dcm-router/dcm/dcm", imp == "github.com/dcm-router/dcm/dcm/routing":
		case strings.Contains(imp, "."):
			t.Errorf("planner or model imports %s: only the standard library is allowed", imp)
		case imp == "os" || imp == "net" || imp == "syscall" || strings.HasPrefix(imp, "net/http") || imp == "os/exec" || imp == "math/rand" || imp == "math/rand/v2":
			t.Errorf("planner or model imports %s: no I/O or randomness", imp)
		}
	}
	// The model may use time for event timestamps; the planner and its
	// routing rules may not.
	out, err = exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, ".", "../routing").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	if slices.Contains(strings.Fields(string(out)), "time") {
		t.Errorf("the planner imports time: it must never read the clock")
	}
}
