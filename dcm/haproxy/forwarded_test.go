package haproxy

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

// TestForwardedHeaders sends requests with a client's own X-Forwarded-For
// through HAProxy, over HTTP and over HTTPS (edge), to routes of each
// policy and checks what the pod sees; then a route's policy changes by a
// map replace, with the same worker. Plain HTTP never passes a client's
// X-Forwarded-Proto: https on.
func TestForwardedHeaders(t *testing.T) {
	t.Parallel()
	ca := testkit.NewCA(t)
	store := &testkit.CertStore{}
	pod := startHeaderPod(t, "127.0.0.3")
	https := testkit.FreeAddr(t)
	var backends []dcm.Backend
	for _, p := range dcm.ForwardedPolicies {
		r := edgeRoute("ns", string(p), string(p)+".test", store.Put("ns/"+string(p)+"-tls", ca.Leaf(t, string(p)+".test").PEM()))
		r.HTTP.Forwarded = p
		backends = append(backends, backendFor(r, serverFor(pod, dcm.StateReady)))
	}
	def := edgeRoute("ns", "default", "default.test", "")
	backends = append(backends, backendFor(def, serverFor(pod, dcm.StateReady)))
	st := state(backends...)
	d, bind := startDriver(t, st, func(c *DriverConfig) {
		c.Settings.HTTPSBind = https
		c.Certs = store
	})
	pid := workerPID(t, d)
	const theirs = "203.0.113.9"
	want := map[dcm.ForwardedPolicy][]string{
		dcm.ForwardAppend: {theirs, "127.0.0.1"}, dcm.ForwardReplace: {"127.0.0.1"},
		dcm.ForwardIfNone: {theirs}, dcm.ForwardNever: {theirs},
	}
	want[""] = want[dcm.ForwardAppend]
	seen := func(scheme, addr string, p dcm.ForwardedPolicy, hdr map[string]string) http.Header {
		t.Helper()
		host := string(p) + ".test"
		if p == "" {
			host = "default.test"
		}
		resp, body := request(t, scheme, addr, host, "/", hdr)
		return seenHeaders(t, resp, body)
	}
	for _, sc := range []struct{ scheme, addr, proto, port string }{{"http", bind, "http", portOf(bind)}, {"https", https, "https", portOf(https)}} {
		for p, xff := range want {
			h := seen(sc.scheme, sc.addr, p, map[string]string{"X-Forwarded-For": theirs, "X-Forwarded-Proto": "https"})
			if got := h.Values("X-Forwarded-For"); strings.Join(got, ",") != strings.Join(xff, ",") {
				t.Errorf("%s %q: X-Forwarded-For %v, want %v", sc.scheme, p, got, xff)
			}
			if p == dcm.ForwardNever {
				if sc.scheme == "http" && h.Get("X-Forwarded-Proto") != "" {
					t.Errorf("http never: the client's X-Forwarded-Proto reached the pod: %v", h.Values("X-Forwarded-Proto"))
				}
				if h.Get("X-Forwarded-Host") != "" || h.Get("Forwarded") != "" {
					t.Errorf("%s never: X-Forwarded-Host %q Forwarded %q", sc.scheme, h.Get("X-Forwarded-Host"), h.Get("Forwarded"))
				}
				continue
			}
			if got := h.Values("X-Forwarded-Proto"); len(got) != 1 || got[0] != sc.proto {
				t.Errorf("%s %q: X-Forwarded-Proto %v, want %s", sc.scheme, p, got, sc.proto)
			}
			if h.Get("X-Forwarded-Host") != h.Get("Host") || h.Get("X-Forwarded-Port") != sc.port {
				t.Errorf("%s %q: X-Forwarded-Host %q (Host %q), -Port %q want %s", sc.scheme, p, h.Get("X-Forwarded-Host"), h.Get("Host"), h.Get("X-Forwarded-Port"), sc.port)
			}
			fwd := "for=127.0.0.1;host=" + h.Get("Host") + ";proto=" + sc.proto + `;proto-version=""`
			if p != dcm.ForwardIfNone && h.Get("Forwarded") != fwd {
				t.Errorf("%s %q: Forwarded %v, want %q", sc.scheme, p, h.Values("Forwarded"), fwd)
			}
		}
	}

	// append → replace on the default route, at runtime.
	next := st
	next.Backends = nil
	for _, sb := range st.Backends {
		b := *sb // a copy: st shares its backends
		if b.Name == def.BackendName() {
			b.Route.HTTP.Forwarded = dcm.ForwardReplace
		}
		next.Backends = append(next.Backends, &b)
	}
	mustf(t, d.Apply(context.Background(), mapReplaces(st, next), next), "apply the policy change")
	mustf(t, d.Write(next), "write")
	filesEqualRuntime(t, d)
	if got := seen("http", bind, "", map[string]string{"X-Forwarded-For": theirs}).Values("X-Forwarded-For"); strings.Join(got, ",") != "127.0.0.1" {
		t.Errorf("after the change to replace: X-Forwarded-For %v", got)
	}
	if workerPID(t, d) != pid {
		t.Error("the worker changed")
	}
}

func portOf(addr string) string {
	i := strings.LastIndexByte(addr, ':')
	return addr[i+1:]
}
