package haproxy

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/routing"
	"github.com/dcm-router/dcm/internal/testkit"
)

// TestMapCommands talks to the real binary: add map, set map and del map
// answer nothing and change the entry at once, set map and del map of a
// key the map lacks are refused, and strings that could break a command
// never leave the package.
func TestMapCommands(t *testing.T) {
	t.Parallel()
	r := route("ns", "web", "web.example", "/", dcm.PathPrefix)
	d, _ := startDriver(t, state(backendFor(r)))
	ctx := context.Background()
	exec := func(build func() (Command, error)) string {
		t.Helper()
		c, err := build()
		mustf(t, err, "build")
		replies, err := d.client.Exec(ctx, []Command{c})
		mustf(t, err, "%s", c)
		if replies[0].Text != "" {
			t.Errorf("%s replied %q", c, replies[0].Text)
		}
		show, err := ShowMapCommand(dcm.MapHostPrefix)
		mustf(t, err, "show")
		replies, err = d.client.Exec(ctx, []Command{show})
		mustf(t, err, "exec show")
		got, err := ParseShowMap(replies[0].Text)
		mustf(t, err, "parse show map")
		return got
	}
	be := r.BackendName()
	if got := exec(func() (Command, error) { return AddMapCommand(dcm.MapHostPrefix, "web.example/api/", be) }); got != "web.example/ "+be+"\nweb.example/api/ "+be+"\n" {
		t.Errorf("after add map: %q", got)
	}
	if got := exec(func() (Command, error) { return SetMapCommand(dcm.MapHostPrefix, "web.example/", "be_http:_pool:1") }); got != "web.example/ be_http:_pool:1\nweb.example/api/ "+be+"\n" {
		t.Errorf("after set map: %q", got)
	}
	if got := exec(func() (Command, error) { return DelMapCommand(dcm.MapHostPrefix, "web.example/api/") }); got != "web.example/ be_http:_pool:1\n" {
		t.Errorf("after del map: %q", got)
	}
	for _, build := range []func() (Command, error){
		func() (Command, error) { return SetMapCommand(dcm.MapHostPrefix, "web.example/api/", be) },
		func() (Command, error) { return DelMapCommand(dcm.MapHostPrefix, "web.example/api/") },
	} {
		c, err := build()
		mustf(t, err, "build")
		_, err = d.client.Exec(ctx, []Command{c})
		var ce *CommandError
		if !errors.As(err, &ce) || !strings.HasPrefix(ce.Reply, "[3]:") {
			t.Errorf("%s of a key the map lacks: %v", c, err)
		}
	}
	for _, bad := range []struct{ key, value string }{
		{"a.example/ x", "be_x"}, {"a.example/;show", "be_x"}, {"a.example/#", "be_x"}, {"", "be_x"},
		{"a.example/", "be_x y"}, {"a.example/", "other"}, {"a.example/", "be_x;"},
	} {
		if _, err := AddMapCommand(dcm.MapHostPrefix, bad.key, bad.value); err == nil {
			t.Errorf("add map %q %q accepted", bad.key, bad.value)
		}
		if _, err := SetMapCommand(dcm.MapHostPrefix, bad.key, bad.value); err == nil {
			t.Errorf("set map %q %q accepted", bad.key, bad.value)
		}
	}
	for _, bad := range []string{"a.example/ x", "a.example/;show", ""} {
		if _, err := DelMapCommand(dcm.MapHostPrefix, bad); err == nil {
			t.Errorf("del map %q accepted", bad)
		}
	}
	if _, err := DelMapCommand("../etc/passwd", "a.example/"); err == nil {
		t.Error("del map of an unknown map accepted")
	}
}

// TestPooledRoute: a route added at runtime into a spare serves without a
// reload, the runtime maps equal the map files after every step, and a
// route deleted leaves the maps before its server goes to maint. Overlapping
// prefixes added most generic first still each reach their own backend.
func TestPooledRoute(t *testing.T) {
	t.Parallel()
	web := route("ns", "web", "web.example", "/", dcm.PathPrefix)
	webSrv := serverFor(testkit.StartBackend(t, "127.0.0.2", "web"), dcm.StateReady)
	st := state(backendFor(web, webSrv))
	st.Pool = []string{"be_http:_pool:1", "be_http:_pool:2", "be_http:_pool:3"}
	d, bind := startDriver(t, st)
	ctx := context.Background()
	pid := workerPID(t, d)

	cfg, err := readConfig(d.cfg.WorkDir)
	mustf(t, err, "read cfg")
	if !strings.Contains(string(cfg), "\nbackend be_http:_pool:3\n    balance roundrobin\n") {
		t.Fatalf("cfg lacks the empty spare:\n%s", cfg)
	}

	// Three routes on one host, most generic first, each into a spare.
	var prev = st
	for i, p := range []struct{ name, path, ip string }{{"root", "/", "127.0.0.3"}, {"api", "/api", "127.0.0.4"}, {"v1", "/api/v1", "127.0.0.5"}} {
		r := route("ns", p.name, "a.example", p.path, dcm.PathPrefix)
		srv := serverFor(testkit.StartBackend(t, p.ip, p.name), dcm.StateReady)
		b := backendFor(r, srv)
		b.Slot = prev.Pool[0]
		next := stateOf(append(slices.Clone(prev.Backends), &b))
		next.Pool = prev.Pool[1:]
		ops := []dcm.Op{
			{Kind: dcm.OpAddServer, Backend: b.Name, Slot: b.Slot, Server: srv.Name, Addr: srv.Addr, Port: srv.Port, Weight: 1},
			{Kind: dcm.OpSetState, Backend: b.Name, Slot: b.Slot, Server: srv.Name, State: dcm.StateReady},
		}
		ops = append(ops, mapReplaces(prev, next)...)
		mustf(t, d.Apply(ctx, ops, next), "apply route %d", i)
		mustf(t, d.Write(next), "write")
		filesEqualRuntime(t, d)
		prev = next
	}
	for _, tt := range []struct{ path, body string }{{"/", "root"}, {"/x", "root"}, {"/api", "api"}, {"/api/x", "api"}, {"/api/v1/y", "v1"}, {"/apix", "root"}} {
		if code, body := get(t, bind, "a.example", tt.path); code != 200 || body != tt.body {
			t.Errorf("GET a.example%s = %d %q, want %q", tt.path, code, body, tt.body)
		}
	}
	if code, body := get(t, bind, "web.example", "/"); code != 200 || body != "web" {
		t.Errorf("GET web.example = %d %q", code, body)
	}

	// Delete /api: out of the maps first, then its server to maint.
	api, _ := prev.Backend(dcm.BackendName(dcm.KindHTTP, "ns", "api"))
	retiring := *api // a copy: prev shares its backends
	retiring.Retiring = true
	retiring.Servers = []dcm.Server{api.Servers[0]}
	retiring.Servers[0].State = dcm.StateMaint
	next := prev
	next.Backends = nil
	for _, b := range prev.Backends {
		if b.Name == api.Name {
			b = &retiring
		}
		next.Backends = append(next.Backends, b)
	}
	ops := append(mapReplaces(prev, next), dcm.Op{Kind: dcm.OpSetState, Backend: api.Name, Slot: api.Slot, Server: api.Servers[0].Name, State: dcm.StateMaint})
	mustf(t, d.Apply(ctx, ops, next), "delete api")
	mustf(t, d.Write(next), "write")
	filesEqualRuntime(t, d)
	if code, body := get(t, bind, "a.example", "/api/x"); code != 200 || body != "root" {
		t.Errorf("after delete: GET a.example/api/x = %d %q, want root", code, body)
	}
	if workerPID(t, d) != pid {
		t.Error("the worker changed: something reloaded")
	}
	// The files, loaded by a reload, serve the same.
	_, err = d.Reload(ctx, next)
	mustf(t, err, "reload")
	filesEqualRuntime(t, d)
	if code, body := get(t, bind, "a.example", "/api/v1/z"); code != 200 || body != "v1" {
		t.Errorf("after reload: GET a.example/api/v1/z = %d %q", code, body)
	}

	// web was rendered under its own name. Deleted and emptied, that
	// backend becomes a spare and carries a new route, without a reload.
	pid = workerPID(t, d)
	prev = next
	webB, _ := prev.Backend(web.BackendName())
	next = prev
	next.Backends = slices.DeleteFunc(slices.Clone(prev.Backends), func(b *dcm.Backend) bool { return b.Name == webB.Name })
	next.Pool = append(slices.Clone(prev.Pool), webB.Name)
	ops = append(mapReplaces(prev, next),
		dcm.Op{Kind: dcm.OpSetState, Backend: webB.Name, Server: webSrv.Name, State: dcm.StateMaint},
		dcm.Op{Kind: dcm.OpDelServer, Backend: webB.Name, Server: webSrv.Name})
	mustf(t, d.Apply(ctx, ops, next), "delete web")
	mustf(t, d.Write(next), "write")
	if cfg, _ := readConfig(d.cfg.WorkDir); !strings.Contains(string(cfg), "\nbackend be_http:ns:web\n    balance roundrobin\n") {
		t.Fatalf("cfg lacks web's backend as an empty spare:\n%s", cfg)
	}
	prev = next
	fresh := route("ns", "fresh", "fresh.example", "/", dcm.PathPrefix)
	freshSrv := serverFor(testkit.StartBackend(t, "127.0.0.6", "fresh"), dcm.StateReady)
	fb := backendFor(fresh, freshSrv)
	fb.Slot = webB.Name
	next = stateOf(append(slices.Clone(prev.Backends), &fb))
	next.Pool = slices.DeleteFunc(slices.Clone(prev.Pool), func(n string) bool { return n == webB.Name })
	ops = append([]dcm.Op{
		{Kind: dcm.OpAddServer, Backend: fb.Name, Slot: fb.Slot, Server: freshSrv.Name, Addr: freshSrv.Addr, Port: freshSrv.Port, Weight: 1},
		{Kind: dcm.OpSetState, Backend: fb.Name, Slot: fb.Slot, Server: freshSrv.Name, State: dcm.StateReady},
	}, mapReplaces(prev, next)...)
	mustf(t, d.Apply(ctx, ops, next), "add fresh into web's backend")
	mustf(t, d.Write(next), "write")
	filesEqualRuntime(t, d)
	if code, body := get(t, bind, "fresh.example", "/"); code != 200 || body != "fresh" {
		t.Errorf("GET fresh.example = %d %q", code, body)
	}
	if code, _ := get(t, bind, "web.example", "/"); code != 503 {
		t.Errorf("GET web.example after its deletion = %d, want 503", code)
	}
	if workerPID(t, d) != pid {
		t.Error("the worker changed: something reloaded")
	}
}

// mapReplaces is what the planner emits for the maps between two states:
// the entries that differ, those the map gains marked New (dcm/plan's
// mapOps, spelled again here from the whole maps).
func mapReplaces(before, after dcm.State) []dcm.Op {
	bt, at := routing.Tables(before.Backends), routing.Tables(after.Backends)
	var ops []dcm.Op
	for _, t := range dcm.MapTables {
		old := map[string]dcm.MapEntry{}
		for _, e := range bt[t] {
			old[e.Key] = e
		}
		op := dcm.Op{Kind: dcm.OpMapReplace, Map: t}
		for _, e := range at[t] {
			o, held := old[e.Key]
			delete(old, e.Key)
			if held && o == e {
				continue
			}
			e.New = !held
			op.Set = append(op.Set, e)
		}
		for _, e := range bt[t] {
			if _, gone := old[e.Key]; gone {
				op.Del = append(op.Del, e)
			}
		}
		if len(op.Set)+len(op.Del) > 0 {
			ops = append(ops, op)
		}
	}
	return ops
}

// filesEqualRuntime checks that every map HAProxy uses equals its file, the
// same lines (RuntimeMaps sorts them as the files are).
func filesEqualRuntime(t *testing.T, d *Driver) {
	t.Helper()
	runtime, err := d.RuntimeMaps(context.Background())
	mustf(t, err, "runtime maps")
	files, err := d.ReadFiles()
	mustf(t, err, "read files")
	for name, b := range runtime {
		if string(files.Maps[name]) != string(b) {
			t.Errorf("%s: file\n%s\nruntime\n%s", name, files.Maps[name], b)
		}
	}
}

func workerPID(t *testing.T, d *Driver) int {
	t.Helper()
	info, err := d.Info(context.Background())
	mustf(t, err, "show info")
	return info.Pid
}

// TestRenderPool: a backend carried by a spare is rendered under the
// spare's name and the maps point there; a retiring one keeps its servers
// but leaves the maps; free spares are empty backends; a spare cannot
// carry two backends.
func TestRenderPool(t *testing.T) {
	a := backendFor(route("ns", "a", "a.example", "/", dcm.PathPrefix),
		dcm.Server{Name: "s1", Endpoint: "s1", Addr: "127.0.0.9", Port: 80, Weight: 1, State: dcm.StateReady})
	a.Slot = "be_http:_pool:1"
	gone := backendFor(route("ns", "gone", "gone.example", "/", dcm.PathPrefix),
		dcm.Server{Name: "s2", Endpoint: "s2", Addr: "127.0.0.9", Port: 81, Weight: 1, State: dcm.StateMaint})
	gone.Slot, gone.Retiring = "be_http:_pool:2", true
	st := state(a, gone)
	st.Pool = []string{"be_http:_pool:3"}
	f, err := Render(testSettings, st)
	mustf(t, err, "render")
	cfg := string(f.Text())
	for _, want := range []string{
		"\nbackend be_http:_pool:1\n    balance roundrobin\n    server s1 127.0.0.9:80 weight 1\n",
		"\nbackend be_http:_pool:2\n    balance roundrobin\n    server s2 127.0.0.9:81 weight 1 disabled\n",
		"\nbackend be_http:_pool:3\n    balance roundrobin\n",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("cfg lacks %q:\n%s", want, cfg)
		}
	}
	if strings.Contains(cfg, "backend be_http:ns:") {
		t.Errorf("a backend is rendered under its route's name:\n%s", cfg)
	}
	if got := string(f.Maps[MapHostPrefix]); got != "a.example/ be_http:_pool:1\n" {
		t.Errorf("host_prefix map = %q", got)
	}
	twice := state(a, func() dcm.Backend { b := gone; b.Slot = a.Slot; return b }())
	if _, err := Render(testSettings, twice); err == nil {
		t.Error("one spare carrying two backends rendered")
	}
	// A deleted route's own backend that joined the pool is a spare like
	// the numbered ones; a name that is neither is refused.
	recycled := state(a)
	recycled.Pool = []string{"be_http:ns:x"}
	f, err = Render(testSettings, recycled)
	mustf(t, err, "render a recycled spare")
	_, last, _ := strings.Cut(string(f.Text()), "\nbackend be_http:ns:x\n")
	if i := strings.Index(last, "\n# Written by dcm"); i >= 0 { // its shard's end
		last = last[:i+1]
	}
	if last != "    balance roundrobin\n"+routeTimeoutLines {
		t.Errorf("the recycled spare is not rendered empty, last:\n%s", f.Text())
	}
	for _, name := range []string{"other", "be_http", "be_http:", "be_http:ns x", "be_:ns:x"} {
		bad := state(a)
		bad.Pool = []string{name}
		if _, err := Render(testSettings, bad); err == nil {
			t.Errorf("a free spare named %q rendered", name)
		}
	}
}
