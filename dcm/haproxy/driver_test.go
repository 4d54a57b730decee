package haproxy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

func observeOne(t *testing.T, d *Driver, backend string) map[string]dcm.Server {
	t.Helper()
	obs, err := d.Observe(context.Background())
	mustf(t, err, "observe")
	out := map[string]dcm.Server{}
	for _, s := range obs[backend] {
		out[s.Name] = s
	}
	return out
}

// sessionOn checks that HAProxy reports a session on the server.
func sessionOn(t *testing.T, d *Driver, backend, server string) func() error {
	return func() error {
		if s := observeOne(t, d, backend)[server]; s.Sessions == 0 {
			return fmt.Errorf("%s: %+v", server, s)
		}
		return nil
	}
}

// delServer checks that ops, whose del server HAProxy refuses while the
// server keeps a connection, go through; any other error fails the test.
func delServer(t *testing.T, d *Driver, ops []dcm.Op, next dcm.State) func() error {
	return func() error {
		err := d.Apply(context.Background(), ops, next)
		if busy := (*BusyError)(nil); err != nil && !errors.As(err, &busy) {
			t.Fatalf("del server: %v", err)
		}
		return err
	}
}

// commandErrors lists every *CommandError in a (joined, wrapped) error.
func commandErrors(err error) []*CommandError {
	var out []*CommandError
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if ce, ok := e.(*CommandError); ok {
			out = append(out, ce)
			return
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return out
}

// TestApplyLifecycle walks one server through every op, with traffic.
func TestApplyLifecycle(t *testing.T) {
	t.Parallel()
	r := route("ns", "life", "life.example", "/", dcm.PathPrefix)
	base := testkit.StartBackend(t, "127.0.0.2", "base")
	one := testkit.StartBackend(t, "127.0.0.3", "one")
	two := testkit.StartBackend(t, "127.0.0.4", "two")
	be := r.BackendName()
	d, bind := startDriver(t, state(backendFor(r, serverFor(base, dcm.StateMaint))))
	ctx := context.Background()

	if code, _ := get(t, bind, "life.example", "/"); code != 503 {
		t.Fatalf("no ready server: got %d, want 503", code)
	}
	steps := []struct {
		name  string
		ops   []dcm.Op
		check func(t *testing.T, s dcm.Server, ok bool)
		body  string
	}{
		{"add", []dcm.Op{{Kind: dcm.OpAddServer, Backend: be, Server: "dyn", Addr: one.Addr, Port: one.Port, Weight: 3, Check: true}},
			func(t *testing.T, s dcm.Server, ok bool) {
				if !ok || s.State != dcm.StateMaint || s.Weight != 3 || s.Addr != one.Addr || s.Port != one.Port {
					t.Errorf("after add: %+v %v", s, ok)
				}
			}, ""},
		{"enable-health+ready", []dcm.Op{{Kind: dcm.OpEnableHealth, Backend: be, Server: "dyn"}, {Kind: dcm.OpSetState, Backend: be, Server: "dyn", State: dcm.StateReady}},
			func(t *testing.T, s dcm.Server, ok bool) {
				if s.State != dcm.StateReady {
					t.Errorf("after ready: %+v", s)
				}
			}, "one"},
		{"set-addr", []dcm.Op{{Kind: dcm.OpSetAddr, Backend: be, Server: "dyn", Addr: two.Addr, Port: two.Port}},
			func(t *testing.T, s dcm.Server, ok bool) {
				if s.Addr != two.Addr || s.Port != two.Port {
					t.Errorf("after set-addr: %+v", s)
				}
			}, "two"},
		{"set-addr-unchanged", []dcm.Op{{Kind: dcm.OpSetAddr, Backend: be, Server: "dyn", Addr: two.Addr, Port: two.Port}}, nil, "two"},
		{"set-weight", []dcm.Op{{Kind: dcm.OpSetWeight, Backend: be, Server: "dyn", Weight: 7}},
			func(t *testing.T, s dcm.Server, ok bool) {
				if s.Weight != 7 {
					t.Errorf("after set-weight: %+v", s)
				}
			}, "two"},
		{"drain", []dcm.Op{{Kind: dcm.OpSetState, Backend: be, Server: "dyn", State: dcm.StateDrain}},
			func(t *testing.T, s dcm.Server, ok bool) {
				if s.State != dcm.StateDrain || !strings.HasPrefix(s.Health, "DRAIN") {
					t.Errorf("after drain: %+v", s)
				}
			}, ""},
		{"maint", []dcm.Op{{Kind: dcm.OpSetState, Backend: be, Server: "dyn", State: dcm.StateMaint}},
			func(t *testing.T, s dcm.Server, ok bool) {
				if s.State != dcm.StateMaint || s.Health != "MAINT" {
					t.Errorf("after maint: %+v", s)
				}
			}, ""},
		{"del", []dcm.Op{{Kind: dcm.OpDelServer, Backend: be, Server: "dyn"}},
			func(t *testing.T, s dcm.Server, ok bool) {
				if ok {
					t.Errorf("after del: still there: %+v", s)
				}
			}, ""},
	}
	for _, st := range steps {
		if err := d.Apply(ctx, st.ops, dcm.State{}); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if st.check != nil {
			s, ok := observeOne(t, d, be)["dyn"]
			st.check(t, s, ok)
		}
		code, body := get(t, bind, "life.example", "/")
		if st.body != "" && (code != 200 || body != st.body) {
			t.Errorf("%s: GET = %d %q, want 200 %q", st.name, code, body, st.body)
		}
		if st.body == "" && code != 503 {
			t.Errorf("%s: GET = %d %q, want 503 (no server takes new traffic)", st.name, code, body)
		}
	}
}

// TestApplyFailures checks every failure reply becomes a *CommandError and
// the connection stays in step for the commands after it.
func TestApplyFailures(t *testing.T) {
	t.Parallel()
	r := route("ns", "fail", "fail.example", "/", dcm.PathPrefix)
	e := testkit.StartBackend(t, "127.0.0.2", "e")
	be := r.BackendName()
	s := serverFor(e, dcm.StateReady)
	d, _ := startDriver(t, state(backendFor(r, s)))
	ctx := context.Background()
	tests := []struct {
		name  string
		op    dcm.Op
		reply string
	}{
		{"add-existing", dcm.Op{Kind: dcm.OpAddServer, Backend: be, Server: s.Name, Addr: e.Addr, Port: e.Port, Weight: 1}, "[3]: Already exists a server with the same name in backend."},
		{"add-unknown-backend", dcm.Op{Kind: dcm.OpAddServer, Backend: "be_http:ns:nope", Server: "x", Addr: e.Addr, Port: e.Port, Weight: 1}, "[3]: No such backend."},
		{"weight-unknown-server", dcm.Op{Kind: dcm.OpSetWeight, Backend: be, Server: "nope", Weight: 1}, "[3]: No such server."},
		{"state-unknown-server", dcm.Op{Kind: dcm.OpSetState, Backend: be, Server: "nope", State: dcm.StateReady}, "[3]: No such server."},
		{"addr-unknown-server", dcm.Op{Kind: dcm.OpSetAddr, Backend: be, Server: "nope", Addr: e.Addr, Port: e.Port}, "[3]: No such server."},
		{"health-without-check", dcm.Op{Kind: dcm.OpEnableHealth, Backend: be, Server: s.Name}, "[3]: Health check was not configured on this server, cannot enable."},
		{"del-active", dcm.Op{Kind: dcm.OpDelServer, Backend: be, Server: s.Name}, "[3]: Only servers in maintenance mode can be deleted."},
		{"del-unknown", dcm.Op{Kind: dcm.OpDelServer, Backend: be, Server: "nope"}, "[3]: No such server."},
	}
	// One batch: each failure is reported and the good ops between them apply.
	var ops []dcm.Op
	for i, tt := range tests {
		ops = append(ops, tt.op, dcm.Op{Kind: dcm.OpSetWeight, Backend: be, Server: s.Name, Weight: i + 10})
	}
	err := d.Apply(ctx, ops, dcm.State{})
	ces := commandErrors(err)
	if len(ces) != len(tests) {
		t.Fatalf("got %d command errors, want %d: %v", len(ces), len(tests), err)
	}
	for i, tt := range tests {
		ce := ces[i]
		want, _ := CommandFor(tt.op, HTTP2{})
		if ce.Index != 2*i || ce.Command != want.String() || ce.Reply != tt.reply {
			t.Errorf("%s: got {%d %q %q}, want {%d %q %q}", tt.name, ce.Index, ce.Command, ce.Reply, 2*i, want.String(), tt.reply)
		}
	}
	var one *CommandError
	if !errors.As(err, &one) {
		t.Errorf("errors.As(*CommandError) failed on %v", err)
	}
	if got := observeOne(t, d, be)[s.Name].Weight; got != len(tests)-1+10 {
		t.Errorf("weight after batch = %d, want %d: the good ops must apply", got, len(tests)-1+10)
	}
	// The connection is still in step.
	if _, err := d.Info(ctx); err != nil {
		t.Errorf("info after failures: %v", err)
	}
}

// TestApplyLargeBatch pipelines 2000 commands in one batch.
func TestApplyLargeBatch(t *testing.T) {
	t.Parallel()
	r := route("ns", "big", "big.example", "/", dcm.PathPrefix)
	e := testkit.StartBackend(t, "127.0.0.2", "e")
	be := r.BackendName()
	var seen int
	d, _ := startDriver(t, state(backendFor(r)), func(c *DriverConfig) {
		c.Observer = func(cmd string, dur time.Duration, err error) {
			if err == nil {
				seen++
			}
		}
	})
	var ops []dcm.Op
	for i := range 1000 {
		ops = append(ops, dcm.Op{Kind: dcm.OpAddServer, Backend: be, Server: fmt.Sprintf("s%04d", i), Addr: e.Addr, Port: e.Port, Weight: 1})
	}
	for i := range 1000 {
		ops = append(ops, dcm.Op{Kind: dcm.OpSetWeight, Backend: be, Server: fmt.Sprintf("s%04d", i), Weight: i%256 + 1})
	}
	start := time.Now()
	if err := d.Apply(context.Background(), ops, dcm.State{}); err != nil {
		t.Fatal(err)
	}
	t.Logf("2000 commands in %s", time.Since(start))
	if seen < 2000 {
		t.Errorf("observer saw %d successful commands, want ≥2000", seen)
	}
	obs := observeOne(t, d, be)
	if len(obs) != 1000 || obs["s0999"].Weight != 999%256+1 {
		t.Errorf("observed %d servers, s0999=%+v", len(obs), obs["s0999"])
	}
}

// comparable drops what a reload legitimately changes: observed health and
// load, and drain (2.6 cannot write drain in a cfg: it comes back as maint).
func comparableServers(in []dcm.Server) []dcm.Server {
	out := make([]dcm.Server, 0, len(in))
	for _, s := range in {
		if s.State == dcm.StateDrain {
			s.State = dcm.StateMaint
		}
		out = append(out, dcm.Server{Name: s.Name, Addr: s.Addr, Port: s.Port, Weight: s.Weight, State: s.State})
	}
	return out
}

// TestWriteThenReload checks runtime == file: what Apply did at runtime,
// written by Write, is what a reload brings back.
func TestWriteThenReload(t *testing.T) {
	t.Parallel()
	r := route("ns", "wr", "wr.example", "/", dcm.PathPrefix)
	be := r.BackendName()
	a := testkit.StartBackend(t, "127.0.0.2", "a")
	b := testkit.StartBackend(t, "127.0.0.3", "b")
	c := testkit.StartBackend(t, "127.0.0.4", "c")
	sa, sb := serverFor(a, dcm.StateReady), serverFor(b, dcm.StateReady)
	d, bind := startDriver(t, state(backendFor(r, sa, sb)))
	ctx := context.Background()

	ops := []dcm.Op{
		{Kind: dcm.OpAddServer, Backend: be, Server: "s-c", Addr: c.Addr, Port: c.Port, Weight: 2},
		{Kind: dcm.OpSetState, Backend: be, Server: "s-c", State: dcm.StateReady},
		{Kind: dcm.OpSetWeight, Backend: be, Server: sa.Name, Weight: 5},
		{Kind: dcm.OpSetState, Backend: be, Server: sb.Name, State: dcm.StateDrain},
		{Kind: dcm.OpAddServer, Backend: be, Server: "s-d", Addr: c.Addr, Port: c.Port, Weight: 4},
	}
	mustf(t, d.Apply(ctx, ops, dcm.State{}), "apply")
	sa.Weight = 5
	sb.State = dcm.StateDrain
	sc := dcm.Server{Name: "s-c", Endpoint: "s-c", Addr: c.Addr, Port: c.Port, Weight: 2, State: dcm.StateReady, Origin: dcm.OriginRuntime}
	sd := dcm.Server{Name: "s-d", Endpoint: "s-d", Addr: c.Addr, Port: c.Port, Weight: 4, State: dcm.StateMaint, Origin: dcm.OriginRuntime}
	next := state(backendFor(r, sa, sb, sc, sd))
	mustf(t, d.Write(next), "write")

	before, err := d.Observe(ctx)
	mustf(t, err, "observe before")
	bodies := func() []string {
		var got []string
		for range 14 {
			_, body := get(t, bind, "wr.example", "/")
			got = append(got, body)
		}
		slices.Sort(got)
		return slices.Compact(got)
	}
	servedBefore := bodies()

	info0, err := d.Info(ctx)
	mustf(t, err, "info")
	res, err := d.Reload(ctx, next)
	mustf(t, err, "reload")
	if res.OldPID != info0.Pid || res.NewPID == res.OldPID || res.NewPID == 0 {
		t.Errorf("reload result %+v, worker before %d", res, info0.Pid)
	}
	info1, err := d.Info(ctx)
	mustf(t, err, "info after reload")
	if info1.Pid != res.NewPID {
		t.Errorf("admin socket served by %d after reload, want %d", info1.Pid, res.NewPID)
	}
	after, err := d.Observe(ctx)
	mustf(t, err, "observe after")
	if got, want := comparableServers(after[be]), comparableServers(before[be]); !slices.Equal(got, want) {
		t.Errorf("runtime != file:\nbefore reload %+v\nafter reload  %+v", want, got)
	}
	if got := bodies(); !slices.Equal(got, servedBefore) {
		t.Errorf("served %v after reload, %v before", got, servedBefore)
	}
	if !slices.Equal(servedBefore, []string{"a", "c"}) {
		t.Errorf("served %v, want a and c (b drained, d in maint)", servedBefore)
	}
}

// TestReloadRefusesInvalidConfig: a config HAProxy rejects is never written
// nor loaded, and the old worker keeps serving.
func TestReloadRefusesInvalidConfig(t *testing.T) {
	t.Parallel()
	r := route("ns", "ok", "ok.example", "/", dcm.PathPrefix)
	e := testkit.StartBackend(t, "127.0.0.2", "ok")
	st := state(backendFor(r, serverFor(e, dcm.StateReady)))
	d, bind := startDriver(t, st)
	ctx := context.Background()
	info0, err := d.Info(ctx)
	mustf(t, err, "info")
	cfgPath := filepath.Join(d.cfg.WorkDir, ConfigName)
	onDisk, err := os.ReadFile(cfgPath)
	mustf(t, err, "read cfg")

	good, err := Render(d.cfg.Settings, st)
	mustf(t, err, "render")
	bad := Files{Config: append(slices.Clone(good.Config), "    bogus_keyword 1\n"...), Maps: good.Maps}
	d.mu.Lock()
	_, err = d.reloadLocked(ctx, bad)
	d.mu.Unlock()
	var ce *ConfigError
	if !errors.As(err, &ce) || len(ce.Alerts) == 0 || !strings.Contains(ce.Alerts[0], "unknown keyword 'bogus_keyword'") {
		t.Fatalf("reload of a bad config: got %v, want a *ConfigError naming bogus_keyword", err)
	}
	if now, _ := os.ReadFile(cfgPath); string(now) != string(onDisk) {
		t.Errorf("a rejected config was written to disk")
	}
	if info, err := d.Info(ctx); err != nil || info.Pid != info0.Pid {
		t.Errorf("worker after refused reload: %+v %v, want pid %d", info.Pid, err, info0.Pid)
	}
	if code, body := get(t, bind, "ok.example", "/"); code != 200 || body != "ok" {
		t.Errorf("old worker: GET = %d %q", code, body)
	}
}

// TestReloadRejectedByMaster: a config that passes -c but cannot load (its
// port is taken) fails the reload, the old worker keeps serving and the
// previous files are restored on disk.
func TestReloadRejectedByMaster(t *testing.T) {
	t.Parallel()
	r := route("ns", "ok", "ok.example", "/", dcm.PathPrefix)
	e := testkit.StartBackend(t, "127.0.0.2", "ok")
	st := state(backendFor(r, serverFor(e, dcm.StateReady)))
	d, bind := startDriver(t, st, func(c *DriverConfig) { c.ReloadTimeout = 10 * time.Second })
	ctx := context.Background()
	info0, err := d.Info(ctx)
	mustf(t, err, "info")
	cfgPath := filepath.Join(d.cfg.WorkDir, ConfigName)
	onDisk, err := os.ReadFile(cfgPath)
	mustf(t, err, "read cfg")

	busy := testkit.StartBackend(t, "127.0.0.1", "busy") // a plain listener, without SO_REUSEPORT
	settings := d.cfg.Settings
	settings.HTTPBind = fmt.Sprintf("127.0.0.1:%d", busy.Port)
	files, err := Render(settings, st)
	mustf(t, err, "render")
	d.mu.Lock()
	_, err = d.reloadLocked(ctx, files)
	d.mu.Unlock()
	if !errors.Is(err, ErrReloadRejected) {
		t.Fatalf("reload onto a busy port: got %v, want ErrReloadRejected", err)
	}
	if now, _ := os.ReadFile(cfgPath); string(now) != string(onDisk) {
		t.Errorf("the previous cfg was not restored after a rejected reload")
	}
	if info, err := d.Info(ctx); err != nil || info.Pid != info0.Pid {
		t.Errorf("worker after rejected reload: %d %v, want %d", info.Pid, err, info0.Pid)
	}
	if code, body := get(t, bind, "ok.example", "/"); code != 200 || body != "ok" {
		t.Errorf("old worker: GET = %d %q", code, body)
	}
	procs, err := d.Procs(ctx)
	mustf(t, err, "procs")
	if procs.Failed != 1 {
		t.Errorf("failed reloads = %d, want 1", procs.Failed)
	}
	// A good reload still works afterwards.
	if _, err := d.Reload(ctx, st); err != nil {
		t.Errorf("reload after a rejected one: %v", err)
	}
}

// TestMasterKilledIsRestarted: SIGKILL the master; the Process restarts it
// from the files on disk and tells the engine.
func TestMasterKilledIsRestarted(t *testing.T) {
	t.Parallel()
	r := route("ns", "k", "k.example", "/", dcm.PathPrefix)
	e := testkit.StartBackend(t, "127.0.0.2", "alive")
	d, bind := startDriver(t, state(backendFor(r, serverFor(e, dcm.StateReady))))
	ctx := context.Background()
	pid := d.proc.PID()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	events := d.Events()
	var got []ProcessEventType
	timeout := time.After(15 * time.Second)
	for !slices.Contains(got, ProcessRestarted) {
		select {
		case ev := <-events:
			got = append(got, ev.Type)
			if ev.Type == ProcessRestarted && (ev.PID == pid || ev.PID == 0) {
				t.Errorf("restarted with pid %d, killed %d", ev.PID, pid)
			}
		case <-timeout:
			t.Fatalf("no restart after SIGKILL; events %v", got)
		}
	}
	if got[0] != ProcessExited {
		t.Errorf("events %v, want exited first", got)
	}
	if code, body := get(t, bind, "k.example", "/"); code != 200 || body != "alive" {
		t.Errorf("after restart: GET = %d %q", code, body)
	}
	// The client's connection died with the old worker; it reconnects.
	var err error
	for range 2 {
		if _, err = d.Info(ctx); err == nil {
			break
		}
	}
	if err != nil {
		t.Errorf("info after restart: %v", err)
	}
}

// TestFreeSlot: a free slot rendered at the placeholder address can be
// pointed at an endpoint and readied on a fresh start, without a state file.
func TestFreeSlot(t *testing.T) {
	t.Parallel()
	r := route("ns", "slots", "slots.example", "/", dcm.PathPrefix)
	be := r.BackendName()
	e := testkit.StartBackend(t, "127.0.0.2", "slotted")
	d, bind := startDriver(t, state(backendFor(r, dcm.Server{Name: "slot1", Weight: 1}, dcm.Server{Name: "slot2", Weight: 1})))
	ctx := context.Background()
	if s := observeOne(t, d, be)["slot1"]; s.Addr != "0.0.0.0" || s.Port != 1 || s.State != dcm.StateMaint {
		t.Fatalf("free slot observed as %+v", s)
	}
	mustf(t, d.Apply(ctx, []dcm.Op{
		{Kind: dcm.OpSetAddr, Backend: be, Server: "slot1", Addr: e.Addr, Port: e.Port},
		{Kind: dcm.OpSetState, Backend: be, Server: "slot1", State: dcm.StateReady},
	}, dcm.State{}), "fill slot")
	if s := observeOne(t, d, be)["slot1"]; s.Addr != e.Addr || s.Port != e.Port || s.State != dcm.StateReady {
		t.Errorf("filled slot observed as %+v", s)
	}
	if code, body := get(t, bind, "slots.example", "/"); code != 200 || body != "slotted" {
		t.Errorf("GET = %d %q", code, body)
	}
}

// TestIPv6 round-trips an IPv6 server through add server, the cfg and Observe.
func TestIPv6(t *testing.T) {
	t.Parallel()
	if l, err := netListen6(); err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	} else {
		l.Close()
	}
	r := route("ns", "six", "six.example", "/", dcm.PathPrefix)
	be := r.BackendName()
	cfgSrv := testkit.StartBackend(t, "::1", "six-cfg")
	rtSrv := testkit.StartBackend(t, "::1", "six-rt")
	s := serverFor(cfgSrv, dcm.StateReady)
	d, bind := startDriver(t, state(backendFor(r, s)))
	ctx := context.Background()
	if code, body := get(t, bind, "six.example", "/"); code != 200 || body != "six-cfg" {
		t.Fatalf("cfg IPv6 server: GET = %d %q", code, body)
	}
	mustf(t, d.Apply(ctx, []dcm.Op{
		{Kind: dcm.OpSetState, Backend: be, Server: s.Name, State: dcm.StateMaint},
		{Kind: dcm.OpAddServer, Backend: be, Server: "rt6", Addr: "::1", Port: rtSrv.Port, Weight: 1},
		{Kind: dcm.OpSetState, Backend: be, Server: "rt6", State: dcm.StateReady},
	}, dcm.State{}), "apply")
	if code, body := get(t, bind, "six.example", "/"); code != 200 || body != "six-rt" {
		t.Errorf("runtime IPv6 server: GET = %d %q", code, body)
	}
	if got := observeOne(t, d, be)["rt6"]; got.Addr != "::1" || got.Port != rtSrv.Port {
		t.Errorf("observed %+v", got)
	}
	mustf(t, d.Apply(ctx, []dcm.Op{{Kind: dcm.OpSetAddr, Backend: be, Server: s.Name, Addr: "::1", Port: rtSrv.Port}}, dcm.State{}), "set-addr v6")
}

// TestObserveBackends limits observation to some backends, by name.
func TestObserveBackends(t *testing.T) {
	t.Parallel()
	e := testkit.StartBackend(t, "127.0.0.2", "e")
	r1 := route("ns", "one", "one.example", "/", dcm.PathPrefix)
	r2 := route("ns", "two", "two.example", "/", dcm.PathPrefix)
	r3 := route("ns", "empty", "three.example", "/", dcm.PathPrefix)
	d, _ := startDriver(t, state(backendFor(r1, serverFor(e, dcm.StateReady)), backendFor(r2, serverFor(e, dcm.StateDrain)), backendFor(r3)))
	got, err := d.ObserveBackends(context.Background(), []string{r2.BackendName(), r3.BackendName(), "be_http:ns:missing"})
	mustf(t, err, "observe backends")
	if len(got) != 2 || len(got[r2.BackendName()]) != 1 || got[r3.BackendName()] == nil || len(got[r3.BackendName()]) != 0 {
		t.Fatalf("got %+v", got)
	}
	if s := got[r2.BackendName()][0]; s.State != dcm.StateMaint || s.Health != "MAINT" {
		t.Errorf("drained server rendered disabled: observed %+v", s)
	}
	all, err := d.Observe(context.Background())
	mustf(t, err, "observe")
	if len(all) != 3 {
		t.Errorf("Observe saw %d backends, want 3: %v", len(all), all)
	}
	// Observe streams its replies; ObserveBackends reads them as texts.
	each, err := d.ObserveBackends(context.Background(), []string{r1.BackendName(), r2.BackendName(), r3.BackendName()})
	mustf(t, err, "observe backends")
	if !reflect.DeepEqual(all, each) {
		t.Errorf("Observe %+v\nObserveBackends %+v", all, each)
	}
}

// TestStartFailsWithHAProxyMessage: a master that cannot bind exits early
// and Start reports HAProxy's own words.
func TestStartFailsWithHAProxyMessage(t *testing.T) {
	t.Parallel()
	bin := testkit.HAProxy(t)
	dir := testkit.ShortDir(t)
	busy := testkit.StartBackend(t, "127.0.0.1", "busy")
	d := NewDriver(DriverConfig{
		Binary:   bin,
		WorkDir:  dir,
		Settings: Settings{AdminSocket: filepath.Join(dir, "admin.sock"), HTTPBind: fmt.Sprintf("127.0.0.1:%d", busy.Port)},
	}, testkit.Logger(t))
	defer d.Close()
	err := d.Start(context.Background(), dcm.State{})
	if err == nil {
		t.Fatal("started on a busy port")
	}
	if !strings.Contains(err.Error(), "exited during start") || !strings.Contains(err.Error(), "[ALERT]") {
		t.Errorf("error lacks HAProxy's message: %v", err)
	}
}

// TestAttach drives a master started by someone else through its socket.
func TestAttach(t *testing.T) {
	t.Parallel()
	bin := testkit.HAProxy(t)
	dir := testkit.ShortDir(t)
	bind := testkit.FreeAddr(t)
	settings := Settings{AdminSocket: filepath.Join(dir, "admin.sock"), HTTPBind: bind}
	// Someone else's master, on a configuration dcm did not write.
	files, err := Render(settings, dcm.State{})
	mustf(t, err, "render")
	mustf(t, WriteFiles(dir, files, Files{}), "write")
	master := filepath.Join(dir, "other-master.sock")
	other := NewProcess(ProcessConfig{Binary: bin, ConfigFile: filepath.Join(dir, ConfigName), BackendsDir: filepath.Join(dir, BackendsDir), MasterSocket: master, AdminSocket: settings.AdminSocket}, testkit.Logger(t))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		other.Wait()
	})
	mustf(t, other.Start(ctx), "start the other master")

	r := route("ns", "att", "att.example", "/", dcm.PathPrefix)
	e := testkit.StartBackend(t, "127.0.0.2", "attached")
	d := NewDriver(DriverConfig{Binary: bin, WorkDir: dir, Settings: settings, MasterSocket: master}, testkit.Logger(t))
	defer d.Close()
	mustf(t, d.Start(ctx, state(backendFor(r, serverFor(e, dcm.StateReady)))), "attach")
	if code, body := get(t, bind, "att.example", "/"); code != 200 || body != "attached" {
		t.Errorf("GET = %d %q", code, body)
	}
	mustf(t, d.Close(), "close")
	// Close leaves an attached master running.
	if _, err := other.ShowProc(context.Background()); err != nil {
		t.Errorf("attached master gone after Close: %v", err)
	}
}

// TestVersionDoesNotWaitForHAProxy: the engine reads the version under its
// own lock for every snapshot; it must not wait while the driver holds its
// lock for a batch on an admin socket that does not answer.
func TestVersionDoesNotWaitForHAProxy(t *testing.T) {
	d := NewDriver(DriverConfig{WorkDir: t.TempDir()}, nil)
	v := Version{Major: 2, Minor: 6, Patch: 12}
	d.version.Store(&v)
	d.mu.Lock() // a batch in flight
	defer d.mu.Unlock()
	got := make(chan Version, 1)
	go func() { got <- d.Version() }()
	select {
	case g := <-got:
		if g != v {
			t.Errorf("Version() = %v, want %v", g, v)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Version() waits for the driver's lock")
	}
}

// TestApplyDelServerBusy: a del server HAProxy refuses because a request
// is still in flight on the server is a *BusyError naming it, and every
// other command of the batch stands; once the request is done the delete
// goes through.
func TestApplyDelServerBusy(t *testing.T) {
	t.Parallel()
	r := route("ns", "busy", "busy.example", "/", dcm.PathPrefix)
	slow := testkit.StartBackend(t, "127.0.0.2", "slow")
	other := testkit.StartBackend(t, "127.0.0.3", "other")
	be := r.BackendName()
	d, bind := startDriver(t, state(backendFor(r, serverFor(slow, dcm.StateReady), serverFor(other, dcm.StateMaint))))
	ctx := context.Background()

	done := make(chan string, 1)
	go func() {
		code, body := get(t, bind, "busy.example", "/?ms=1500")
		done <- fmt.Sprintf("%d %s", code, body)
	}()
	testkit.Eventually(t, "the slow request on s-slow", 5*time.Second, sessionOn(t, d, be, "s-slow"))
	err := d.Apply(ctx, []dcm.Op{
		{Kind: dcm.OpSetState, Backend: be, Server: "s-slow", State: dcm.StateMaint},
		{Kind: dcm.OpDelServer, Backend: be, Server: "s-slow"},
		{Kind: dcm.OpSetState, Backend: be, Server: "s-other", State: dcm.StateReady},
	}, dcm.State{})
	var busy *BusyError
	if !errors.As(err, &busy) || !slices.Equal(busy.Servers, []string{be + "/s-slow"}) {
		t.Fatalf("apply: %v, want a BusyError for %s/s-slow", err, be)
	}
	obs := observeOne(t, d, be)
	if s, ok := obs["s-slow"]; !ok || s.State != dcm.StateMaint {
		t.Errorf("s-slow: %+v %v, want kept in maint", s, ok)
	}
	if s := obs["s-other"]; s.State != dcm.StateReady {
		t.Errorf("s-other: %+v, want ready: the rest of the batch stands", s)
	}
	if got := <-done; got != "200 slow" {
		t.Errorf("the request in flight: %s, want 200 slow", got)
	}
	// The server's connection outlives the request (kept for reuse) and
	// blocks del server too until HAProxy purges it: seconds, measured here.
	finished := time.Now()
	testkit.Eventually(t, "del server after the request", 30*time.Second,
		delServer(t, d, []dcm.Op{{Kind: dcm.OpDelServer, Backend: be, Server: "s-slow"}}, dcm.State{}))
	t.Logf("del server went through %s after the request ended", time.Since(finished).Round(100*time.Millisecond))
	if _, ok := observeOne(t, d, be)["s-slow"]; ok {
		t.Error("s-slow still there after the delete")
	}
}
