package haproxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/plan"
	"github.com/dcm-router/dcm/internal/testkit"
)

// gwPod is a pod that answers with its name, the path, query and host it
// got, and the request headers it was asked to show (?show=a,b).
func gwPod(t *testing.T, ip, name string) dcm.Endpoint {
	t.Helper()
	l, err := net.Listen("tcp", ip+":0")
	mustf(t, err, "listen")
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var hs []string
		for _, h := range []string{"X-Gw-Set", "X-Gw-Add", "X-Gw-Keep", "X-Gw-Drop"} {
			if v := r.Header.Values(h); len(v) > 0 {
				hs = append(hs, h+"="+strings.Join(v, "+"))
			}
		}
		w.Header().Set("X-Pod-Header", "pod")
		fmt.Fprintf(w, "%s %s %s %s", name, r.URL.RequestURI(), r.Host, strings.Join(hs, ";"))
	}), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	a := l.Addr().(*net.TCPAddr)
	return dcm.Endpoint{Name: name + ":http", Addr: a.IP.String(), Port: a.Port, Weight: 1, State: dcm.StateReady, Pod: name}
}

// gwBackend is the desired backend of one Gateway route on bind.
func gwBackend(name, bind, rank string, hosts []string, f *dcm.HTTPFilters, eps []dcm.Endpoint, ms ...dcm.HTTPMatch) dcm.DesiredBackend {
	r := dcm.Route{Namespace: "gw", Name: name, Source: dcm.SourceHTTPRoute, Object: name, Kind: dcm.KindHTTP,
		Services: []dcm.ServiceRef{{Name: name, Port: "80", Weight: 1}}, Balance: dcm.BalanceRoundRobin,
		Gateway: &dcm.GatewayRoute{Gateway: "gw/gw", Listener: "http", Bind: bind, Hostnames: hosts, Matches: ms, Filters: f, Rank: rank}}
	return dcm.DesiredBackend{Name: r.BackendName(), Route: r, Endpoints: eps}.WithUpstreamNames()
}

func prefix(p string) dcm.HTTPMatch { return dcm.HTTPMatch{PathType: dcm.GatewayPathPrefix, Path: p} }
func exact(p string) dcm.HTTPMatch  { return dcm.HTTPMatch{PathType: dcm.GatewayPathExact, Path: p} }

// gwReq is one request and what it must get.
type gwReq struct {
	method, url, host string
	hdr               map[string]string
	code              int
	body              string // the answer starts with it
	header            string // "Name: value" the response must carry
}

func gwDo(t *testing.T, r gwReq) (int, string, http.Header) {
	t.Helper()
	method := r.method
	if method == "" {
		method = "GET"
	}
	req, err := http.NewRequest(method, r.url, nil)
	mustf(t, err, "request")
	req.Host = r.host
	for k, v := range r.hdr {
		req.Header.Set(k, v)
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s (Host %s): %v", method, r.url, r.host, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header
}

func gwCheck(t *testing.T, reqs []gwReq) {
	t.Helper()
	for _, r := range reqs {
		code, body, h := gwDo(t, r)
		if code != r.code || !strings.HasPrefix(body, r.body) {
			t.Errorf("%s %s Host %s %v: got %d %q, want %d %q", r.method, r.url, r.host, r.hdr, code, body, r.code, r.body)
		}
		if r.header != "" {
			name, want, _ := strings.Cut(r.header, ": ")
			if got := strings.Join(h.Values(name), ","); got != want {
				t.Errorf("%s %s Host %s: header %s %q, want %q", r.method, r.url, r.host, name, got, want)
			}
		}
	}
}

// gwRun starts HAProxy with Gateway binds and moves it from desired state
// to desired state with the planner's plans, each without a reload (same
// worker, same reload count), the runtime maps equal to the files.
type gwRun struct {
	t     *testing.T
	d     *Driver
	st    dcm.State
	caps  dcm.Caps
	pid   int
	front string
}

func startGateway(t *testing.T, addr string, desired dcm.Desired, mut ...func(*DriverConfig)) *gwRun {
	mut = append([]func(*DriverConfig){func(c *DriverConfig) {
		c.Settings.Gateway = dcm.GatewayBinds{Addresses: []string{addr}, HTTPPorts: []int{18080}}
	}}, mut...)
	var cfg DriverConfig
	for _, m := range mut {
		m(&cfg)
	}
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 24, RuntimeCerts: true, Gateway: cfg.Settings.Gateway}
	st := plan.Fresh(desired, caps)
	d, front := startDriver(t, st, mut...)
	return &gwRun{t: t, d: d, st: st, caps: caps, pid: workerPID(t, d), front: front}
}

func (g *gwRun) apply(desired dcm.Desired) {
	g.t.Helper()
	p := plan.Compute(g.st, desired, g.caps)
	if p.Reload {
		g.t.Fatalf("the change reloads: %v", p.Reasons)
	}
	g.t.Logf("ops %v", p.Ops)
	mustf(g.t, g.d.Apply(context.Background(), p.Ops, p.Next), "apply %v", p.Ops)
	mustf(g.t, g.d.Write(p.Next), "write")
	g.st = p.Next
	filesEqualRuntime(g.t, g.d)
	if pid := workerPID(g.t, g.d); pid != g.pid {
		g.t.Fatalf("the worker changed: %d, was %d", pid, g.pid)
	}
	if q := plan.Compute(g.st, desired, g.caps); len(q.Ops) > 0 || q.Reload {
		g.t.Fatalf("not idempotent: %v", q.Ops)
	}
}

func desiredOf(bs ...dcm.DesiredBackend) dcm.Desired {
	sort.Slice(bs, func(i, j int) bool { return bs[i].Name < bs[j].Name })
	return dcm.Desired{Backends: dcm.DesiredList(bs...)}
}

// TestGatewayMatching: Gateway routes added to a running HAProxy are
// served on their bind by the Gateway API's matching and precedence —
// among the routes of the host, its wildcards (any depth) and any host:
// exact path, then the longest prefix, method, headers, query, then the
// more specific hostname, then rank — with
// 404 when nothing matches and 500 for an unresolved rule; an Ingress
// route is not served on the Gateway bind nor a Gateway route on the
// Ingress bind; and every change, deletions too, without a reload.
func TestGatewayMatching(t *testing.T) {
	t.Parallel()
	const addr = "127.0.20.1"
	bind := addr + ":18080"
	url := "http://" + bind
	ing := route("ns", "ing", "ing.example", "/", dcm.PathPrefix)
	ingEP := gwPod(t, "127.0.0.1", "ingress-pod")
	ingB := dcm.DesiredBackend{Name: ing.BackendName(), Route: ing, Endpoints: []dcm.Endpoint{ingEP}}.WithUpstreamNames()
	g := startGateway(t, addr, desiredOf(ingB))
	ep := func(n string) []dcm.Endpoint { return []dcm.Endpoint{gwPod(t, "127.0.0.1", n)} }

	withHeader := exact("/m")
	withHeader.Headers = []dcm.ValueMatch{{Name: "X-Version", Value: "two"}}
	withQuery := exact("/m")
	withQuery.Query = []dcm.ValueMatch{{Name: "v", Value: "q"}}
	withMethod := exact("/m")
	withMethod.Method = "POST"
	routes := []dcm.DesiredBackend{
		gwBackend("any-root", bind, "3", nil, nil, ep("any-root"), prefix("/")),
		gwBackend("exact-host", bind, "2", []string{"a.example.com"}, nil, ep("exact-host"), prefix("/foo")),
		gwBackend("wild", bind, "2", []string{"*.example.com"}, nil, ep("wild"), prefix("/")),
		gwBackend("wild-deep", bind, "2", []string{"*.b.example.com"}, nil, ep("wild-deep"), prefix("/")),
		gwBackend("wild-longer", bind, "2", []string{"*.example.com"}, nil, ep("wild-longer"), prefix("/foo/deeper")),
		gwBackend("prefix-foo", bind, "1", nil, nil, ep("prefix-foo"), prefix("/foo/")),
		gwBackend("prefix-foobar", bind, "1", nil, nil, ep("prefix-foobar"), prefix("/foo/bar")),
		gwBackend("exact-foo", bind, "9", nil, nil, ep("exact-foo"), exact("/foo")),
		gwBackend("m-header", bind, "5", nil, nil, ep("m-header"), withHeader),
		gwBackend("m-query", bind, "5", nil, nil, ep("m-query"), withQuery),
		gwBackend("m-method", bind, "5", nil, nil, ep("m-method"), withMethod),
		gwBackend("m-older", bind, "0", nil, nil, ep("m-older"), exact("/m")),
		gwBackend("m-newer", bind, "8", nil, nil, ep("m-newer"), exact("/m")),
	}
	reHeader := prefix("/re")
	reHeader.Headers = []dcm.ValueMatch{{Name: "X-Build", Value: "v[0-9]+", Regex: true}}
	badRegex := prefix("/re")
	badRegex.Headers = []dcm.ValueMatch{{Name: "X-Bad", Value: "(", Regex: true}} // never matches, not even "("
	routes = append(routes,
		gwBackend("re-header", bind, "1", nil, nil, ep("re-header"), reHeader),
		gwBackend("re-bad", bind, "1", nil, nil, ep("re-bad"), badRegex),
		gwBackend("re-path", bind, "1", nil, nil, ep("re-path"), dcm.HTTPMatch{PathType: dcm.GatewayPathRegex, Path: "/re/[a-z]+/[0-9]+"}))
	// A GRPCRoute's unresolved rule answers 503 (gRPC's UNAVAILABLE).
	brokenGRPC := gwBackend("broken-grpc", bind, "1", nil, nil, nil, prefix("/broken-grpc"))
	brokenGRPC.Route.Source, brokenGRPC.Route.Gateway.Unresolved = dcm.SourceGRPCRoute, true
	broken := gwBackend("broken", bind, "1", nil, nil, nil, prefix("/broken"))
	broken.Route.Gateway.Unresolved = true
	routes = append(routes, brokenGRPC, broken)
	g.apply(desiredOf(append([]dcm.DesiredBackend{ingB}, routes...)...))

	gwCheck(t, []gwReq{
		{url: url + "/x", host: "other.test", code: 200, body: "any-root /x"},
		// Routes of every hostname that takes the host compete by their
		// matches first (an exact path, a longer prefix), the hostname
		// breaks ties (the conformance suite's HTTPRouteMatchingAcrossRoutes).
		{url: url + "/foo", host: "a.example.com", code: 200, body: "exact-foo"},
		{url: url + "/foo/x", host: "a.example.com:18080", code: 200, body: "exact-host"},
		{url: url + "/foo/deeper/x", host: "a.example.com", code: 200, body: "wild-longer"},
		{url: url + "/foo/deeper/x", host: "other.test", code: 200, body: "prefix-foo"},
		{url: url + "/other", host: "a.example.com", code: 200, body: "wild"},
		{url: url + "/", host: "x.y.example.com", code: 200, body: "wild"},
		{url: url + "/", host: "x.b.example.com", code: 200, body: "wild-deep"},
		{url: url + "/", host: "example.com", code: 200, body: "any-root"},
		{url: url + "/foo", host: "h.test", code: 200, body: "exact-foo"},
		{url: url + "/foo/", host: "h.test", code: 200, body: "prefix-foo"},
		{url: url + "/foo/bar", host: "h.test", code: 200, body: "prefix-foobar"},
		{url: url + "/foo/bar/baz", host: "h.test", code: 200, body: "prefix-foobar"},
		{url: url + "/foo/barbaz", host: "h.test", code: 200, body: "prefix-foo"},
		{url: url + "/foobar", host: "h.test", code: 200, body: "any-root"},
		{url: url + "/m", host: "h.test", method: "POST", hdr: map[string]string{"x-version": "two"}, code: 200, body: "m-method"},
		{url: url + "/m", host: "h.test", hdr: map[string]string{"x-version": "two"}, code: 200, body: "m-header"},
		{url: url + "/m?v=q", host: "h.test", code: 200, body: "m-query"},
		{url: url + "/m", host: "h.test", code: 200, body: "m-older"},
		{url: url + "/broken/x", host: "h.test", code: 500},
		{url: url + "/broken-grpc/x", host: "h.test", code: 503},
		// Regular expressions match whole values.
		{url: url + "/re/x", host: "h.test", hdr: map[string]string{"X-Build": "v12"}, code: 200, body: "re-header"},
		{url: url + "/re/x", host: "h.test", hdr: map[string]string{"X-Build": "v12b"}, code: 200, body: "any-root"},
		{url: url + "/re/abc/42", host: "h.test", code: 200, body: "re-path"},
		{url: url + "/re/abc/42/x", host: "h.test", code: 200, body: "any-root"},
		{url: url + "/re/x", host: "h.test", hdr: map[string]string{"X-Bad": "x"}, code: 200, body: "any-root"},
		// The Ingress route is not on the Gateway bind, nor Gateway routes
		// on the Ingress bind.
		{url: url + "/", host: "ing.example", code: 200, body: "any-root"},
		{url: "http://" + g.front + "/", host: "ing.example", code: 200, body: "ingress-pod"},
		{url: "http://" + g.front + "/foo", host: "h.test", code: 503},
	})

	// Without the any-host route, what matches nothing is 404; a rank
	// change reorders at once; the deleted routes are gone.
	routes = routes[1 : len(routes)-1] // any-root and broken go
	for i, r := range routes {
		if r.Route.Name == "m-older" {
			routes[i] = gwBackend("m-older", bind, "9", nil, nil, r.Endpoints, exact("/m"))
		}
	}
	g.apply(desiredOf(append([]dcm.DesiredBackend{ingB}, routes...)...))
	gwCheck(t, []gwReq{
		{url: url + "/x", host: "other.test", code: 404},
		{url: url + "/m", host: "h.test", code: 200, body: "m-newer"},
		{url: url + "/broken/x", host: "h.test", code: 404},
	})
}

// TestGatewayFilters: each HTTPRoute filter — request and response header
// modifiers, redirects (scheme, hostname, port, full path, prefix, code),
// URL rewrites (hostname, full path, prefix) — and a weight change, served
// on a Gateway bind and changed at runtime without a reload.
func TestGatewayFilters(t *testing.T) {
	t.Parallel()
	const addr = "127.0.20.2"
	bind := addr + ":18080"
	url := "http://" + bind
	g := startGateway(t, addr, dcm.Desired{})
	ep := func(n string) []dcm.Endpoint { return []dcm.Endpoint{gwPod(t, "127.0.0.1", n)} }
	hdrs := &dcm.HTTPFilters{
		RequestHeaders: &dcm.HeaderMods{Set: []dcm.HeaderValue{{Name: "X-Gw-Set", Value: "set value"}},
			Add: []dcm.HeaderValue{{Name: "X-Gw-Add", Value: "added"}}, Remove: []string{"X-Gw-Drop"}},
		ResponseHeaders: &dcm.HeaderMods{Set: []dcm.HeaderValue{{Name: "X-Pod-Header", Value: "replaced"}},
			Add: []dcm.HeaderValue{{Name: "X-Resp-Add", Value: "r1"}}},
	}
	redirect := func(r dcm.HTTPRedirect) *dcm.HTTPFilters { return &dcm.HTTPFilters{Redirect: &r} }
	rewrite := func(r dcm.URLRewrite) *dcm.HTTPFilters { return &dcm.HTTPFilters{Rewrite: &r} }
	twoPods := append(ep("w-one"), ep("w-two")...)
	twoPods[1].Weight = 0
	routes := []dcm.DesiredBackend{
		gwBackend("hdrs", bind, "1", []string{"h.test"}, hdrs, ep("hdrs"), prefix("/")),
		gwBackend("r-scheme", bind, "1", []string{"r.test"}, redirect(dcm.HTTPRedirect{Scheme: "https"}), nil, prefix("/scheme")),
		gwBackend("r-host", bind, "1", []string{"r.test"}, redirect(dcm.HTTPRedirect{Hostname: "elsewhere.test", StatusCode: 301}), nil, prefix("/host")),
		gwBackend("r-port", bind, "1", []string{"r.test"}, redirect(dcm.HTTPRedirect{Port: 8443}), nil, prefix("/port")),
		gwBackend("r-full", bind, "1", []string{"r.test"}, redirect(dcm.HTTPRedirect{Path: &dcm.PathModifier{Type: dcm.ReplaceFullPath, Value: "/full"}}), nil, prefix("/full-from")),
		gwBackend("r-prefix", bind, "1", []string{"r.test"}, redirect(dcm.HTTPRedirect{Path: &dcm.PathModifier{Type: dcm.ReplacePrefixMatch, Value: "/new"}}), nil, prefix("/old")),
		gwBackend("w-host", bind, "1", []string{"w.test"}, rewrite(dcm.URLRewrite{Hostname: "rewritten.test"}), ep("w-host"), prefix("/host")),
		gwBackend("w-full", bind, "1", []string{"w.test"}, rewrite(dcm.URLRewrite{Path: &dcm.PathModifier{Type: dcm.ReplaceFullPath, Value: "/full"}}), ep("w-full"), prefix("/full-from")),
		gwBackend("w-prefix", bind, "1", []string{"w.test"}, rewrite(dcm.URLRewrite{Path: &dcm.PathModifier{Type: dcm.ReplacePrefixMatch, Value: "/new"}}), ep("w-prefix"), prefix("/old")),
		gwBackend("w-strip", bind, "1", []string{"w.test"}, rewrite(dcm.URLRewrite{Path: &dcm.PathModifier{Type: dcm.ReplacePrefixMatch, Value: "/"}}), ep("w-strip"), prefix("/strip")),
		gwBackend("weights", bind, "1", []string{"weights.test"}, nil, twoPods, prefix("/")),
	}
	g.apply(desiredOf(routes...))
	gwCheck(t, []gwReq{
		{url: url + "/a", host: "h.test", hdr: map[string]string{"X-Gw-Set": "client", "X-Gw-Add": "client", "X-Gw-Drop": "x"}, code: 200,
			body: "hdrs /a h.test X-Gw-Set=set value;X-Gw-Add=client+added", header: "X-Pod-Header: replaced"},
		{url: url + "/a", host: "h.test", code: 200, body: "hdrs", header: "X-Resp-Add: r1"},
		{url: url + "/scheme/x?q=1", host: "r.test:18080", code: 302, header: "Location: https://r.test/scheme/x?q=1"},
		{url: url + "/host", host: "r.test", code: 301, header: "Location: http://elsewhere.test:18080/host"},
		{url: url + "/port", host: "r.test", code: 302, header: "Location: http://r.test:8443/port"},
		{url: url + "/full-from/x", host: "r.test", code: 302, header: "Location: http://r.test:18080/full"},
		{url: url + "/old/x", host: "r.test", code: 302, header: "Location: http://r.test:18080/new/x"},
		{url: url + "/host/x", host: "w.test", code: 200, body: "w-host /host/x rewritten.test"},
		{url: url + "/full-from/x?a=b", host: "w.test", code: 200, body: "w-full /full?a=b w.test"},
		{url: url + "/old/x", host: "w.test", code: 200, body: "w-prefix /new/x w.test"},
		{url: url + "/old", host: "w.test", code: 200, body: "w-prefix /new w.test"},
		{url: url + "/strip/x", host: "w.test", code: 200, body: "w-strip /x w.test"},
		{url: url + "/strip", host: "w.test", code: 200, body: "w-strip / w.test"},
		{url: url + "/", host: "weights.test", code: 200, body: "w-one"},
		{url: url + "/", host: "weights.test", code: 200, body: "w-one"},
	})

	// The filters change, the weights swap: at runtime.
	hdrs2 := &dcm.HTTPFilters{RequestHeaders: &dcm.HeaderMods{Set: []dcm.HeaderValue{{Name: "X-Gw-Keep", Value: "v2"}}}}
	routes[0] = gwBackend("hdrs", bind, "1", []string{"h.test"}, hdrs2, routes[0].Endpoints, prefix("/"))
	routes[2] = gwBackend("r-host", bind, "1", []string{"r.test"}, redirect(dcm.HTTPRedirect{Hostname: "third.test", StatusCode: 308}), nil, prefix("/host"))
	swapped := append([]dcm.Endpoint{}, routes[len(routes)-1].Endpoints...)
	swapped[0].Weight, swapped[1].Weight = 0, 1
	routes[len(routes)-1].Endpoints = swapped
	g.apply(desiredOf(routes...))
	gwCheck(t, []gwReq{
		{url: url + "/a", host: "h.test", hdr: map[string]string{"X-Gw-Drop": "x"}, code: 200, body: "hdrs /a h.test X-Gw-Keep=v2;X-Gw-Drop=x", header: "X-Pod-Header: pod"},
		{url: url + "/host", host: "r.test", code: 308, header: "Location: http://third.test:18080/host"},
		{url: url + "/", host: "weights.test", code: 200, body: "w-two"},
		{url: url + "/", host: "weights.test", code: 200, body: "w-two"},
	})
}

// TestGatewayHTTPS: a Gateway HTTPS bind serves each listener hostname's
// certificate by SNI (a wildcard too), the certificate of a listener
// without hostname to any other SNI, and dcm's own before and after;
// certificates come, rotate and go with their routes at runtime, on that
// address only, without a reload.
func TestGatewayHTTPS(t *testing.T) {
	t.Parallel()
	const addr = "127.0.20.3"
	bind := addr + ":18443"
	ca := testkit.NewCA(t)
	store := &testkit.CertStore{}
	leafA, leafA2, leafW, leafAny := ca.Leaf(t, "a.gw.test"), ca.Leaf(t, "a.gw.test"), ca.Leaf(t, "*.wild.test"), ca.Leaf(t, "other.test")
	vA, vA2, vW, vAny := store.Put("gw/a", leafA.PEM()), store.Put("gw/a", leafA2.PEM()), store.Put("gw/w", leafW.PEM()), store.Put("gw/any", leafAny.PEM())
	g := startGateway(t, addr, dcm.Desired{}, func(c *DriverConfig) {
		c.Settings.Gateway.HTTPSPorts = []int{18443}
		c.Certs = store
	})
	edge := func(name, secret, version string, hosts []string) dcm.DesiredBackend {
		b := gwBackend(name, bind, "1", hosts, nil, []dcm.Endpoint{gwPod(t, "127.0.0.1", name)}, prefix("/"))
		b.Route.Kind, b.Name = dcm.KindEdge, dcm.BackendName(dcm.KindEdge, "gw", name)
		b.Route.TLS = &dcm.TLSRef{Secret: secret, Version: version}
		if len(hosts) == 1 {
			// The listener's hostname is its route's, as the source
			// intersects them; nil: a listener without hostname.
			b.Route.Gateway.ListenerHostname = hosts[0]
		}
		return b
	}
	serves := func(step, host string, want *testkit.Leaf, body string) {
		t.Helper()
		if want == nil {
			leaf, err := testkit.ServedLeaf(bind, host, nil)
			mustf(t, err, "%s: TLS to %s", step, host)
			if leaf.Subject.CommonName != "dcm default certificate" {
				t.Fatalf("%s: %s served %q, want dcm's default certificate", step, host, leaf.Subject.CommonName)
			}
			return
		}
		code, got, leaf, err := testkit.HTTPSGet(bind, host, "/p", ca.Pool())
		mustf(t, err, "%s: GET https://%s/p", step, host)
		if code != 200 || !strings.HasPrefix(got, body+" /p "+host) {
			t.Fatalf("%s: https://%s/p → %d %q, want %s", step, host, code, got, body)
		}
		if leaf.SerialNumber.Cmp(want.Cert.SerialNumber) != 0 {
			t.Fatalf("%s: %s served serial %s, want %s", step, host, leaf.SerialNumber, want.Cert.SerialNumber)
		}
	}
	serves("before", "a.gw.test", nil, "")

	a, w := edge("tls-a", "gw/a", vA, []string{"a.gw.test"}), edge("tls-w", "gw/w", vW, []string{"*.wild.test"})
	g.apply(desiredOf(a, w))
	serves("added", "a.gw.test", &leafA, "tls-a")
	serves("added", "x.wild.test", &leafW, "tls-w")
	serves("added", "other.test", nil, "")

	any := edge("tls-any", "gw/any", vAny, nil)
	a = edge("tls-a", "gw/a", vA2, []string{"a.gw.test"})
	g.apply(desiredOf(a, w, any))
	serves("rotated", "a.gw.test", &leafA2, "tls-a")
	serves("listener without hostname", "other.test", &leafAny, "tls-any")

	g.apply(desiredOf(a))
	serves("deleted", "a.gw.test", &leafA2, "tls-a")
	serves("deleted", "other.test", nil, "")
	serves("deleted", "x.wild.test", nil, "")
	files, err := g.d.ReadFiles()
	mustf(t, err, "read files")
	list := GatewayCrtList(bind)
	if want := GatewayCertFile(bind, "a.gw.test") + " a.gw.test\n"; string(files.GatewayLists[list]) != want {
		t.Errorf("%s: %q, want %q", list, files.GatewayLists[list], want)
	}
	// The runtime's crt-list is the file's.
	replies, err := g.d.client.Exec(context.Background(), []Command{{text: "show ssl crt-list " + list, kind: replyAny}})
	mustf(t, err, "show ssl crt-list")
	var lines []string
	for _, l := range strings.Split(replies[0].Text, "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	if strings.Join(lines, "\n")+"\n" != string(files.GatewayLists[list]) {
		t.Errorf("runtime crt-list %q, file %q", replies[0].Text, files.GatewayLists[list])
	}
}
