package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/internal/testkit"
	"github.com/dcm-router/dcm/system"
)

// plainAnswer is what one plain HTTP request gets, redirects not followed.
type plainAnswer struct {
	code     int
	body     string // trimmed; only checked for 200
	location string
}

func (a plainAnswer) String() string {
	if a.location != "" {
		return fmt.Sprintf("%d → %s", a.code, a.location)
	}
	return fmt.Sprintf("%d %q", a.code, a.body)
}

// plainGet sends one plain HTTP request through HAProxy without following
// a redirect.
func plainGet(s *harness.Stack, host, pathq string) (plainAnswer, error) {
	c := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequest(http.MethodGet, "http://"+s.HTTPAddr+pathq, nil)
	if err != nil {
		return plainAnswer{}, err
	}
	req.Host = host
	resp, err := c.Do(req)
	if err != nil {
		return plainAnswer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	a := plainAnswer{code: resp.StatusCode, location: resp.Header.Get("Location")}
	if a.code == http.StatusOK {
		a.body = strings.TrimSpace(string(b))
	}
	return a, err
}

// expectPlain waits until plain HTTP to host+pathq gets want.
func expectPlain(s *harness.Stack, host, pathq string, want plainAnswer) {
	s.Eventually(fmt.Sprintf("http://%s%s gets %s", host, pathq, want), 5*time.Second, func() error {
		got, err := plainGet(s, host, pathq)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("got %s", got)
		}
		return nil
	})
}

// expectHTTPS checks that HTTPS to host+path reaches the pod named want.
func expectHTTPS(t *testing.T, s *harness.Stack, ca *testkit.CA, host, path, want string) {
	t.Helper()
	code, body, _, err := testkit.HTTPSGet(s.HTTPSAddr, host, path, ca.Pool())
	if err != nil || code != http.StatusOK || body != want {
		t.Fatalf("https://%s%s: %d %q %v, want 200 %q", host, path, code, body, err, want)
	}
}

// TestInsecurePolicy: an edge route's insecure policy decides what plain
// HTTP gets — Redirect a 302 to the same URL over https (path and query
// kept), Allow the pod, None the no-route answer — while HTTPS always
// reaches the pod, and every switch between them, a redirect code, a new
// route with its own policy on a longer path of the same host and its
// deletion, and a passthrough host's Redirect (the whole host, before
// routing) are map replaces: the worker and the reload count never change.
// A plain HTTP route on another host is never touched, and the maps HAProxy
// runs equal the files after every step.
func TestInsecurePolicy(t *testing.T) {
	ca := testkit.NewCA(t)
	store := &testkit.CertStore{}
	app := startPod(t, "127.0.11.1", "app")
	shopPod := startPod(t, "127.0.11.2", "shop")
	apiPod := startPod(t, "127.0.11.3", "api")
	base := desiredApp(app.endpoint(dcm.StateReady))
	src := harness.NewStaticSource(base)
	// Behind a Service that maps 443 to HAProxy's HTTPS port, as deploy/
	// runs it: the location names no port.
	s := harness.Start(t, harness.Options{Source: src, Certs: store, Config: func(c *system.Config) { c.HTTPSRedirectPort = 443 }})
	pid, reloads := s.WorkerPID(), s.Reloads()
	steady := func(step string) {
		t.Helper()
		if got := s.WorkerPID(); got != pid {
			t.Fatalf("%s: worker %d, was %d", step, got, pid)
		}
		if got := s.Reloads(); got != reloads {
			t.Fatalf("%s: %v reloads, was %v", step, got, reloads)
		}
		filesEqualRuntime(t, s)
		expectPlain(s, "app.test", "/x?y=1", plainAnswer{code: 200, body: "app"})
	}

	version := store.Put("test/shop-tls", ca.Leaf(t, "shop.test").PEM())
	edge := func(name, path string, p dcm.InsecurePolicy, code int) dcm.Route {
		return dcm.Route{Namespace: "test", Name: name, Source: dcm.SourceIngress, Object: "shop", Kind: dcm.KindEdge,
			Host: "shop.test", Path: path, PathType: dcm.PathPrefix, Balance: dcm.BalanceRoundRobin,
			TLS: &dcm.TLSRef{Secret: "test/shop-tls", Version: version}, Insecure: p, RedirectCode: code}
	}
	redirect := func(code int, url string) plainAnswer { return plainAnswer{code: code, location: url} }
	noRoute := plainAnswer{code: http.StatusServiceUnavailable}

	src.Set(withRoutes(base, []dcm.Route{edge("shop", "/", dcm.InsecureRedirect, 0)}, []pod{shopPod}))
	expectPlain(s, "shop.test", "/a/b?x=1&y=%2F", redirect(302, "https://shop.test/a/b?x=1&y=%2F"))
	// The port of the Host header is not carried over: the redirect goes to
	// the https default port, as OpenShift's router does.
	expectPlain(s, "shop.test:8000", "/", redirect(302, "https://shop.test/"))
	expectHTTPS(t, s, ca, "shop.test", "/a/b?x=1", "shop")
	steady("redirect")

	for _, step := range []struct {
		policy dcm.InsecurePolicy
		code   int
		want   plainAnswer
	}{
		{dcm.InsecureAllow, 0, plainAnswer{code: 200, body: "shop"}},
		{dcm.InsecureNone, 0, noRoute},
		{dcm.InsecureRedirect, 0, redirect(302, "https://shop.test/p?q")},
		{dcm.InsecureRedirect, 308, redirect(308, "https://shop.test/p?q")},
		{"", 0, plainAnswer{code: 200, body: "shop"}}, // empty: Allow, as before the field
	} {
		start := time.Now()
		src.Set(withRoutes(base, []dcm.Route{edge("shop", "/", step.policy, step.code)}, []pod{shopPod}))
		expectPlain(s, "shop.test", "/p?q", step.want)
		t.Logf("policy %q code %d: plain HTTP gets %s %v after the change", step.policy, step.code, step.want, time.Since(start).Round(100*time.Microsecond))
		expectHTTPS(t, s, ca, "shop.test", "/p?q", "shop")
		steady(fmt.Sprintf("%q %d", step.policy, step.code))
	}

	// Two routes on one host: the longer path's policy rules its requests
	// only, whichever way round.
	for _, step := range []struct {
		api, root  dcm.InsecurePolicy
		api1, api2 plainAnswer // /api/v?x=1 and /api
		root1      plainAnswer // /apix
	}{
		{dcm.InsecureRedirect, dcm.InsecureAllow,
			redirect(302, "https://shop.test/api/v?x=1"), redirect(302, "https://shop.test/api"), plainAnswer{code: 200, body: "shop"}},
		{dcm.InsecureAllow, dcm.InsecureRedirect,
			plainAnswer{code: 200, body: "api"}, plainAnswer{code: 200, body: "api"}, redirect(302, "https://shop.test/apix")},
		{dcm.InsecureNone, dcm.InsecureAllow,
			noRoute, noRoute, plainAnswer{code: 200, body: "shop"}},
	} {
		src.Set(withRoutes(base, []dcm.Route{edge("shop", "/", step.root, 0), edge("shop-api", "/api", step.api, 0)}, []pod{shopPod, apiPod}))
		expectPlain(s, "shop.test", "/api/v?x=1", step.api1)
		expectPlain(s, "shop.test", "/api", step.api2)
		expectPlain(s, "shop.test", "/apix", step.root1)
		expectHTTPS(t, s, ca, "shop.test", "/api/v", "api")
		expectHTTPS(t, s, ca, "shop.test", "/apix", "shop")
		steady(fmt.Sprintf("/api %s, / %s", step.api, step.root))
	}

	// The /api route deleted: its requests fall to / and its policy.
	src.Set(withRoutes(base, []dcm.Route{edge("shop", "/", dcm.InsecureRedirect, 0)}, []pod{shopPod}))
	expectPlain(s, "shop.test", "/api/v", redirect(302, "https://shop.test/api/v"))
	expectHTTPS(t, s, ca, "shop.test", "/api/v", "shop")
	steady("/api deleted")

	// A passthrough host: HAProxy serves none of its paths, so Redirect
	// sends all of its plain HTTP to https, and None (its default) leaves
	// it to the routes plain HTTP has — none here.
	db := dcm.Route{Namespace: "test", Name: "db", Source: dcm.SourceRoute, Object: "db", Kind: dcm.KindPassthrough,
		Host: "db.test", Path: "/", PathType: dcm.PathPrefix, Balance: dcm.BalanceSource, Insecure: dcm.InsecureRedirect}
	shop := edge("shop", "/", dcm.InsecureRedirect, 0)
	src.Set(withRoutes(base, []dcm.Route{shop, db}, []pod{shopPod, apiPod}))
	expectPlain(s, "db.test", "/x/y?z=1", redirect(302, "https://db.test/x/y?z=1"))
	steady("passthrough Redirect")
	db.Insecure, db.RedirectCode = "", 0
	src.Set(withRoutes(base, []dcm.Route{shop, db}, []pod{shopPod, apiPod}))
	expectPlain(s, "db.test", "/x/y?z=1", noRoute)
	expectPlain(s, "shop.test", "/", redirect(302, "https://shop.test/"))
	steady("passthrough None")

	// The host's route deleted: plain HTTP gets the no-route answer.
	src.Set(base)
	expectPlain(s, "shop.test", "/", noRoute)
	steady("deleted")
}

// TestRedirectLandsOnHTTPS: with the HTTPS frontend's port in the location
// (main's --https-redirect-port default, which the demo runs with), a
// browser-like client that follows the redirect from plain HTTP reaches the
// pod over TLS on the frontend's port with the route's certificate.
func TestRedirectLandsOnHTTPS(t *testing.T) {
	ca := testkit.NewCA(t)
	store := &testkit.CertStore{}
	app := startPod(t, "127.0.11.4", "app")
	shopPod := startPod(t, "127.0.11.5", "shop")
	base := desiredApp(app.endpoint(dcm.StateReady))
	src := harness.NewStaticSource(base)
	s := harness.Start(t, harness.Options{Source: src, Certs: store})
	_, port, err := net.SplitHostPort(s.HTTPSAddr)
	if err != nil {
		t.Fatal(err)
	}
	version := store.Put("test/shop-tls", ca.Leaf(t, "shop.test").PEM())
	shop := dcm.Route{Namespace: "test", Name: "shop", Source: dcm.SourceIngress, Object: "shop", Kind: dcm.KindEdge,
		Host: "shop.test", Path: "/", PathType: dcm.PathPrefix, Balance: dcm.BalanceRoundRobin,
		TLS: &dcm.TLSRef{Secret: "test/shop-tls", Version: version}, Insecure: dcm.InsecureRedirect}
	src.Set(withRoutes(base, []dcm.Route{shop}, []pod{shopPod}))
	expectPlain(s, "shop.test:8000", "/p?q=1", plainAnswer{code: 302, location: "https://shop.test:" + port + "/p?q=1"})

	// shop.test resolves to HAProxy's loopback address, as DNS would send
	// it to the router: the plain request to the HTTP port, the redirected
	// one to the port the location names.
	httpHost, httpPort, _ := net.SplitHostPort(s.HTTPAddr)
	tr := &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12},
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			h, p, err := net.SplitHostPort(addr)
			if err != nil || h != "shop.test" {
				return nil, fmt.Errorf("dial %s: not the test's host", addr)
			}
			if p == "80" {
				p = httpPort
			}
			return (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort(httpHost, p))
		},
	}
	defer tr.CloseIdleConnections()
	var hops []string
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		hops = append(hops, req.URL.String())
		return nil
	}}
	resp, err := c.Get("http://shop.test/p?q=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "shop" || resp.TLS == nil {
		t.Fatalf("following the redirect: %d %q (TLS %v), want 200 from shop over TLS", resp.StatusCode, body, resp.TLS != nil)
	}
	if want := []string{"https://shop.test:" + port + "/p?q=1"}; !slices.Equal(hops, want) {
		t.Errorf("redirects %q, want %q", hops, want)
	}
	if cn := resp.TLS.PeerCertificates[0].DNSNames; !slices.Contains(cn, "shop.test") {
		t.Errorf("served certificate for %q, want shop.test", cn)
	}
}
