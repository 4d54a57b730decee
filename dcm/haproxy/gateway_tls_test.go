package haproxy

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

// tlsPod is a TLS server on 127.0.0.1 that ends TLS itself (a passthrough
// backend) and answers one line: its name and the SNI it got.
func tlsPod(t *testing.T, ca *testkit.CA, name string) dcm.Endpoint {
	t.Helper()
	leaf := ca.Leaf(t, "*.tls.test")
	cert, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
	mustf(t, err, "key pair")
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	mustf(t, err, "listen")
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				tc := c.(*tls.Conn)
				_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
				if tc.Handshake() != nil {
					return
				}
				_, _ = io.WriteString(tc, name+" "+tc.ConnectionState().ServerName+"\n")
			}()
		}
	}()
	a := l.Addr().(*net.TCPAddr)
	return dcm.Endpoint{Name: name + ":tls", Addr: a.IP.String(), Port: a.Port, Weight: 1, State: dcm.StateReady, Pod: name}
}

// tlsAnswer dials bind with sni and reads the pod's line: "" and the
// error when the connection is refused or the handshake fails. The pod's
// line, with the SNI it saw, is the proof the TLS reached it untouched;
// its certificate is not checked (one wildcard takes one label).
func tlsAnswer(bind, sni string) (string, error) {
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second},
		Config: &tls.Config{ServerName: sni, InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}}
	c, err := d.Dial("tcp", bind)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line), err
}

// passthrough is the desired backend of a TLSRoute on a TLS listener.
func passthrough(name, bind, rank, listenerHost string, hosts []string, unresolved bool, eps ...dcm.Endpoint) dcm.DesiredBackend {
	r := dcm.Route{Namespace: "gw", Name: name, Source: dcm.SourceTLSRoute, Object: name, Kind: dcm.KindPassthrough,
		Services: []dcm.ServiceRef{{Name: name, Port: "443", Weight: 1}}, Balance: dcm.DefaultBalance(dcm.KindPassthrough),
		Gateway: &dcm.GatewayRoute{Gateway: "gw/tls", Listener: "tls", Bind: bind, Hostnames: hosts, ListenerHostname: listenerHost,
			Rank: rank, Unresolved: unresolved}}
	return dcm.DesiredBackend{Name: r.BackendName(), Route: r, Endpoints: eps}.WithUpstreamNames()
}

// TestGatewayTLSPassthrough: TLSRoutes' connections are sent by their SNI
// to their TCP backends untouched on a Gateway HTTPS port, an SNI no
// route takes is refused there, an unresolved route refuses, another bind
// of the same port still ends TLS for its HTTPS routes — every change
// (add, hostname, backend, delete) applied at runtime, no reload.
func TestGatewayTLSPassthrough(t *testing.T) {
	t.Parallel()
	const addr, other = "127.0.20.50", "127.0.20.51"
	bind, otherBind := addr+":18443", other+":18443"
	ca := testkit.NewCA(t)
	store := &testkit.CertStore{}
	leafE := ca.Leaf(t, "e.gw.test")
	vE := store.Put("gw/e", leafE.PEM())
	g := startGateway(t, addr, dcm.Desired{}, func(c *DriverConfig) {
		c.Settings.Gateway.Addresses = []string{addr, other}
		c.Settings.Gateway.HTTPSPorts = []int{18443}
		c.Certs = store
	})
	a, b, c := tlsPod(t, ca, "pod-a"), tlsPod(t, ca, "pod-b"), tlsPod(t, ca, "pod-c")
	edge := gwBackend("edge", otherBind, "1", []string{"e.gw.test"}, nil, []dcm.Endpoint{gwPod(t, "127.0.0.1", "edge")}, prefix("/"))
	edge.Route.Kind, edge.Name = dcm.KindEdge, dcm.BackendName(dcm.KindEdge, "gw", "edge")
	edge.Route.TLS = &dcm.TLSRef{Secret: "gw/e", Version: vE}
	edge.Route.Gateway.ListenerHostname = "e.gw.test"

	expect := func(step, sni, want string) {
		t.Helper()
		got, err := tlsAnswer(bind, sni)
		switch {
		case want == "" && err == nil:
			t.Fatalf("%s: SNI %s answered %q, want the connection refused", step, sni, got)
		case want == "" && !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "reset"):
			t.Fatalf("%s: SNI %s: %v, want EOF or reset (refused before TLS)", step, sni, err)
		case want != "" && (err != nil || got != want+" "+sni):
			t.Fatalf("%s: SNI %s → %q %v, want %q", step, sni, got, err, want+" "+sni)
		}
	}
	exact := passthrough("exact", bind, "1", "*.tls.test", []string{"a.tls.test"}, false, a)
	wild := passthrough("wild", bind, "2", "*.tls.test", []string{"*.tls.test"}, false, b)
	g.apply(desiredOf(exact, wild, edge))
	expect("added", "a.tls.test", "pod-a")
	expect("added", "x.tls.test", "pod-b")
	expect("added", "x.y.tls.test", "pod-b")
	expect("added", "other.test", "")
	if code, got, _, err := testkit.HTTPSGet(otherBind, "e.gw.test", "/p", ca.Pool()); err != nil || code != 200 || !strings.HasPrefix(got, "edge /p") {
		t.Fatalf("HTTPS route on the other bind: %d %q %v", code, got, err)
	}

	// A hostname and a backend change: map entries and servers.
	exact = passthrough("exact", bind, "1", "*.tls.test", []string{"b.tls.test"}, false, c)
	g.apply(desiredOf(exact, wild, edge))
	expect("changed", "b.tls.test", "pod-c")
	expect("changed", "a.tls.test", "pod-b")

	// An unresolved route refuses its SNI rather than passing it on.
	exact = passthrough("exact", bind, "1", "*.tls.test", []string{"b.tls.test"}, true)
	g.apply(desiredOf(exact, wild, edge))
	expect("unresolved", "b.tls.test", "")
	expect("unresolved", "x.tls.test", "pod-b")

	// No passthrough route left: the bind ends TLS again, with dcm's
	// default certificate.
	g.apply(desiredOf(edge))
	leaf, err := testkit.ServedLeaf(bind, "x.tls.test", nil)
	if err != nil || leaf.Subject.CommonName != "dcm default certificate" {
		t.Fatalf("deleted: SNI x.tls.test: %v, want a handshake with dcm's default certificate", err)
	}
}
