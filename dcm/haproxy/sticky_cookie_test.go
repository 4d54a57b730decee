package haproxy

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

// stickyCall sends one request with cookies and returns the pod that
// answered and the Set-Cookie lines HAProxy sent.
func stickyCall(t *testing.T, scheme, addr, host, path string, cookies ...*http.Cookie) (string, []string) {
	t.Helper()
	var hdr map[string]string
	if len(cookies) > 0 {
		parts := make([]string, len(cookies))
		for i, c := range cookies {
			parts[i] = c.Name + "=" + c.Value
		}
		hdr = map[string]string{"Cookie": "app=1; " + strings.Join(parts, "; ")}
	}
	resp, body := request(t, scheme, addr, host, path, hdr)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s%s: HTTP %d", host, path, resp.StatusCode)
	}
	return string(body), resp.Header.Values("Set-Cookie")
}

// cookieFor asks without a cookie and returns the cookie named name that
// HAProxy set, its whole Set-Cookie line, and the pod that answered.
func cookieFor(t *testing.T, scheme, addr, host, path, name string) (*http.Cookie, string, string) {
	t.Helper()
	pod, lines := stickyCall(t, scheme, addr, host, path)
	for _, l := range lines {
		if c, err := http.ParseSetCookie(l); err == nil && c.Name == name {
			return c, l, pod
		}
	}
	t.Fatalf("%s%s: no cookie %s in %q", host, path, name, lines)
	return nil, "", ""
}

// TestStickyCookieNames, with the real binary: two sticky routes on one
// host set cookies of their own names (the route's hash, never the fixed
// name HAProxy's persistence uses), HttpOnly, and each keeps its client on
// its pod with both cookies sent; an edge route's cookie is Secure with
// SameSite=None; a custom name and SameSite=Strict are map replaces, the
// worker unchanged, and the custom name keeps the client on its pod.
func TestStickyCookieNames(t *testing.T) {
	t.Parallel()
	pods := []testkit.Backend{testkit.StartBackend(t, "127.0.0.1", "pod-a"), testkit.StartBackend(t, "127.0.0.1", "pod-b")}
	servers := func() []dcm.Server {
		return []dcm.Server{serverFor(pods[0], dcm.StateReady), serverFor(pods[1], dcm.StateReady)}
	}
	root := route("ns", "root", "web.test", "/", dcm.PathPrefix)
	api := route("ns", "api", "web.test", "/api", dcm.PathPrefix)
	ca := testkit.NewCA(t)
	store := &testkit.CertStore{}
	edge := edgeRoute("ns", "secure", "secure.test", store.Put("ns/secure-tls", ca.Leaf(t, "secure.test").PEM()))
	edge.Insecure = dcm.InsecureRedirect
	for _, r := range []*dcm.Route{&root, &api, &edge} {
		r.Sticky = true
	}
	st := state(backendFor(root, servers()...), backendFor(api, servers()...), backendFor(edge, servers()...))
	https := testkit.FreeAddr(t)
	d, bind := startDriver(t, st, func(c *DriverConfig) {
		c.Settings.HTTPSBind = https
		c.Settings.CookieSecret = "s3cret"
		c.Certs = store
	})
	pid := workerPID(t, d)

	rootC, line, _ := cookieFor(t, "http", bind, "web.test", "/", dcm.DefaultCookieName(root))
	if !strings.Contains(line, "HttpOnly") || strings.Contains(line, "Secure") || strings.Contains(line, CookieName) {
		t.Errorf("plain route's cookie %q: want HttpOnly, not Secure, not %s", line, CookieName)
	}
	apiC, _, _ := cookieFor(t, "http", bind, "web.test", "/api", dcm.DefaultCookieName(api))
	if rootC.Name == apiC.Name {
		t.Fatalf("two routes share the cookie name %s", rootC.Name)
	}
	// Both cookies sent to both routes (as a browser does: path=/): each
	// route reads its own.
	for _, c := range []struct {
		path string
		own  *http.Cookie
	}{{"/", rootC}, {"/api", apiC}} {
		want, _ := stickyCall(t, "http", bind, "web.test", c.path, c.own)
		for range 10 {
			if pod, set := stickyCall(t, "http", bind, "web.test", c.path, rootC, apiC); pod != want || len(set) != 0 {
				t.Fatalf("%s with its cookie: pod %s (want %s), set %q", c.path, pod, want, set)
			}
		}
	}

	_, line, _ = cookieFor(t, "https", https, "secure.test", "/", dcm.DefaultCookieName(edge))
	if !strings.Contains(line, "HttpOnly; Secure; SameSite=None") {
		t.Errorf("edge route's cookie %q: want HttpOnly; Secure; SameSite=None", line)
	}

	next := st
	next.Backends = nil
	for _, sb := range st.Backends {
		b := *sb // a copy: st shares its backends
		switch b.Name {
		case edge.BackendName():
			b.Route.HTTP.CookieSameSite = dcm.SameSiteStrict
		case root.BackendName():
			b.Route.HTTP.CookieName = "my_cookie-1"
		}
		next.Backends = append(next.Backends, &b)
	}
	mustf(t, d.Apply(context.Background(), mapReplaces(st, next), next), "apply the cookie changes")
	mustf(t, d.Write(next), "write")
	filesEqualRuntime(t, d)
	if _, line, _ = cookieFor(t, "https", https, "secure.test", "/", dcm.DefaultCookieName(edge)); !strings.Contains(line, "Secure; SameSite=Strict") {
		t.Errorf("after the change, edge cookie %q: want SameSite=Strict", line)
	}
	custom, _, pod := cookieFor(t, "http", bind, "web.test", "/", "my_cookie-1")
	for range 10 {
		if got, set := stickyCall(t, "http", bind, "web.test", "/", custom); got != pod || len(set) != 0 {
			t.Fatalf("with the custom cookie: pod %s (want %s), set %q", got, pod, set)
		}
	}
	if workerPID(t, d) != pid {
		t.Error("the worker changed")
	}
}
