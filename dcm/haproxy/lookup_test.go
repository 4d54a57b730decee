package haproxy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/plan"
	"github.com/dcm-router/dcm/internal/testkit"
)

// TestLookupAtRuntime: routes come and go at runtime as the planner plans
// them (spares, one command per changed map entry), in an order that puts
// shorter prefixes after longer ones, and every request reaches the route
// the lookup's precedence names: an exact host before a wildcard domain
// before any host, an exact path before a prefix, the longest prefix of
// whole path elements first whatever the order the entries came in, at
// any depth; the query string and the Host's port and case play no part;
// no match is 503. The runtime maps equal the files after every step, and
// nothing reloads.
func TestLookupAtRuntime(t *testing.T) {
	t.Parallel()
	deep := func(prefix string, n int) string {
		var b strings.Builder
		b.WriteString(prefix)
		for i := range n {
			fmt.Fprintf(&b, "/%d", i)
		}
		return b.String()
	}
	type r struct {
		name, host, path string
		pt               dcm.PathType
	}
	routes := []r{
		{"root", "a.example", "/", dcm.PathPrefix},
		{"v1", "a.example", "/api/v1", dcm.PathPrefix},
		{"api", "a.example", "/api/", dcm.PathPrefix}, // after /api/v1, and with a trailing slash
		{"status", "a.example", "/api/v1/status", dcm.PathExact},
		{"login", "a.example", "/login", dcm.PathExact},
		{"deep-exact", "a.example", deep("/d", 40), dcm.PathExact},
		{"deep-prefix", "a.example", deep("/p", 30), dcm.PathPrefix},
		{"wild", "*.w.example", "/", dcm.PathPrefix},
		{"www", "www.w.example", "/", dcm.PathPrefix},
		{"any-static", "", "/static", dcm.PathPrefix},
		{"any", "", "/", dcm.PathPrefix},
	}
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: len(routes)}
	desired := map[string]*dcm.DesiredBackend{}
	build := func() dcm.Desired {
		var d dcm.Desired
		for _, b := range desired {
			d.Backends = append(d.Backends, b)
		}
		dcm.SortDesired(d.Backends)
		return d
	}
	add := func(i int, rt r) {
		pod := testkit.StartBackend(t, fmt.Sprintf("127.0.0.%d", 20+i), rt.name)
		route := route("ns", rt.name, rt.host, dcm.NormalizePath(rt.path, rt.pt), rt.pt)
		desired[rt.name] = &dcm.DesiredBackend{Name: route.BackendName(), Route: route,
			Endpoints: []dcm.Endpoint{{Name: rt.name + ":http", Addr: pod.Addr, Port: pod.Port, Weight: 1, State: dcm.StateReady, Pod: rt.name}}}
	}
	add(0, routes[0])
	st := plan.Fresh(build(), caps)
	d, bind := startDriver(t, st)
	pid := workerPID(t, d)
	sync := func(step string) {
		t.Helper()
		p := plan.Compute(st, build(), caps)
		if p.Reload {
			t.Fatalf("%s: reload %v", step, p.Reasons)
		}
		mustf(t, d.Apply(context.Background(), p.Ops, p.Next), "%s: apply", step)
		mustf(t, d.Write(p.Next), "%s: write", step)
		filesEqualRuntime(t, d)
		st = p.Next
	}
	check := func(step string, host, path string, want string) {
		t.Helper()
		code, body := get(t, bind, host, path)
		if want == "" && code != 503 || want != "" && (code != 200 || body != want) {
			t.Errorf("%s: GET %s%s = %d %q, want %q", step, host, path, code, body, want)
		}
	}

	check("root only", "a.example", "/api/v1/x", "root")
	check("root only", "b.example", "/", "") // no route: 503
	for i, rt := range routes[1:] {
		add(i+1, rt)
		sync("add " + rt.name)
	}
	all := []struct{ host, path, want string }{
		{"a.example", "/", "root"},
		{"a.example", "/api/v1/x", "v1"},
		{"a.example", "/api/v1", "v1"},
		{"a.example", "/api/v1/", "v1"},
		{"a.example", "/api/v10", "api"},
		{"a.example", "/api/x", "api"},
		{"a.example", "/api", "api"},
		{"a.example", "/api/", "api"},
		{"a.example", "/apix", "root"},
		{"a.example", "/api//v1/x", "api"}, // an empty element is an element
		{"a.example", "/api/v1/status", "status"},
		{"a.example", "/api/v1/status/x", "v1"},
		{"a.example", "/api/v1/status?full=1", "status"},
		{"a.example", "/login", "login"},
		{"a.example", "/login/", "root"},
		{"a.example", "/login?next=/api/v1", "login"},
		{"a.example", "/%61pi/x", "root"}, // percent-encoding is not decoded
		{"A.Example:8080", "/api/v1/x", "v1"},
		{"a.example", deep("/d", 40), "deep-exact"},
		{"a.example", deep("/d", 40) + "/x", "root"},
		{"a.example", deep("/p", 30), "deep-prefix"},
		{"a.example", deep("/p", 30) + "/x/y/z", "deep-prefix"},
		{"a.example", deep("/p", 29) + "/x", "root"},
		{"x.w.example", "/", "wild"},
		{"X.W.Example:80", "/anything", "wild"},
		{"www.w.example", "/", "www"},
		{"a.b.w.example", "/", "any"},
		{"b.example", "/static/app.js", "any-static"},
		{"b.example", "/staticx", "any"},
		{"a.example", "/static/app.js", "root"}, // the host's routes before any host's
	}
	for _, c := range all {
		check("all added", c.host, c.path, c.want)
	}

	// /api goes and comes back, after /api/v1 again: each keeps its own.
	delete(desired, "api")
	sync("delete api")
	check("api deleted", "a.example", "/api/x", "root")
	check("api deleted", "a.example", "/api/v1/x", "v1")
	add(2, routes[2])
	sync("add api again")
	// HAProxy holds /api/ after /api/v1/, in the order they came: the
	// lookup does not depend on it.
	show, err := ShowMapCommand(dcm.MapHostPrefix)
	mustf(t, err, "show map")
	replies, err := d.client.Exec(context.Background(), []Command{show})
	mustf(t, err, "exec show map")
	raw, err := ParseShowMap(replies[0].Text)
	mustf(t, err, "parse show map")
	if v1, api := strings.Index(raw, "a.example/api/v1/ "), strings.Index(raw, "a.example/api/ "); v1 < 0 || api < v1 {
		t.Errorf("host_prefix as HAProxy holds it:\n%s", raw)
	}
	check("api again", "a.example", "/api/x", "api")
	check("api again", "a.example", "/api/v1/x", "v1")
	// Re-keyed in place: /api/v1 becomes /api/v2.
	desired["v1"].Route.Path = "/api/v2"
	sync("re-key v1")
	check("re-keyed", "a.example", "/api/v1/x", "api")
	check("re-keyed", "a.example", "/api/v2/x", "v1")
	// Every host-less route gone: what no route matches is 503.
	delete(desired, "any")
	delete(desired, "any-static")
	sync("delete any")
	check("any deleted", "b.example", "/", "")
	check("any deleted", "a.b.w.example", "/", "")
	check("any deleted", "a.example", "/anything", "root")
	if workerPID(t, d) != pid {
		t.Error("the worker changed: something reloaded")
	}
}
