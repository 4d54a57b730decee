package haproxy

import (
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
