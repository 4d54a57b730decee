package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/haproxy"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/internal/testkit"
)

// clientAt is an HTTP client whose connections leave from src (a
// loopback address), verifying HTTPS against pool.
func clientAt(src string, pool *x509.CertPool) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: d.DialContext, DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}}
}

// getAt sends one request for host from src: the status and body, or the
// error of a connection closed without an answer.
func getAt(src, url, host string, pool *x509.CertPool) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	req.Host = host
	c := clientAt(src, pool)
	if tr, ok := c.Transport.(*http.Transport); ok {
		tr.TLSClientConfig.ServerName = host
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b)), err
}

// listedBackends are the HAProxy backends the allowlist map HAProxy uses
// has a list for, and how many chunks it holds.
func listedBackends(t *testing.T, s *harness.Stack) (backends []string, chunks int) {
	t.Helper()
	runtime, err := s.Driver.RuntimeMaps(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(runtime[haproxy.MapFile(dcm.MapAllowlist)]), "\n") {
		key, _, _ := strings.Cut(line, " ")
		switch {
		case dcm.IsAllowlistChunkKey(key):
			chunks++
		case key != "":
			backends = append(backends, key)
		}
	}
	return backends, chunks
}

// TestAllowlistAtRuntime: an HTTP, an edge and a passthrough route with a
// client allowlist, added at runtime into spares, serve clients from the
// list (200 from their pod) and close the connection of any other client
// without an answer, as OpenShift's router does; the client's address is
// the one it connected from on every frontend (fe_https gets it from
// fe_tls's PROXY header). The lists change, the roles swap, a list too
// long for one map value (in chunks) comes, then the lists go and
// everyone is served: the worker and the reload count never change,
// HAProxy's allowlist map equals its file after every step and lists
// exactly the routes that have one (the spares they left none).
func TestAllowlistAtRuntime(t *testing.T) {
	ca := testkit.NewCA(t)
	store := &testkit.CertStore{}
	app := startPod(t, "127.0.31.1", "app")
	web := startPod(t, "127.0.31.2", "web")
	shop := startPod(t, "127.0.31.3", "shop")
	dbLeaf := ca.Leaf(t, "db.test")
	db := pod(testkit.StartTLSBackend(t, "127.0.31.4", "db", dbLeaf))
	base := desiredApp(app.endpoint(dcm.StateReady))
	src := harness.NewStaticSource(base)
	s := harness.Start(t, harness.Options{Source: src, Certs: store})
	pid, reloads := s.WorkerPID(), s.Reloads()

	version := store.Put("test/shop-tls", ca.Leaf(t, "shop.test").PEM())
	routes := func(list []string) []dcm.Route {
		w := poolRoute("web", "web.test", "/")
		e := poolRoute("shop", "shop.test", "/")
		e.Kind, e.TLS, e.Insecure = dcm.KindEdge, &dcm.TLSRef{Secret: "test/shop-tls", Version: version}, dcm.InsecureNone
		p := passthroughRoute("db", "db.test")
		for _, r := range []*dcm.Route{&w, &e, &p} {
			r.Allowlist = list
		}
		return []dcm.Route{w, e, p}
	}
	targets := []struct{ url, host, body string }{
		{"http://" + s.HTTPAddr + "/", "web.test", "web"},
		{"https://" + s.HTTPSAddr + "/", "shop.test", "shop"},
		{"https://" + s.HTTPSAddr + "/", "db.test", "db"},
	}
	served := func(step, client string, want bool) {
		t.Helper()
		for _, tg := range targets {
			s.Eventually(fmt.Sprintf("%s: %s from %s served %v", step, tg.host, client, want), 5*time.Second, func() error {
				code, body, err := getAt(client, tg.url, tg.host, ca.Pool())
				switch {
				case want && (err != nil || code != http.StatusOK || body != tg.body):
					return fmt.Errorf("%d %q %v", code, body, err)
				case !want && err == nil:
					return fmt.Errorf("answered %d %q", code, body)
				}
				return nil
			})
		}
	}
	steady := func(step string, listed bool, long bool) {
		t.Helper()
		if s.WorkerPID() != pid || s.Reloads() != reloads {
			t.Fatalf("%s: worker %d → %d, reloads %v → %v", step, pid, s.WorkerPID(), reloads, s.Reloads())
		}
		filesEqualRuntime(t, s)
		backends, chunks := listedBackends(t, s)
		want := 0
		if listed {
			want = 3 // the HTTP, edge and passthrough routes
		}
		if len(backends) != want || (chunks > 0) != long {
			t.Errorf("%s: the allowlist map lists %v and %d chunks, want %d backends, chunks %v", step, backends, chunks, want, long)
		}
		answers(s, "app.test", "/", app.Name) // a route without a list serves everyone
	}

	for _, step := range []struct {
		name    string
		list    []string
		allowed []string
		denied  []string
	}{
		{"new routes with 127.0.0.2", []string{"127.0.0.2"}, []string{"127.0.0.2"}, []string{"127.0.0.3"}},
		{"the list swapped", []string{"127.0.0.3/32", "::1"}, []string{"127.0.0.3"}, []string{"127.0.0.2"}},
		{"a network", []string{"127.0.0.0/30"}, []string{"127.0.0.2", "127.0.0.3"}, []string{"127.0.0.5"}},
		{"a long list", longList(600, "127.0.0.5"), []string{"127.0.0.5"}, []string{"127.0.0.2"}},
		{"no list", nil, []string{"127.0.0.2", "127.0.0.5"}, nil},
	} {
		src.Set(withRoutes(base, routes(canonical(t, step.list)), []pod{web, shop, db}))
		for _, c := range step.allowed {
			served(step.name, c, true)
		}
		for _, c := range step.denied {
			served(step.name, c, false)
		}
		steady(step.name, step.list != nil, len(step.list) > 100)
	}
	if got := s.Counter("dcm_runtime_errors_total"); got != 0 {
		t.Errorf("%v runtime errors", got)
	}
}

// longList is n IPv6 networks and the given entries, too long for one
// map value.
func longList(n int, more ...string) []string {
	list := append([]string{}, more...)
	for i := range n {
		list = append(list, fmt.Sprintf("2001:db8:%x::/48", i+1))
	}
	return list
}

// canonical writes a list as the sources write it.
func canonical(t *testing.T, list []string) []string {
	t.Helper()
	out, err := dcm.ParseAllowlist("test", strings.Join(list, " "), false)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
