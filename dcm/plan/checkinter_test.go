package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

// TestCheckIntervalChange: a route's check interval is fixed in each
// server when it is added. Renamed by the source (WithCheck), a new
// interval adds new servers with it beside the old ones, ready before
// the old ones leave, with no reload in dynamic mode; the old ones are
// deleted once idle. Slots mode reloads (check-interval), and so does a
// server that kept its name.
func TestCheckIntervalChange(t *testing.T) {
	r := route("web")
	r.Check = true
	b := desiredBackend(r, ep("web-1", "127.0.2.1", dcm.StateReady), ep("web-2", "127.0.2.2", dcm.StateReady))
	dyn := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 2}
	st := idle(Fresh(desiredAll(b), dyn))
	nb := b.WithCheck(true, 2000)
	p := Compute(st, desiredAll(nb), dyn)
	ops := opStrings(p.Ops)
	if p.Reload || len(ops) != 8 {
		t.Fatalf("reload %v %v, ops %q", p.Reload, p.Reasons, ops)
	}
	// Adds (with their checks and states) first, the old servers to maint after.
	for i, want := range []string{"add-server be_http:demo:web/web-1:http.i2000", "enable-health", "set-state be_http:demo:web/web-1:http.i2000 ready",
		"add-server be_http:demo:web/web-2:http.i2000", "enable-health", "set-state be_http:demo:web/web-2:http.i2000 ready",
		"set-state be_http:demo:web/web-1:http maint", "set-state be_http:demo:web/web-2:http maint"} {
		if !strings.HasPrefix(ops[i], want) {
			t.Errorf("op %d: %q, want %q…", i, ops[i], want)
		}
	}
	for _, o := range p.Ops {
		if o.Kind == dcm.OpAddServer && o.CheckInterMillis != 2000 {
			t.Errorf("%s: interval %d", o, o.CheckInterMillis)
		}
	}
	p2 := Compute(idle(p.Next), desiredAll(nb), dyn)
	if got := opStrings(p2.Ops); p2.Reload || !slices.Equal(got, []string{"del-server be_http:demo:web/web-1:http", "del-server be_http:demo:web/web-2:http"}) {
		t.Errorf("once idle: reload %v, ops %q", p2.Reload, got)
	}
	if again := Compute(idle(p2.Next), desiredAll(nb), dyn); !again.Empty() {
		t.Errorf("compute(next) not empty: %q", opStrings(again.Ops))
	}

	kept := b
	kept.Route.CheckInterMillis = 2000 // not renamed
	if p := Compute(st, desiredAll(kept), dyn); !p.Reload || !slices.Equal(p.Reasons, []dcm.ReloadReason{dcm.ReasonCheckInterval}) {
		t.Errorf("a server that kept its name: reload %v %v", p.Reload, p.Reasons)
	}
	slots := dcm.Caps{Mode: dcm.ModeSlots, AddServer: true, Slots: 2}
	if p := Compute(idle(Fresh(desiredAll(b), slots)), desiredAll(nb), slots); !p.Reload || !slices.Equal(p.Reasons, []dcm.ReloadReason{dcm.ReasonCheckInterval}) {
		t.Errorf("slots: reload %v %v", p.Reload, p.Reasons)
	}
	if s := Fresh(desiredAll(nb), dyn).Backends[0].Servers[0]; s.CheckInterMillis != 2000 {
		t.Errorf("fresh: %+v", s)
	}
}
