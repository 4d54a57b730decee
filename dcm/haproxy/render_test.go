package haproxy

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

var testSettings = Settings{AdminSocket: "/run/dcm/admin.sock", HTTPBind: "127.0.0.1:8000", HardStopAfter: 30 * time.Second}

func TestRenderMaps(t *testing.T) {
	srv := dcm.Server{Name: "s1", Endpoint: "s1", Addr: "10.0.0.1", Port: 80, Weight: 1, State: dcm.StateReady}
	st := state(
		backendFor(route("ns", "root", "a.example", "/", dcm.PathPrefix), srv),
		backendFor(route("ns", "api", "a.example", "/api", dcm.PathPrefix), srv),
		backendFor(route("ns", "apiv1", "a.example", "/api/v1/", dcm.PathPrefix), srv),
		backendFor(route("ns", "login", "a.example", "/login", dcm.PathExact), srv),
		backendFor(route("ns", "any", "", "/", dcm.PathPrefix), srv),
		backendFor(route("ns", "anyx", "", "/x", dcm.PathPrefix), srv),
		backendFor(route("ns", "anyexact", "", "/health", dcm.PathExact), srv),
		// Same exact key a.example/api as the Prefix route "api": the Exact
		// route sorts first (Route.Less) and wins it.
		backendFor(route("ns", "api-exact", "a.example", "/api", dcm.PathExact), srv),
		// Same keys as "root" under another name: "root" sorts first by key.
		backendFor(route("other", "root2", "a.example", "/", dcm.PathPrefix), srv),
	)
	f, err := Render(testSettings, st)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		MapHostExact: "a.example/api be_http:ns:api-exact\n" +
			"a.example/api/v1 be_http:ns:apiv1\n" +
			"a.example/login be_http:ns:login\n",
		// Sorted by key: map_beg finds the longest key whatever the order.
		MapHostPrefix: "a.example/ be_http:ns:root\n" +
			"a.example/api/ be_http:ns:api\n" +
			"a.example/api/v1/ be_http:ns:apiv1\n",
		MapAnyExact:                  "/health be_http:ns:anyexact\n/x be_http:ns:anyx\n",
		MapAnyPrefix:                 "/ be_http:ns:any\n/x/ be_http:ns:anyx\n",
		MapFile(dcm.MapSNI):          "",
		MapFile(dcm.MapSNIWild):      "",
		MapFile(dcm.MapWildExact):    "",
		MapFile(dcm.MapWildPrefix):   "",
		MapFile(dcm.MapInsecure):     "",
		MapFile(dcm.MapInsecureHost): "",
		MapFile(dcm.MapRateLimit):    "",
		MapFile(dcm.MapHeaders):      "",
		MapFile(dcm.MapAllowlist):    "",
		MapFile(dcm.MapGateway):      "",
		MapFile(dcm.MapGatewayRule):  "",
	}
	for _, t := range dcm.SettingMapTables {
		want[MapFile(t)] = ""
	}
	if got := slices.Sorted(maps.Keys(f.Maps)); !slices.Equal(got, slices.Sorted(maps.Keys(want))) {
		t.Fatalf("map files %v", got)
	}
	for name, w := range want {
		if got := string(f.Maps[name]); got != w {
			t.Errorf("%s:\n%s\nwant:\n%s", name, got, w)
		}
	}
	cfg := string(f.Text())
	for _, line := range []string{
		"    default-path config\n",
		"    stats socket /run/dcm/admin.sock mode 600 level admin expose-fd listeners\n",
		"    hard-stop-after 30000ms\n",
		"    bind 127.0.0.1:8000\n",
		"    http-request set-var(txn.be) var(txn.key),map_str(maps/host_exact.map)\n",
		"    http-request set-var(txn.be) var(txn.path),map_beg(maps/any_prefix.map) if !{ var(txn.be) -m found }\n",
		"    use_backend %[var(txn.be)] if { var(txn.be) -m found }\n",
		"\nbackend be_http:ns:api\n    balance roundrobin\n    server s1 10.0.0.1:80 weight 1\n",
	} {
		if !strings.Contains(cfg, line) {
			t.Errorf("cfg lacks %q", line)
		}
	}
}

func TestServerArgs(t *testing.T) {
	tests := []struct {
		srv     dcm.Server
		want    string
		wantErr bool
	}{
		{dcm.Server{Name: "a", Endpoint: "a", Addr: "10.1.2.3", Port: 8080, Weight: 3, State: dcm.StateReady}, "10.1.2.3:8080 weight 3", false},
		{dcm.Server{Name: "a", Endpoint: "a", Addr: "10.1.2.3", Port: 8080, Weight: 0, State: dcm.StateReady, Check: true}, "10.1.2.3:8080 weight 0 check inter 5s", false},
		{dcm.Server{Name: "a", Endpoint: "a", Addr: "10.1.2.3", Port: 8080, Weight: 1, State: dcm.StateDrain}, "10.1.2.3:8080 weight 1 disabled", false},
		{dcm.Server{Name: "a", Endpoint: "a", Addr: "10.1.2.3", Port: 8080, Weight: 1, State: dcm.StateMaint, Check: true}, "10.1.2.3:8080 weight 1 check inter 5s disabled", false},
		{dcm.Server{Name: "a", Endpoint: "a", Addr: "fd00::1", Port: 443, Weight: 256, State: dcm.StateReady}, "[fd00::1]:443 weight 256", false},
		{dcm.Server{Name: "slot3", Weight: 1, State: dcm.StateReady}, "0.0.0.0:1 weight 1 disabled", false},
		{dcm.Server{Name: "a", Endpoint: "a", Addr: "10.1.2.3", Port: 0, Weight: 1, State: dcm.StateReady}, "", true},
		{dcm.Server{Name: "a", Endpoint: "a", Addr: "", Port: 80, Weight: 1, State: dcm.StateReady}, "", true},
		{dcm.Server{Name: "a", Endpoint: "a", Addr: "10.1.2.3", Port: 80, Weight: 257, State: dcm.StateReady}, "", true},
		{dcm.Server{Name: "a", Endpoint: "a", Addr: "10.1.2.3", Port: 80, Weight: 1, State: "up"}, "", true},
		{dcm.Server{Name: "a", Endpoint: "a", Addr: "fe80::1%eth0", Port: 80, Weight: 1, State: dcm.StateReady}, "", true},
	}
	for _, tt := range tests {
		got, err := ServerArgs(tt.srv, HTTP2{})
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ServerArgs(%+v) = %q, %v; want %q, err %v", tt.srv, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestRenderDeterministic(t *testing.T) {
	a := dcm.Server{Name: "a", Endpoint: "a", Addr: "10.0.0.1", Port: 80, Weight: 1, State: dcm.StateReady}
	b := dcm.Server{Name: "b", Endpoint: "b", Addr: "10.0.0.2", Port: 80, Weight: 2, State: dcm.StateDrain}
	r1 := route("ns", "one", "one.example", "/", dcm.PathPrefix)
	r2 := route("ns", "two", "", "/two", dcm.PathPrefix)
	st1 := dcm.State{Backends: []*dcm.Backend{
		{Name: r1.BackendName(), Route: r1, Servers: []dcm.Server{a, b}},
		{Name: r2.BackendName(), Route: r2, Servers: []dcm.Server{b}},
	}}
	st2 := dcm.State{Backends: []*dcm.Backend{
		{Name: r2.BackendName(), Route: r2, Servers: []dcm.Server{b}},
		{Name: r1.BackendName(), Route: r1, Servers: []dcm.Server{b, a}},
	}}
	f1, err := Render(testSettings, st1)
	mustf(t, err, "render 1")
	f2, err := Render(testSettings, st2)
	mustf(t, err, "render 2")
	if !bytes.Equal(f1.Text(), f2.Text()) {
		t.Errorf("configs differ:\n%s\n---\n%s", f1.Text(), f2.Text())
	}
	for k := range f1.Maps {
		if !bytes.Equal(f1.Maps[k], f2.Maps[k]) {
			t.Errorf("map %s differs", k)
		}
	}
}

// TestRenderRefusesHostile puts unsafe strings in every field Render writes.
func TestRenderRefusesHostile(t *testing.T) {
	hostile := []string{"a;b", "a\nb", "a b", "a#b", "é", "a\tb", "a\"b", "a'b", "a\x00b", "a\rb", "{a}", "a%[b]"}
	okRoute := route("ns", "r", "a.example", "/", dcm.PathPrefix)
	okServer := dcm.Server{Name: "s", Endpoint: "s", Addr: "10.0.0.1", Port: 80, Weight: 1, State: dcm.StateReady}
	type mutate func(b *dcm.Backend, s *Settings, h string)
	fields := map[string]mutate{
		"namespace":   func(b *dcm.Backend, _ *Settings, h string) { b.Route.Namespace = h },
		"route name":  func(b *dcm.Backend, _ *Settings, h string) { b.Route.Name = h },
		"host":        func(b *dcm.Backend, _ *Settings, h string) { b.Route.Host = "a" + h + ".example" },
		"path":        func(b *dcm.Backend, _ *Settings, h string) { b.Route.Path = "/" + h },
		"balance":     func(b *dcm.Backend, _ *Settings, h string) { b.Route.Balance = h },
		"backend":     func(b *dcm.Backend, _ *Settings, h string) { b.Name = "be_http:ns:" + h },
		"server name": func(b *dcm.Backend, _ *Settings, h string) { b.Servers[0].Name = h },
		"addr":        func(b *dcm.Backend, _ *Settings, h string) { b.Servers[0].Addr = "10.0.0.1" + h },
		"socket":      func(_ *dcm.Backend, s *Settings, h string) { s.AdminSocket = "/run/" + h },
		"bind":        func(_ *dcm.Backend, s *Settings, h string) { s.HTTPBind = "127.0.0.1:80" + h },
	}
	for field, m := range fields {
		for _, h := range hostile {
			b := dcm.Backend{Name: okRoute.BackendName(), Route: okRoute, Servers: []dcm.Server{okServer}}
			s := testSettings
			m(&b, &s, h)
			_, err := Render(s, dcm.State{Backends: dcm.BackendList(b)})
			if err == nil {
				t.Errorf("%s %q: rendered", field, h)
				continue
			}
			if field != "socket" && field != "bind" && !strings.Contains(err.Error(), "backend") && !strings.Contains(err.Error(), "server") {
				t.Errorf("%s %q: error %q names neither backend nor server", field, h, err)
			}
		}
	}
	for _, tt := range []struct {
		name string
		b    dcm.Backend
	}{
		{"port", dcm.Backend{Name: okRoute.BackendName(), Route: okRoute, Servers: []dcm.Server{{Name: "s", Endpoint: "s", Addr: "10.0.0.1", Port: 70000, Weight: 1, State: dcm.StateReady}}}},
		{"weight", dcm.Backend{Name: okRoute.BackendName(), Route: okRoute, Servers: []dcm.Server{{Name: "s", Endpoint: "s", Addr: "10.0.0.1", Port: 80, Weight: -1, State: dcm.StateReady}}}},
		{"kind", dcm.Backend{Name: okRoute.BackendName(), Route: dcm.Route{Namespace: "ns", Name: "r", Kind: dcm.KindEdge, Path: "/", PathType: dcm.PathPrefix}}},
		{"default backend", dcm.Backend{Name: DefaultBackend}},
		{"duplicate server", dcm.Backend{Name: okRoute.BackendName(), Route: okRoute, Servers: []dcm.Server{okServer, okServer}}},
	} {
		if _, err := Render(testSettings, dcm.State{Backends: dcm.BackendList(tt.b)}); err == nil {
			t.Errorf("%s: rendered", tt.name)
		}
	}
}

// lineShapes are the only lines a rendered cfg may contain besides the fixed
// ones of an empty state.
var lineShapes = []*regexp.Regexp{
	regexp.MustCompile(`^backend be_[A-Za-z0-9._:-]+$`),
	regexp.MustCompile(`^    balance (roundrobin|leastconn|random|first)$`),
	regexp.MustCompile(`^    http-request set-timeout (server|tunnel) var\(txn\.timeout_(server|tunnel)\)$`),
	regexp.MustCompile(`^    server [A-Za-z0-9._:-]+ (\d{1,3}(\.\d{1,3}){3}|\[[0-9a-f:.]+\]):\d{1,5} weight \d{1,3}( check inter (\d+ms|5s))?( maxconn \d{1,7})?( disabled)?$`),
	regexp.MustCompile(`^    tcp-request content reject if \{ be_name,map_str\(maps/allowlist\.map\) -m found \} !\{ lua\.dcm_allowed -m bool \}$`),
	regexp.MustCompile(`^    stick-table type ip size 100k expire 30s store conn_cur,conn_rate\(3s\),http_req_rate\(10s\)$`),
	regexp.MustCompile(`^    tcp-request content (set-var\(txn\.rl\) be_name,map_str\(maps/rate_limit\.map\)|track-sc2 src if \{ var\(txn\.rl\) -m found \})$`),
	regexp.MustCompile(`^    tcp-request content set-var\(txn\.rl_(cur|tcp|http)\) var\(txn\.rl\),field\([123],:\)$`),
	regexp.MustCompile(`^    tcp-request content reject if \{ sc2_(conn_cur|conn_rate|http_req_rate),sub\(txn\.rl_(cur|tcp|http)\) -m int ge 0 \}$`),
}

var mapLineShape = regexp.MustCompile(`^[a-z0-9.-]*/[A-Za-z0-9/\-._~%!$&()*+,=:@]* be_[A-Za-z0-9._:-]+$`)

func checkShapes(t *testing.T, f Files) {
	t.Helper()
	empty, err := Render(testSettings, dcm.State{})
	if err != nil {
		t.Fatal(err)
	}
	fixed := map[string]bool{}
	for _, l := range strings.Split(string(empty.Text())+backendFileHeader, "\n") {
		fixed[l] = true
	}
	for _, l := range strings.Split(string(f.Text()), "\n") {
		if fixed[l] {
			continue
		}
		if !slices.ContainsFunc(lineShapes, func(re *regexp.Regexp) bool { return re.MatchString(l) }) {
			t.Fatalf("unexpected cfg line %q", l)
		}
	}
	for name, m := range f.Maps {
		for _, l := range strings.Split(strings.TrimSuffix(string(m), "\n"), "\n") {
			if l != "" && !mapLineShape.MatchString(l) {
				t.Fatalf("unexpected line %q in %s", l, name)
			}
		}
	}
}

func FuzzRender(f *testing.F) {
	f.Add("ns", "name", "a.example", "/api", "srv-1", "10.0.0.1", 80, 1, "roundrobin", true)
	f.Add("ns", "name", "", "/", "slot1", "", 0, 1, "", false)
	f.Add("a;b", "x\ny", "é.example", "/a b", "s#1", "::1", 65535, 256, "static-rr", true)
	f.Add("ns", "n", "a.example", "/%[req.hdr(x)]", "s", "fe80::1%lo", 1, 0, "first", false)
	f.Fuzz(func(t *testing.T, ns, name, host, path, srvName, addr string, port, weight int, balance string, exact bool) {
		pt := dcm.PathPrefix
		if exact {
			pt = dcm.PathExact
		}
		r := dcm.Route{Namespace: ns, Name: name, Kind: dcm.KindHTTP, Host: host, Path: path, PathType: pt, Balance: balance}
		srv := dcm.Server{Name: srvName, Addr: addr, Port: port, Weight: weight, State: dcm.StateReady}
		if addr != "" {
			srv.Endpoint = srvName
		}
		st := dcm.State{Backends: []*dcm.Backend{{Name: r.BackendName(), Route: r, Servers: []dcm.Server{srv}}}}
		files, err := Render(testSettings, st)
		if err != nil {
			return
		}
		checkShapes(t, files)
	})
}

func TestValidate(t *testing.T) {
	bin := testkit.HAProxy(t)
	dir := testkit.ShortDir(t)
	r := route("ns", "v", "v.example", "/", dcm.PathPrefix)
	good, err := Render(Settings{AdminSocket: filepath.Join(dir, "admin.sock"), HTTPBind: "127.0.0.1:1"},
		state(backendFor(r, dcm.Server{Name: "s", Endpoint: "s", Addr: "::1", Port: 80, Weight: 1, State: dcm.StateReady, Check: true}, dcm.Server{Name: "slot1", Weight: 1})))
	mustf(t, err, "render")
	if err := Validate(context.Background(), bin, dir, good); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, StagingDir, MapHostPrefix)); err != nil {
		t.Errorf("staging maps: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ConfigName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Validate wrote outside staging: %v", err)
	}
	bad := good
	bad.Config = append(slices.Clone(good.Config), "    server x 10.0.0.1:80 frobnicate\n"...)
	err = Validate(context.Background(), bin, dir, bad)
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("bad config: got %v, want *ConfigError", err)
	}
	if len(ce.Alerts) != 1 || !strings.Contains(ce.Alerts[0], "unknown keyword 'frobnicate'") {
		t.Errorf("alerts %q", ce.Alerts)
	}
	// A missing map file is an error too: maps resolve against the staging dir.
	noMap := Files{Config: good.Config, Maps: map[string][]byte{MapHostExact: nil}}
	if err := Validate(context.Background(), bin, dir, noMap); err == nil {
		t.Errorf("config with missing maps validated")
	}
}

func TestWriteFiles(t *testing.T) {
	dir := t.TempDir()
	f := Files{Config: []byte("cfg1\n"), Maps: map[string][]byte{"maps/a.map": []byte("a\n"), "maps/b.map": []byte("b\n")}}
	mustf(t, WriteFiles(dir, f, Files{}), "write 1")
	f2 := Files{Config: []byte("cfg2\n"), Maps: map[string][]byte{"maps/a.map": []byte("a2\n")}}
	mustf(t, WriteFiles(dir, f2, f), "write 2")
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(b)
	}
	if read(ConfigName) != "cfg2\n" || read("maps/a.map") != "a2\n" {
		t.Errorf("contents: %q %q", read(ConfigName), read("maps/a.map"))
	}
	if _, err := os.Stat(filepath.Join(dir, "maps/b.map")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale map kept: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, MapsDir))
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temp file left: %s", e.Name())
		}
	}
	// Unchanged files are not rewritten: the rename would give a new inode.
	before, _ := os.Stat(filepath.Join(dir, "maps/a.map"))
	f3 := Files{Config: []byte("cfg3\n"), Maps: f2.Maps}
	mustf(t, WriteFiles(dir, f3, f2), "write 3")
	after, _ := os.Stat(filepath.Join(dir, "maps/a.map"))
	if !os.SameFile(before, after) {
		t.Error("an unchanged map was rewritten")
	}
	if read(ConfigName) != "cfg3\n" {
		t.Errorf("changed cfg not written: %q", read(ConfigName))
	}
	for _, name := range []string{"../x.map", "maps/../../x.map", "/etc/x.map", "maps/x.cfg", "maps/sub/x.map", "maps/a b.map"} {
		if err := WriteFiles(dir, Files{Config: []byte("x"), Maps: map[string][]byte{name: nil}}, Files{}); err == nil {
			t.Errorf("map name %q accepted", name)
		}
	}
}

// TestRenderHTTPS: with an HTTPS bind, a TCP frontend owns the address and
// hands what no passthrough route takes to a frontend that terminates TLS with
// the default certificate and the crt-list, and routes with the same maps;
// the crt-list has one line per host of an edge route with a valid
// certificate (first route on a host wins); edge routes without a host or
// with a hostile Secret never render; passthrough routes with a path, without
// a host or with a certificate never render, reencrypt stays unsupported.
func TestRenderHTTPS(t *testing.T) {
	srv := dcm.Server{Name: "s1", Endpoint: "s1", Addr: "10.0.0.1", Port: 80, Weight: 1, State: dcm.StateReady}
	s := testSettings
	s.HTTPSBind = "127.0.0.1:8443"
	a, aAPI, noCert := edgeRoute("ns", "a", "a.example", "aa"), edgeRoute("ns", "a-api", "a.example", "bb"), edgeRoute("ns", "c", "c.example", "")
	aAPI.Path = "/api"
	st := state(backendFor(a, srv), backendFor(aAPI, srv), backendFor(noCert, srv),
		backendFor(route("ns", "plain", "p.example", "/", dcm.PathPrefix), srv))
	f, err := Render(s, st)
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(f.Text())
	for _, want := range []string{
		"\nfrontend fe_tls\n    mode tcp\n    bind 127.0.0.1:8443\n",
		"\nbackend tls_terminate\n    mode tcp\n    server fe_https unix@" + filepath.Dir(s.AdminSocket) + "/https.sock send-proxy-v2\n",
		"\nfrontend fe_https\n    bind unix@" + filepath.Dir(s.AdminSocket) + "/https.sock accept-proxy ssl crt default.pem crt-list certs.list alpn http/1.1\n",
		"http-request set-var(txn.be) var(txn.key),map_beg(maps/host_prefix.map) if !{ var(txn.be) -m found }",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("cfg lacks %q:\n%s", want, cfg)
		}
	}
	if n := strings.Count(cfg, "map_beg(maps/host_prefix.map)"); n != 2 {
		t.Errorf("host_prefix used %d times, want 2 (once in fe_http, once in fe_https)", n)
	}
	// a-api sorts first (longer path): its certificate wins the host.
	if got, want := string(f.CrtList), "certs/a.example.pem [alpn h2,http/1.1] a.example\n"; got != want {
		t.Errorf("crt-list %q, want %q", got, want)
	}
	if f.Certs != nil {
		t.Errorf("the renderer wrote certificates: %v", slices.Collect(maps.Keys(f.Certs)))
	}
	if g, _ := Render(testSettings, st); g.CrtList != nil || strings.Contains(string(g.Text()), "fe_https") {
		t.Errorf("without an HTTPS bind: crt-list %q, fe_https rendered", g.CrtList)
	}
	for name, r := range map[string]dcm.Route{
		"no host": edgeRoute("ns", "x", "", "aa"),
		"bad secret": func() dcm.Route {
			r := edgeRoute("ns", "x", "x.example", "aa")
			r.TLS.Secret = "ns/x;show info"
			return r
		}(),
		"bad version": edgeRoute("ns", "x", "x.example", "AA\n"),
		"no tls":      func() dcm.Route { r := edgeRoute("ns", "x", "x.example", "aa"); r.TLS = nil; return r }(),
		"passthrough with a path": func() dcm.Route {
			r := route("ns", "x", "x.example", "/api", dcm.PathPrefix)
			r.Kind = dcm.KindPassthrough
			return r
		}(),
		"passthrough without host": func() dcm.Route {
			r := route("ns", "x", "", "/", dcm.PathPrefix)
			r.Kind = dcm.KindPassthrough
			return r
		}(),
		"passthrough with a certificate": func() dcm.Route {
			r := edgeRoute("ns", "x", "x.example", "aa")
			r.Kind = dcm.KindPassthrough
			return r
		}(),
		"reencrypt": func() dcm.Route {
			r := route("ns", "x", "x.example", "/", dcm.PathPrefix)
			r.Kind = dcm.KindReencrypt
			return r
		}(),
	} {
		if _, err := Render(s, state(backendFor(r, srv))); err == nil {
			t.Errorf("%s: rendered", name)
		}
	}
}

// TestRenderPassthrough: a passthrough route is a TCP backend found by its
// host in the SNI map, never in the HTTP maps; its spares are TCP backends
// too, HTTP spares stay HTTP.
func TestRenderPassthrough(t *testing.T) {
	srv := dcm.Server{Name: "s1", Endpoint: "s1", Addr: "10.0.0.1", Port: 443, Weight: 1, State: dcm.StateReady}
	s := testSettings
	s.HTTPSBind = "127.0.0.1:8443"
	pt := route("ns", "db", "DB.example", "/", dcm.PathPrefix)
	pt.Host, pt.Kind, pt.Balance = "db.example", dcm.KindPassthrough, dcm.BalanceSource
	b := backendFor(pt, srv)
	b.Slot = "be_passthrough:_pool:1"
	st := state(b, backendFor(route("ns", "web", "web.example", "/", dcm.PathPrefix), srv))
	st.Pool = []string{"be_http:_pool:1", "be_passthrough:_pool:2"}
	f, err := Render(s, st)
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(f.Text())
	for _, want := range []string{
		// TCP spares balance by source, the passthrough default, with
		// the hash add server needs.
		"\nbackend be_passthrough:_pool:1\n    mode tcp\n    balance source\n    hash-type consistent\n    server s1 10.0.0.1:443 weight 1\n",
		"\nbackend be_passthrough:_pool:2\n    mode tcp\n    balance source\n    hash-type consistent\n",
		"\nbackend be_http:_pool:1\n    balance roundrobin\n",
		"use_backend %[req_ssl_sni,lower,map_str(maps/sni.map)] if { req_ssl_sni,lower,map_str(maps/sni.map) -m found }\n",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("cfg lacks %q:\n%s", want, cfg)
		}
	}
	if got, want := string(f.Maps[MapFile(dcm.MapSNI)]), "db.example be_passthrough:_pool:1\n"; got != want {
		t.Errorf("sni map %q, want %q", got, want)
	}
	for _, m := range dcm.HTTPMapTables {
		if strings.Contains(string(f.Maps[MapFile(m)]), "db.example") {
			t.Errorf("passthrough host in HTTP map %s: %q", m, f.Maps[MapFile(m)])
		}
	}
	if strings.Contains(string(f.CrtList), "db.example") {
		t.Errorf("passthrough host in the crt-list: %q", f.CrtList)
	}
}

// TestRenderInsecure: the insecure maps hold one entry per TLS route whose
// plain HTTP is not simply served — keyed by the HAProxy backend (its
// spare's name when it has one) for edge routes, by host for passthrough
// Redirect — and fe_http finds the route by the HTTP maps in fe_https's
// order before it asks them; without an HTTPS frontend fe_http ignores them.
func TestRenderInsecure(t *testing.T) {
	srv := dcm.Server{Name: "s1", Endpoint: "s1", Addr: "10.0.0.1", Port: 80, Weight: 1, State: dcm.StateReady}
	s := testSettings
	s.HTTPSBind = "127.0.0.1:8443"
	with := func(r dcm.Route, p dcm.InsecurePolicy, code int) dcm.Route {
		r.Insecure, r.RedirectCode = p, code
		return r
	}
	api := with(edgeRoute("ns", "api", "a.example", "aa"), dcm.InsecureRedirect, 0)
	api.Path = "/api"
	root := with(edgeRoute("ns", "root", "a.example", "aa"), dcm.InsecureAllow, 0)
	closed := with(edgeRoute("ns", "closed", "c.example", "aa"), dcm.InsecureNone, 0)
	moved := with(edgeRoute("ns", "moved", "m.example", "aa"), dcm.InsecureRedirect, 301)
	old := edgeRoute("ns", "old", "o.example", "aa") // no policy: Allow
	pt := with(route("ns", "pt", "p.example", "/", dcm.PathPrefix), dcm.InsecureRedirect, 0)
	pt.Kind = dcm.KindPassthrough
	ptNone := with(route("ns", "pt-none", "q.example", "/", dcm.PathPrefix), dcm.InsecureNone, 0)
	ptNone.Kind = dcm.KindPassthrough
	movedBackend := backendFor(moved, srv)
	movedBackend.Slot = "be_http:_pool:2"
	st := state(backendFor(api, srv), backendFor(root, srv), backendFor(closed, srv), movedBackend, backendFor(old, srv),
		backendFor(pt), backendFor(ptNone), backendFor(route("ns", "plain", "h.example", "/", dcm.PathPrefix), srv))
	f, err := Render(s, st)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		MapFile(dcm.MapInsecure): "be_edge:ns:api redirect-302\n" +
			"be_edge:ns:closed none\n" +
			"be_http:_pool:2 redirect-301\n",
		MapFile(dcm.MapInsecureHost): "p.example redirect-302\n",
	} {
		if got := string(f.Maps[name]); got != want {
			t.Errorf("%s:\n%s\nwant:\n%s", name, got, want)
		}
	}
	cfg := string(f.Text())
	http, https, _ := strings.Cut(cfg, "\nfrontend fe_tls\n")
	for _, want := range []string{
		"    http-request set-var(txn.host) req.hdr(host),field(1,:),lower\n" +
			"    http-request set-var(txn.key) var(txn.host),concat(,txn.path)\n" +
			"    http-request set-var(txn.wkey) var(txn.host),regsub(^[^.]*,),concat(,txn.path)\n" +
			"    http-request set-var(txn.be) var(txn.key),map_str(maps/host_exact.map)\n" +
			"    http-request set-var(txn.be) var(txn.key),map_beg(maps/host_prefix.map) if !{ var(txn.be) -m found }\n" +
			"    http-request set-var(txn.be) var(txn.wkey),map_str(maps/wild_exact.map) if !{ var(txn.be) -m found }\n" +
			"    http-request set-var(txn.be) var(txn.wkey),map_beg(maps/wild_prefix.map) if !{ var(txn.be) -m found }\n" +
			"    http-request set-var(txn.be) var(txn.path),map_str(maps/any_exact.map) if !{ var(txn.be) -m found }\n" +
			"    http-request set-var(txn.be) var(txn.path),map_beg(maps/any_prefix.map) if !{ var(txn.be) -m found }\n" +
			"    http-request set-var(txn.insecure) var(txn.host),map_str(maps/insecure_host.map)\n" +
			"    http-request set-var(txn.insecure) var(txn.host),regsub(^[^.]*,),map_str(maps/insecure_host.map) if !{ var(txn.insecure) -m found }\n" +
			"    http-request set-var(txn.insecure) var(txn.be),map_str(maps/insecure.map) if !{ var(txn.insecure) -m found }\n",
		"    http-request redirect location https://%[var(txn.host)]%[pathq] code 302 if { var(txn.insecure) -m str redirect-302 }\n",
		// None: the request loses its route right after the redirects,
		// before the route's rules (its allowlist), and goes to be_default.
		"    http-request redirect location https://%[var(txn.host)]%[pathq] code 308 if { var(txn.insecure) -m str redirect-308 }\n" +
			"    http-request unset-var(txn.be) if { var(txn.insecure) -m str none }\n",
		frontendAllowlistRule,
		rewriteRule + headerRules + "    use_backend %[var(txn.be)] if { var(txn.be) -m found }\n    default_backend be_default\n",
	} {
		if !strings.Contains(http, want) {
			t.Errorf("fe_http lacks %q:\n%s", want, http)
		}
	}
	// Behind a port other than 443 the redirect names it.
	s.HTTPSRedirectPort = 8443
	p, err := Render(s, st)
	if err != nil {
		t.Fatal(err)
	}
	if want := "redirect location https://%[var(txn.host)]:8443%[pathq] code 302 "; !strings.Contains(string(p.Text()), want) {
		t.Errorf("with redirect port 8443, fe_http lacks %q:\n%s", want, p.Text())
	}
	s.HTTPSRedirectPort = 0
	if strings.Contains(https, "insecure") || strings.Contains(https, "redirect") {
		t.Errorf("fe_https consults the insecure maps:\n%s", https)
	}
	// Without HTTPS there is nowhere to redirect to: fe_http routes as
	// fe_https would, whatever the policy.
	g, err := Render(testSettings, st)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(g.Text()), "insecure") || strings.Contains(string(g.Text()), "redirect") {
		t.Errorf("without an HTTPS bind, fe_http consults the insecure maps:\n%s", g.Text())
	}
	// The renderer's cache follows a policy change alone.
	r := NewRenderer(s)
	if _, err := r.Render(st); err != nil {
		t.Fatal(err)
	}
	st2 := state(backendFor(with(api, dcm.InsecureNone, 0), srv), backendFor(root, srv))
	f2, err := r.Render(st2)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(f2.Maps[MapFile(dcm.MapInsecure)]), "be_edge:ns:api none\n"; got != want {
		t.Errorf("after a policy change: %q, want %q", got, want)
	}
	// A hostile policy or code never renders.
	for _, bad := range []dcm.Route{with(api, "Redirect\nx", 0), with(api, dcm.InsecureRedirect, 200), with(pt, dcm.InsecureAllow, 0)} {
		if _, err := Render(s, state(backendFor(bad, srv))); err == nil {
			t.Errorf("rendered %q %d on %s", bad.Insecure, bad.RedirectCode, bad.Kind)
		}
	}
}

func TestAddMapCommandInsecure(t *testing.T) {
	for _, tc := range []struct {
		table dcm.MapTable
		key   string
		value string
		ok    bool
	}{
		{dcm.MapInsecure, "be_edge:ns:a", "redirect-302", true},
		{dcm.MapInsecure, "be_edge:ns:a", "none", true},
		{dcm.MapInsecureHost, "a.example", "redirect-308", true},
		{dcm.MapInsecure, "be_edge:ns:a", "be_edge:ns:a", false},
		{dcm.MapInsecure, "be_edge:ns:a", "redirect-200", false},
		{dcm.MapInsecure, "be_edge:ns:a x", "none", false},
		{dcm.MapHostExact, "a.example/", "none", false},
	} {
		_, err := AddMapCommand(tc.table, tc.key, tc.value)
		if (err == nil) != tc.ok {
			t.Errorf("%s %q %q: err %v, want ok=%v", tc.table, tc.key, tc.value, err, tc.ok)
		}
	}
}
