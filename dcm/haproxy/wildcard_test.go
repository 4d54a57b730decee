package haproxy

import (
	"strings"
	"testing"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

// TestWildcardRouting drives traffic through the wildcard maps of the
// rendered frontend: one label under the domain finds the wildcard route,
// an exact host under it and a longer wildcard path win, two labels and
// the bare domain do not match.
func TestWildcardRouting(t *testing.T) {
	t.Parallel()
	echo := func(host, name string) testkit.Backend { return testkit.StartBackend(t, host, name) }
	wild := route("ns", "wild", "*.w.example", "/", dcm.PathPrefix)
	wildAPI := route("ns", "wild-api", "*.w.example", "/api", dcm.PathPrefix)
	exact := route("ns", "exact", "www.w.example", "/", dcm.PathPrefix)
	st := state(
		backendFor(wild, serverFor(echo("127.0.0.2", "wild"), dcm.StateReady)),
		backendFor(wildAPI, serverFor(echo("127.0.0.3", "wild-api"), dcm.StateReady)),
		backendFor(exact, serverFor(echo("127.0.0.4", "exact"), dcm.StateReady)),
	)
	_, bind := startDriver(t, st)
	tests := []struct {
		host, path string
		code       int
		body       string
	}{
		{"a.w.example", "/", 200, "wild"},
		{"B.W.Example:80", "/x", 200, "wild"},
		{"a.w.example", "/api/v1", 200, "wild-api"},
		{"a.w.example", "/apix", 200, "wild"},
		{"www.w.example", "/api", 200, "exact"},
		{"a.b.w.example", "/", 503, ""},
		{"w.example", "/", 503, ""},
		{"a.w.examplex", "/", 503, ""},
		{"localhost", "/", 503, ""},
	}
	for _, tt := range tests {
		code, body := get(t, bind, tt.host, tt.path)
		if code != tt.code || (tt.body != "" && body != tt.body) {
			t.Errorf("GET %s%s = %d %q, want %d %q", tt.host, tt.path, code, body, tt.code, tt.body)
		}
	}
}

// TestWildcardPassthrough: a wildcard passthrough route gets the TLS
// connections whose server name is one label under its domain, after the
// exact passthrough hosts; the pod's own certificate reaches the client.
func TestWildcardPassthrough(t *testing.T) {
	t.Parallel()
	ca := testkit.NewCA(t)
	wildLeaf, exactLeaf := ca.Leaf(t, "*.p.test"), ca.Leaf(t, "www.p.test")
	wildPod := testkit.StartTLSBackend(t, "127.0.0.7", "wild-pod", wildLeaf)
	exactPod := testkit.StartTLSBackend(t, "127.0.0.8", "exact-pod", exactLeaf)
	wild := route("ns", "wild", "*.p.test", "/", dcm.PathPrefix)
	wild.Kind = dcm.KindPassthrough
	exact := route("ns", "exact", "www.p.test", "/", dcm.PathPrefix)
	exact.Kind = dcm.KindPassthrough
	st := state(backendFor(wild, serverFor(wildPod, dcm.StateReady)), backendFor(exact, serverFor(exactPod, dcm.StateReady)))
	https := testkit.FreeAddr(t)
	startDriver(t, st, func(c *DriverConfig) { c.Settings.HTTPSBind = https })
	for _, tt := range []struct {
		host string
		body string
		leaf testkit.Leaf
	}{{"a.p.test", "wild-pod", wildLeaf}, {"b.p.test", "wild-pod", wildLeaf}, {"www.p.test", "exact-pod", exactLeaf}} {
		code, body, cert, err := testkit.HTTPSGet(https, tt.host, "/", ca.Pool())
		if err != nil || code != 200 || strings.TrimSpace(body) != tt.body || cert.SerialNumber.Cmp(tt.leaf.Cert.SerialNumber) != 0 {
			t.Errorf("%s: %d %q %v, want %s with its certificate", tt.host, code, body, err, tt.body)
		}
	}
	if _, _, _, err := testkit.HTTPSGet(https, "a.b.p.test", "/", ca.Pool()); err == nil {
		t.Error("a.b.p.test reached a pod: two labels under the domain")
	}
}
