package haproxy

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

// negotiated is the ALPN protocol HAProxy picks for a client offering h2
// and http/1.1 with host as SNI ("" when it offers none).
func negotiated(tb testing.TB, addr, host string) string {
	tb.Helper()
	d := &tls.Dialer{Config: &tls.Config{ServerName: host, InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}, MinVersion: tls.VersionTLS12}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := d.DialContext(ctx, "tcp", addr)
	mustf(tb, err, "TLS to %s", host)
	defer c.Close()
	return c.(*tls.Conn).ConnectionState().NegotiatedProtocol
}

// h2Get asks for https://host/ over HTTP/2 (Go's client negotiates it by
// ALPN) and returns the protocol of the response and its body.
func h2Get(tb testing.TB, addr, host string, pool *tls.Config) (string, string) {
	tb.Helper()
	tr := &http.Transport{
		TLSClientConfig:   pool,
		ForceAttemptHTTP2: true,
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("https://" + host + "/")
	mustf(tb, err, "GET https://%s/", host)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	mustf(tb, err, "read https://%s/", host)
	return resp.Proto, string(b)
}

// protoVersionBackend answers with the X-Forwarded-Proto-Version header it got.
func protoVersionBackend(tb testing.TB, ip string) testkit.Backend {
	tb.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	mustf(tb, err, "listen")
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "version=%s", r.Header.Get("X-Forwarded-Proto-Version"))
	}), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	tb.Cleanup(func() { srv.Close() })
	a := l.Addr().(*net.TCPAddr)
	return testkit.Backend{Name: "proto", Addr: a.IP.String(), Port: a.Port}
}

// TestHTTP2ALPN: HAProxy offers h2 by OpenShift's rule, on the real
// binary. A host with a certificate of its own negotiates h2 (from the
// files at start, and when added at runtime), and the pod sees
// X-Forwarded-Proto-Version h2; the default certificate negotiates
// http/1.1; when a second host starts serving the same certificate, both
// fall back to http/1.1 at runtime, and the crt-list on disk says the same.
// The worker never changes.
func TestHTTP2ALPN(t *testing.T) {
	t.Parallel()
	ca := testkit.NewCA(t)
	store := &testkit.CertStore{}
	app := protoVersionBackend(t, "127.0.0.6")
	va := store.Put("ns/a-tls", ca.Leaf(t, "a.test").PEM())
	vc := store.Put("ns/c-tls", ca.Leaf(t, "c.test").PEM())
	https := testkit.FreeAddr(t)
	a, c := edgeRoute("ns", "a", "a.test", va), edgeRoute("ns", "c", "c.test", vc)
	d := edgeRoute("ns", "d", "d.test", "")
	srv := func() dcm.Server { return serverFor(app, dcm.StateReady) }
	st := state(backendFor(a, srv()), backendFor(d, srv()))
	drv, _ := startDriver(t, st, func(c *DriverConfig) {
		c.Settings.HTTPSBind = https
		c.Certs = store
	})
	ctx := context.Background()
	info, err := drv.Info(ctx)
	mustf(t, err, "info")
	apply := func(step string, next dcm.State, ops ...dcm.Op) {
		t.Helper()
		mustf(t, drv.Apply(ctx, ops, next), "%s: apply", step)
		mustf(t, drv.Write(next), "%s: write", step)
	}
	expect := func(step string, want map[string]string) {
		t.Helper()
		for host, proto := range want {
			if got := negotiated(t, https, host); got != proto {
				t.Errorf("%s: %s negotiated %q, want %q", step, host, got, proto)
			}
		}
	}

	expect("start", map[string]string{"a.test": "h2", "d.test": "http/1.1", "other.test": "http/1.1"})
	proto, body := h2Get(t, https, "a.test", &tls.Config{ServerName: "a.test", RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12})
	if proto != "HTTP/2.0" || body != "version=h2" {
		t.Errorf("a.test over h2: %s %q, want HTTP/2.0 and the pod told version=h2", proto, body)
	}

	st = state(backendFor(a, srv()), backendFor(c, srv()), backendFor(d, srv()))
	cc := dcm.CertsOf(st.Backends)[1]
	apply("add c", st, dcm.Op{Kind: dcm.OpCertAdd, Cert: &cc})
	expect("add c", map[string]string{"a.test": "h2", "c.test": "h2"})

	// d.test serves c.test's certificate: neither is offered h2 now.
	d.TLS = &dcm.TLSRef{Secret: "ns/c-tls", Version: vc}
	next := state(backendFor(a, srv()), backendFor(c, srv()), backendFor(d, srv()))
	certs := dcm.CertsOf(next.Backends)
	if certs[1].H2 || certs[2].H2 || !certs[0].H2 {
		t.Fatalf("certificates %+v: want h2 on a.test only", certs)
	}
	apply("share", next, dcm.Op{Kind: dcm.OpCertDel, Cert: &cc}, dcm.Op{Kind: dcm.OpCertAdd, Cert: &certs[1]}, dcm.Op{Kind: dcm.OpCertAdd, Cert: &certs[2]})
	expect("share", map[string]string{"a.test": "h2", "c.test": "http/1.1", "d.test": "http/1.1"})
	list, err := os.ReadFile(filepath.Join(drv.cfg.WorkDir, CrtListName))
	mustf(t, err, "read crt-list")
	want := "certs/a.test.pem [alpn h2,http/1.1] a.test\ncerts/c.test.pem [alpn http/1.1] c.test\ncerts/d.test.pem [alpn http/1.1] d.test\n"
	if string(list) != want {
		t.Errorf("crt-list on disk:\n%s\nwant:\n%s", list, want)
	}

	after, err := drv.Info(ctx)
	mustf(t, err, "info")
	if after.Pid != info.Pid {
		t.Errorf("worker changed from %d to %d", info.Pid, after.Pid)
	}
}

// TestHTTP2Flags: --enable-http2-default-cert offers h2 with the default
// certificate too, and --disable-http2 offers it nowhere, a host's own
// certificate included.
func TestHTTP2Flags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name            string
		h2              HTTP2
		own, defaultCrt string
	}{
		{"default cert", HTTP2{DefaultCert: true}, "h2", "h2"},
		{"disabled", HTTP2{Disabled: true, DefaultCert: true}, "http/1.1", "http/1.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ca := testkit.NewCA(t)
			store := &testkit.CertStore{}
			app := testkit.StartBackend(t, "127.0.0.6", "app")
			a := edgeRoute("ns", "a", "a.test", store.Put("ns/a-tls", ca.Leaf(t, "a.test").PEM()))
			https := testkit.FreeAddr(t)
			startDriver(t, state(backendFor(a, serverFor(app, dcm.StateReady))), func(c *DriverConfig) {
				c.Settings.HTTPSBind = https
				c.Settings.HTTP2 = tc.h2
				c.Certs = store
			})
			if got := negotiated(t, https, "a.test"); got != tc.own {
				t.Errorf("own certificate negotiated %q, want %q", got, tc.own)
			}
			if got := negotiated(t, https, "other.test"); got != tc.defaultCrt {
				t.Errorf("default certificate negotiated %q, want %q", got, tc.defaultCrt)
			}
		})
	}
}

// TestUpstreamArgs: a reencrypt server offers h2 and verifies its pod's
// name, sent as SNI, or, with no name (a Route's own destination CA, as
// OpenShift), the chain only, with neither SNI nor verifyhost. With h2
// disabled it offers no ALPN, as OpenShift's router under
// ROUTER_DISABLE_HTTP2, in the cfg's server line and in add server alike.
func TestUpstreamArgs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		up    dcm.UpstreamTLS
		check bool
		h2    HTTP2
		want  string
	}{
		{"a name", dcm.UpstreamTLS{CA: "file:default", Version: "ab", ServerName: "web.ns.svc"}, true, HTTP2{},
			" ssl verify required ca-file cas/ab.pem alpn h2,http/1.1 sni str(web.ns.svc) verifyhost web.ns.svc check-sni web.ns.svc"},
		{"the chain only", dcm.UpstreamTLS{CA: "route:ns/r", Version: "ab"}, true, HTTP2{},
			" ssl verify required ca-file cas/ab.pem alpn h2,http/1.1"},
		{"h2 disabled", dcm.UpstreamTLS{CA: "route:ns/r", Version: "ab"}, false, HTTP2{Disabled: true},
			" ssl verify required ca-file cas/ab.pem"},
		{"h2 on the default certificate too", dcm.UpstreamTLS{CA: "route:ns/r", Version: "ab"}, false, HTTP2{DefaultCert: true},
			" ssl verify required ca-file cas/ab.pem alpn h2,http/1.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := dcm.Server{Name: "s", Addr: "127.0.0.1", Port: 8443, Weight: 1, State: dcm.StateMaint, Endpoint: "s", Check: tc.check, Upstream: &tc.up}
			line, err := ServerArgs(srv, tc.h2)
			if err != nil || !strings.HasSuffix(line, tc.want+" disabled") {
				t.Errorf("server line %q, %v\nwant it to end %q", line, err, tc.want+" disabled")
			}
			cmd, err := CommandFor(dcm.Op{Kind: dcm.OpAddServer, Backend: "be_reencrypt:ns:r", Server: "s", Addr: "127.0.0.1", Port: 8443, Weight: 1, Check: tc.check, Upstream: &tc.up}, tc.h2)
			if err != nil || cmd.String() != "add server be_reencrypt:ns:r/s "+line {
				t.Errorf("add server %q, %v\nwant the server line's arguments %q", cmd, err, line)
			}
		})
	}
}
