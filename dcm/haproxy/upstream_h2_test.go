package haproxy

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

// protoPod answers "<name> <protocol of the request it got>": h2c (HTTP/2
// in clear text, prior knowledge) and HTTP/1.1 on l, or over TLS with
// leaf, where Go's server offers h2 by ALPN.
func protoPod(tb testing.TB, ip, name string, leaf *testkit.Leaf) testkit.Backend {
	tb.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	mustf(tb, err, "listen")
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(leaf == nil)
	p.SetHTTP2(leaf != nil)
	srv := &http.Server{Protocols: &p, ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "%s %s", name, r.Proto) })}
	if leaf != nil {
		c, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
		mustf(tb, err, "pod certificate")
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{c}, MinVersion: tls.VersionTLS12}
		go srv.ServeTLS(l, "", "")
	} else {
		go srv.Serve(l)
	}
	tb.Cleanup(func() { srv.Close() })
	a := l.Addr().(*net.TCPAddr)
	return testkit.Backend{Name: name, Addr: a.IP.String(), Port: a.Port}
}

// TestUpstreamHTTP2: HAProxy speaks HTTP/2 to pods, on the real binary. A
// reencrypt route's server offers h2 by ALPN, and a pod that speaks it
// gets it; a server with ProtoH2 speaks h2c, from the cfg and when added
// at runtime (add server … proto h2). The worker never changes.
func TestUpstreamHTTP2(t *testing.T) {
	t.Parallel()
	front, podCA := testkit.NewCA(t), testkit.NewCA(t)
	store := &testkit.CertStore{}
	leaf := podCA.Leaf(t, "web.ns.svc")
	tlsPod := protoPod(t, "127.0.0.7", "tls", &leaf)
	h2c1, h2c2 := protoPod(t, "127.0.0.7", "h2c1", nil), protoPod(t, "127.0.0.7", "h2c2", nil)

	up := dcm.UpstreamTLS{CA: "secret:ns/r-ca", Version: store.Put("secret:ns/r-ca", podCA.CertPEM()), ServerName: "web.ns.svc"}
	re := reencryptRoute("ns", "re", "re.test", store.Put("ns/re-tls", front.Leaf(t, "re.test").PEM()), up)
	plain := route("ns", "plain", "plain.test", "/", dcm.PathPrefix)
	h2server := func(b testkit.Backend, st dcm.AdminState) dcm.Server {
		s := serverFor(b, st)
		s.Proto = dcm.ProtoH2
		return s
	}
	https := testkit.FreeAddr(t)
	d, bind := startDriver(t, state(backendFor(re, tlsServer(tlsPod, dcm.StateReady, up)), backendFor(plain, h2server(h2c1, dcm.StateReady))), func(c *DriverConfig) {
		c.Settings.HTTPSBind = https
		c.Certs = store
		c.CAs = store
	})
	ctx := context.Background()
	info, err := d.Info(ctx)
	mustf(t, err, "info")

	code, body, _, err := testkit.HTTPSGet(https, "re.test", "/", front.Pool())
	if err != nil || code != 200 || body != "tls HTTP/2.0" {
		t.Errorf("reencrypt: %d %q %v, want the pod reached over h2", code, body, err)
	}
	if code, body := get(t, bind, "plain.test", "/"); code != 200 || body != "h2c1 HTTP/2.0" {
		t.Errorf("h2c from the cfg: %d %q, want the pod reached over h2c", code, body)
	}

	next := state(backendFor(re, tlsServer(tlsPod, dcm.StateReady, up)), backendFor(plain, h2server(h2c1, dcm.StateMaint), h2server(h2c2, dcm.StateReady)))
	be := plain.BackendName()
	s2 := h2server(h2c2, dcm.StateReady)
	mustf(t, d.Apply(ctx, []dcm.Op{
		{Kind: dcm.OpAddServer, Backend: be, Server: s2.Name, Addr: s2.Addr, Port: s2.Port, Weight: 1, Endpoint: s2.Name, Proto: dcm.ProtoH2},
		{Kind: dcm.OpSetState, Backend: be, Server: s2.Name, State: dcm.StateReady},
		{Kind: dcm.OpSetState, Backend: be, Server: "s-h2c1", State: dcm.StateMaint},
	}, next), "add the h2c server")
	mustf(t, d.Write(next), "write")
	if code, body := get(t, bind, "plain.test", "/"); code != 200 || body != "h2c2 HTTP/2.0" {
		t.Errorf("h2c added at runtime: %d %q, want the new pod reached over h2c", code, body)
	}
	after, err := d.Info(ctx)
	mustf(t, err, "info")
	if after.Pid != info.Pid {
		t.Errorf("worker changed from %d to %d", info.Pid, after.Pid)
	}
}

// TestUpstreamHTTP2Disabled: with --disable-http2 a reencrypt server
// offers its pod no ALPN, as OpenShift's router: a pod that speaks h2 is
// spoken to over HTTP/1.1, by the server of the cfg and by one added at
// runtime.
func TestUpstreamHTTP2Disabled(t *testing.T) {
	t.Parallel()
	front, podCA := testkit.NewCA(t), testkit.NewCA(t)
	store := &testkit.CertStore{}
	leaf := podCA.Leaf(t, "web.ns.svc")
	pod1, pod2 := protoPod(t, "127.0.0.7", "tls1", &leaf), protoPod(t, "127.0.0.7", "tls2", &leaf)
	up := dcm.UpstreamTLS{CA: "secret:ns/r-ca", Version: store.Put("secret:ns/r-ca", podCA.CertPEM()), ServerName: "web.ns.svc"}
	re := reencryptRoute("ns", "re", "re.test", store.Put("ns/re-tls", front.Leaf(t, "re.test").PEM()), up)
	https := testkit.FreeAddr(t)
	d, _ := startDriver(t, state(backendFor(re, tlsServer(pod1, dcm.StateReady, up))), func(c *DriverConfig) {
		c.Settings.HTTPSBind = https
		c.Settings.HTTP2 = HTTP2{Disabled: true}
		c.Certs = store
		c.CAs = store
	})
	if code, body, _, err := testkit.HTTPSGet(https, "re.test", "/", front.Pool()); err != nil || code != 200 || body != "tls1 HTTP/1.1" {
		t.Errorf("server of the cfg: %d %q %v, want the pod reached over HTTP/1.1", code, body, err)
	}
	s1, s2 := tlsServer(pod1, dcm.StateMaint, up), tlsServer(pod2, dcm.StateReady, up)
	be := re.BackendName()
	next := state(backendFor(re, s1, s2))
	mustf(t, d.Apply(context.Background(), []dcm.Op{
		{Kind: dcm.OpAddServer, Backend: be, Server: s2.Name, Addr: s2.Addr, Port: s2.Port, Weight: 1, Endpoint: s2.Name, Upstream: s2.Upstream},
		{Kind: dcm.OpSetState, Backend: be, Server: s2.Name, State: dcm.StateReady},
		{Kind: dcm.OpSetState, Backend: be, Server: s1.Name, State: dcm.StateMaint},
	}, next), "add a server")
	if code, body, _, err := testkit.HTTPSGet(https, "re.test", "/", front.Pool()); err != nil || code != 200 || body != "tls2 HTTP/1.1" {
		t.Errorf("server added at runtime: %d %q %v, want the pod reached over HTTP/1.1", code, body, err)
	}
}
