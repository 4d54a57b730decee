package haproxy

import (
	"context"
	"testing"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

// TestHSTS: an edge route's Strict-Transport-Security header is sent on its
// HTTPS responses only, with its value (';' and all, through the runtime
// API too), and changes by a map replace with the same worker. The
// route's response header actions run before it, as a backend's
// http-response rules run before the frontend's: an action that copies
// the header sees none.
func TestHSTS(t *testing.T) {
	t.Parallel()
	ca := testkit.NewCA(t)
	store := &testkit.CertStore{}
	pod := startHeaderPod(t, "127.0.0.5")
	https := testkit.FreeAddr(t)
	r := edgeRoute("ns", "secure", "secure.test", store.Put("ns/secure-tls", ca.Leaf(t, "secure.test").PEM()))
	r.HTTP.HSTS = "max-age=31536000;includeSubDomains"
	r.Headers = &dcm.HeaderActions{Response: []dcm.HeaderAction{
		{Name: "X-Seen-HSTS", Type: dcm.HeaderSet, Value: "[%[res.hdr(Strict-Transport-Security)]]"}}}
	other := edgeRoute("ns", "other", "other.test", "")
	st := state(backendFor(r, serverFor(pod, dcm.StateReady)), backendFor(other, serverFor(pod, dcm.StateReady)))
	d, bind := startDriver(t, st, func(c *DriverConfig) {
		c.Settings.HTTPSBind = https
		c.Certs = store
	})
	pid := workerPID(t, d)
	hsts := func(scheme, addr, host string) string {
		t.Helper()
		resp, _ := request(t, scheme, addr, host, "/", nil)
		if resp.StatusCode != 200 {
			t.Fatalf("%s://%s: %d", scheme, host, resp.StatusCode)
		}
		return resp.Header.Get("Strict-Transport-Security")
	}
	if got := hsts("https", https, "secure.test"); got != r.HTTP.HSTS {
		t.Errorf("https: %q, want %q", got, r.HTTP.HSTS)
	}
	if resp, _ := request(t, "https", https, "secure.test", "/", nil); resp.Header.Get("X-Seen-HSTS") != "[]" {
		t.Errorf("the header action saw %q, want [] (it runs before HSTS)", resp.Header.Get("X-Seen-HSTS"))
	}
	if got := hsts("http", bind, "secure.test"); got != "" {
		t.Errorf("http: %q, want none", got)
	}
	if got := hsts("https", https, "other.test"); got != "" {
		t.Errorf("a route without HSTS: %q", got)
	}

	next := st
	next.Backends = nil
	for _, sb := range st.Backends {
		b := *sb // a copy: st shares its backends
		if b.Name == r.BackendName() {
			b.Route.HTTP.HSTS = "max-age=60;includeSubDomains;preload"
		}
		next.Backends = append(next.Backends, &b)
	}
	mustf(t, d.Apply(context.Background(), mapReplaces(st, next), next), "apply the HSTS change")
	mustf(t, d.Write(next), "write")
	filesEqualRuntime(t, d)
	if got := hsts("https", https, "secure.test"); got != "max-age=60;includeSubDomains;preload" {
		t.Errorf("after the change: %q", got)
	}
	if workerPID(t, d) != pid {
		t.Error("the worker changed")
	}
}
