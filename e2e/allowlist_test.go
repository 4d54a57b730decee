package e2e

import (
	"bytes"
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

// allowlistsEqualRuntime checks that the allowlist of every HAProxy
// backend dcm manages is the file's.
func allowlistsEqualRuntime(t *testing.T, s *harness.Stack) {
	t.Helper()
	snap := s.Engine.Snapshot()
	var proxies []string
	for _, b := range snap.Backends {
		proxies = append(proxies, b.ProxyName())
	}
	proxies = append(proxies, snap.Pool...)
	runtime, err := s.Driver.RuntimeACLs(context.Background(), proxies)
	if err != nil {
		t.Fatal(err)
	}
	files, err := s.Driver.ReadFiles()
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range runtime {
		if !bytes.Equal(files.ACLs[name], b) {
			t.Errorf("%s differs\nfile:\n%s\nruntime:\n%s", name, files.ACLs[name], b)
		}
	}
}

// TestAllowlistAtRuntime: an HTTP, an edge and a passthrough route with a
// client allowlist, added at runtime into spares, serve clients from the
// list (200 from their pod) and close the connection of any other client
// without an answer, as OpenShift's router does; the client's address is
// the one it connected from on every frontend (fe_https gets it from
// fe_tls's PROXY header). The lists change, the roles swap, then the
// lists go and everyone is served: the worker and the reload count never
// change, and HAProxy's lists equal the files after every step.
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
	steady := func(step string) {
		t.Helper()
		if s.WorkerPID() != pid || s.Reloads() != reloads {
			t.Fatalf("%s: worker %d → %d, reloads %v → %v", step, pid, s.WorkerPID(), reloads, s.Reloads())
		}
		filesEqualRuntime(t, s)
		allowlistsEqualRuntime(t, s)
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
		{"no list", nil, []string{"127.0.0.2", "127.0.0.5"}, nil},
	} {
		src.Set(withRoutes(base, routes(canonical(t, step.list)), []pod{web, shop, db}))
		for _, c := range step.allowed {
			served(step.name, c, true)
		}
		for _, c := range step.denied {
			served(step.name, c, false)
		}
		steady(step.name)
	}
	if got := s.Counter("dcm_runtime_errors_total"); got != 0 {
		t.Errorf("%v runtime errors", got)
	}
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
