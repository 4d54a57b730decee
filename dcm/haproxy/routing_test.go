package haproxy

import (
	"strings"
	"testing"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

// TestRouting drives real traffic through the rendered frontend.
func TestRouting(t *testing.T) {
	t.Parallel()
	echo := func(host, name string) testkit.Backend { return testkit.StartBackend(t, host, name) }
	rootA := route("ns", "root-a", "a.example", "/", dcm.PathPrefix)
	apiA := route("ns", "api-a", "a.example", "/api", dcm.PathPrefix)
	apiV1A := route("ns", "api-v1-a", "a.example", "/api/v1", dcm.PathPrefix)
	exactA := route("ns", "exact-a", "a.example", "/login", dcm.PathExact)
	anyRoot := route("other", "any-root", "", "/", dcm.PathPrefix)
	anyStatic := route("other", "any-static", "", "/static", dcm.PathPrefix)
	down := route("ns", "down", "down.example", "/", dcm.PathPrefix)
	st := state(
		backendFor(rootA, serverFor(echo("127.0.0.2", "root-a"), dcm.StateReady)),
		backendFor(apiA, serverFor(echo("127.0.0.3", "api-a"), dcm.StateReady)),
		backendFor(apiV1A, serverFor(echo("127.0.0.4", "api-v1-a"), dcm.StateReady)),
		backendFor(exactA, serverFor(echo("127.0.0.5", "exact-a"), dcm.StateReady)),
		backendFor(anyRoot, serverFor(echo("127.0.0.6", "any-root"), dcm.StateReady)),
		backendFor(anyStatic, serverFor(echo("127.0.0.7", "any-static"), dcm.StateReady)),
		backendFor(down, serverFor(echo("127.0.0.8", "down"), dcm.StateMaint)),
	)
	_, bind := startDriver(t, st)
	tests := []struct {
		host, path string
		code       int
		body       string
	}{
		{"a.example", "/", 200, "root-a"},
		{"A.Example:8080", "/anything", 200, "root-a"},
		{"a.example", "/api", 200, "api-a"},
		{"a.example", "/api/", 200, "api-a"},
		{"a.example", "/api/x", 200, "api-a"},
		{"a.example", "/apix", 200, "root-a"},
		{"a.example", "/api/v1", 200, "api-v1-a"},
		{"a.example", "/api/v1/users", 200, "api-v1-a"},
		{"a.example", "/api/v10", 200, "api-a"},
		{"a.example", "/login", 200, "exact-a"},
		{"a.example", "/login/x", 200, "root-a"},
		{"a.example", "/login?next=/", 200, "exact-a"},
		{"b.example", "/", 200, "any-root"},
		{"b.example", "/static/app.js", 200, "any-static"},
		{"b.example", "/staticx", 200, "any-root"},
		{"down.example", "/", 503, ""},
	}
	for _, tt := range tests {
		code, body := get(t, bind, tt.host, tt.path)
		if code != tt.code || (tt.body != "" && body != tt.body) {
			t.Errorf("GET %s%s = %d %q, want %d %q", tt.host, tt.path, code, body, tt.code, tt.body)
		}
	}
}

// TestRoutingNoRoute checks the 503 page of be_default when nothing matches.
func TestRoutingNoRoute(t *testing.T) {
	t.Parallel()
	r := route("ns", "only", "a.example", "/app", dcm.PathPrefix)
	st := state(backendFor(r, serverFor(testkit.StartBackend(t, "127.0.0.2", "only"), dcm.StateReady)))
	_, bind := startDriver(t, st)
	for _, tt := range []struct{ host, path string }{{"unknown.example", "/"}, {"a.example", "/"}, {"a.example", "/apps"}} {
		code, body := get(t, bind, tt.host, tt.path)
		if code != 503 || !strings.Contains(body, "Application is not available") {
			t.Errorf("GET %s%s = %d %q, want 503 and the page", tt.host, tt.path, code, body)
		}
	}
	if code, body := get(t, bind, "a.example", "/app/x"); code != 200 || body != "only" {
		t.Errorf("GET a.example/app/x = %d %q", code, body)
	}
}
