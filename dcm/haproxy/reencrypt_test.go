package haproxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

func reencryptRoute(ns, name, host, certVersion string, up dcm.UpstreamTLS) dcm.Route {
	r := edgeRoute(ns, name, host, certVersion)
	r.Kind = dcm.KindReencrypt
	r.Upstream = &up
	return r
}

func tlsServer(e testkit.Backend, state dcm.AdminState, up dcm.UpstreamTLS) dcm.Server {
	s := serverFor(e, state)
	s.Upstream = &up
	return s
}

// TestCACommands drives every CA file command against the real binary: a
// reencrypt route rendered in the cfg (its CA file read from disk), a CA
// rotation at runtime (new ssl ca-file + set + commit, a server added with
// the new file next to the old one, the old one out, del ssl ca-file), and
// HAProxy's verification of the pods: a pod whose certificate another CA
// signed, or that names another host, gets no request (503). A real TLS
// client verifies the frontend certificate; the worker never changes.
func TestCACommands(t *testing.T) {
	t.Parallel()
	front, podCA1, podCA2, rogue := testkit.NewCA(t), testkit.NewCA(t), testkit.NewCA(t), testkit.NewCA(t)
	store := &testkit.CertStore{}
	const svcName = "web.ns.svc"
	podA := testkit.StartTLSBackend(t, "127.0.0.6", "pod-a", podCA1.Leaf(t, svcName))
	podB := testkit.StartTLSBackend(t, "127.0.0.6", "pod-b", podCA2.Leaf(t, svcName))
	podRogue := testkit.StartTLSBackend(t, "127.0.0.6", "pod-rogue", rogue.Leaf(t, svcName))
	podOther := testkit.StartTLSBackend(t, "127.0.0.6", "pod-other", podCA2.Leaf(t, "other.ns.svc"))
	certV := store.Put("ns/r-tls", front.Leaf(t, "r.test").PEM())
	up1 := dcm.UpstreamTLS{CA: "secret:ns/r-ca", Version: store.Put("secret:ns/r-ca", podCA1.CertPEM()), ServerName: svcName}
	up2 := dcm.UpstreamTLS{CA: "secret:ns/r-ca", Version: store.Put("secret:ns/r-ca", podCA2.CertPEM()), ServerName: svcName}

	https := testkit.FreeAddr(t)
	r := reencryptRoute("ns", "r", "r.test", certV, up1)
	st := state(backendFor(r, tlsServer(podA, dcm.StateReady, up1)))
	d, _ := startDriver(t, st, func(c *DriverConfig) {
		c.Settings.HTTPSBind = https
		c.Certs = store
		c.CAs = store
	})
	ctx := context.Background()
	info, err := d.Info(ctx)
	mustf(t, err, "info")

	serves := func(step, want string) {
		t.Helper()
		code, body, _, err := testkit.HTTPSGet(https, "r.test", "/", front.Pool())
		mustf(t, err, "%s: GET https://r.test/", step)
		if want == "" {
			if code != 503 {
				t.Fatalf("%s: https://r.test/ → %d %q, want 503 (no verified pod)", step, code, body)
			}
			return
		}
		if code != 200 || body != want {
			t.Fatalf("%s: https://r.test/ → %d %q, want 200 %q", step, code, body, want)
		}
	}
	apply := func(step string, next dcm.State, ops ...dcm.Op) {
		t.Helper()
		mustf(t, d.Apply(ctx, ops, next), "%s: apply", step)
		mustf(t, d.Write(next), "%s: write", step)
	}
	caFiles := func(step string, want ...string) {
		t.Helper()
		entries, err := os.ReadDir(filepath.Join(d.cfg.WorkDir, CAsDir))
		mustf(t, err, "%s: list CA files", step)
		var got []string
		for _, e := range entries {
			got = append(got, CAsDir+"/"+e.Name())
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: CA files %q, want %q", step, got, want)
		}
	}

	serves("start", "pod-a")
	caFiles("start", CAFile(up1.Version))
	if !strings.Contains(string(d.files.Text()), "server s-pod-a 127.0.0.6:") ||
		!strings.Contains(string(d.files.Text()), " ssl verify required ca-file "+CAFile(up1.Version)+" alpn h2,http/1.1 sni str(web.ns.svc) verifyhost web.ns.svc") {
		t.Fatalf("cfg does not render the upstream TLS:\n%s", d.files.Text())
	}

	// Rotation: the new CA's file, a server with it next to the old one,
	// then the old one out and its file dropped.
	sa, sb := tlsServer(podA, dcm.StateReady, up1), tlsServer(podB, dcm.StateReady, up2)
	r.Upstream = &up2
	st = state(backendFor(r, sa, sb))
	sbAdd := dcm.Op{Kind: dcm.OpAddServer, Backend: r.BackendName(), Server: sb.Name, Addr: sb.Addr, Port: sb.Port, Weight: 1, Upstream: &up2}
	apply("rotate: add", st,
		dcm.Op{Kind: dcm.OpCAAdd, Upstream: &dcm.UpstreamTLS{CA: up2.CA, Version: up2.Version}},
		sbAdd,
		dcm.Op{Kind: dcm.OpSetState, Backend: r.BackendName(), Server: sb.Name, State: dcm.StateReady})
	caFiles("rotate: add", CAFile(up1.Version), CAFile(up2.Version))
	sa.State = dcm.StateMaint
	st = state(backendFor(r, sa, sb))
	apply("rotate: old out", st, dcm.Op{Kind: dcm.OpSetState, Backend: r.BackendName(), Server: sa.Name, State: dcm.StateMaint})
	serves("rotate: old out", "pod-b")
	st = state(backendFor(r, sb))
	apply("rotate: old gone", st,
		dcm.Op{Kind: dcm.OpDelServer, Backend: r.BackendName(), Server: sa.Name},
		dcm.Op{Kind: dcm.OpCADel, Upstream: &dcm.UpstreamTLS{CA: up1.CA, Version: up1.Version}})
	caFiles("rotate: old gone", CAFile(up2.Version))
	serves("rotate: old gone", "pod-b")

	// Verification is on: pods whose certificate the CA did not sign, or
	// that is for another name, get nothing.
	for _, bad := range []testkit.Backend{podRogue, podOther} {
		sx := tlsServer(bad, dcm.StateReady, up2)
		sb.State = dcm.StateMaint
		st = state(backendFor(r, sb, sx))
		apply("unverified "+bad.Name, st,
			dcm.Op{Kind: dcm.OpAddServer, Backend: r.BackendName(), Server: sx.Name, Addr: sx.Addr, Port: sx.Port, Weight: 1, Upstream: &up2},
			dcm.Op{Kind: dcm.OpSetState, Backend: r.BackendName(), Server: sx.Name, State: dcm.StateReady},
			dcm.Op{Kind: dcm.OpSetState, Backend: r.BackendName(), Server: sb.Name, State: dcm.StateMaint})
		serves("unverified "+bad.Name, "")
		sx.State, sb.State = dcm.StateMaint, dcm.StateReady
		st = state(backendFor(r, sb, sx))
		apply("back from "+bad.Name, st,
			dcm.Op{Kind: dcm.OpSetState, Backend: r.BackendName(), Server: sb.Name, State: dcm.StateReady},
			dcm.Op{Kind: dcm.OpSetState, Backend: r.BackendName(), Server: sx.Name, State: dcm.StateMaint})
		st = state(backendFor(r, sb))
		apply("back from "+bad.Name, st, dcm.Op{Kind: dcm.OpDelServer, Backend: r.BackendName(), Server: sx.Name})
		serves("back from "+bad.Name, "pod-b")
	}

	// A CA file that exists already is refused, and its transaction does
	// not linger: the next CA is added as usual.
	err = d.Apply(ctx, []dcm.Op{{Kind: dcm.OpCAAdd, Upstream: &dcm.UpstreamTLS{CA: up2.CA, Version: up2.Version}}}, st)
	if ce := commandErrors(err); len(ce) == 0 || ce[0].Command != "new ssl ca-file "+CAFile(up2.Version) {
		t.Fatalf("CA file added twice: %v", err)
	}
	up1b := dcm.UpstreamTLS{CA: up1.CA, Version: up1.Version, ServerName: svcName}
	sa = tlsServer(podA, dcm.StateReady, up1b)
	st = state(backendFor(r, sa, sb))
	apply("CA back", st,
		dcm.Op{Kind: dcm.OpCAAdd, Upstream: &dcm.UpstreamTLS{CA: up1.CA, Version: up1.Version}},
		dcm.Op{Kind: dcm.OpAddServer, Backend: r.BackendName(), Server: sa.Name, Addr: sa.Addr, Port: sa.Port, Weight: 1, Upstream: &up1b},
		dcm.Op{Kind: dcm.OpSetState, Backend: r.BackendName(), Server: sa.Name, State: dcm.StateReady})
	caFiles("CA back", CAFile(up1.Version), CAFile(up2.Version))

	after, err := d.Info(ctx)
	mustf(t, err, "info")
	if after.Pid != info.Pid {
		t.Errorf("worker changed from %d to %d", info.Pid, after.Pid)
	}
	// A reload loads the same from the files: both pods, each verified
	// with its own CA file.
	_, err = d.Reload(ctx, st)
	mustf(t, err, "reload")
	seen := map[string]bool{}
	for range 6 {
		_, body, _, err := testkit.HTTPSGet(https, "r.test", "/", front.Pool())
		mustf(t, err, "after reload")
		seen[body] = true
	}
	if !seen["pod-a"] || !seen["pod-b"] || len(seen) != 2 {
		t.Fatalf("after reload: served %v, want pod-a and pod-b", seen)
	}
}

// TestReencryptHealthCheck: a health-checked reencrypt server of a pod
// that picks its certificate by SNI (the verified one only for the route's
// server name, another otherwise) goes UP: checks send the server name too.
func TestReencryptHealthCheck(t *testing.T) {
	t.Parallel()
	front, podCA := testkit.NewCA(t), testkit.NewCA(t)
	store := &testkit.CertStore{}
	right, wrong := podCA.Leaf(t, "web.ns.svc"), podCA.Leaf(t, "default.invalid")
	pick := func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
		l := wrong
		if hello.ServerName == "web.ns.svc" {
			l = right
		}
		c, err := tls.X509KeyPair(l.CertPEM, l.KeyPEM)
		return &c, err
	}
	ln, err := tls.Listen("tcp", "127.0.0.6:0", &tls.Config{GetCertificate: pick, MinVersion: tls.VersionTLS12})
	mustf(t, err, "listen")
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "pod-sni") }),
		ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	addr := ln.Addr().(*net.TCPAddr)
	pod := testkit.Backend{Name: "pod-sni", Addr: addr.IP.String(), Port: addr.Port}

	up := dcm.UpstreamTLS{CA: "secret:ns/r-ca", Version: store.Put("secret:ns/r-ca", podCA.CertPEM()), ServerName: "web.ns.svc"}
	r := reencryptRoute("ns", "r", "r.test", store.Put("ns/r-tls", front.Leaf(t, "r.test").PEM()), up)
	r.Check = true
	s := tlsServer(pod, dcm.StateReady, up)
	s.Check = true
	https := testkit.FreeAddr(t)
	d, _ := startDriver(t, state(backendFor(r, s)), func(c *DriverConfig) {
		c.Settings.HTTPSBind = https
		c.Certs = store
		c.CAs = store
	})
	if !strings.Contains(string(d.files.Text()), " check inter 5s ssl verify required ca-file "+CAFile(up.Version)+" alpn h2,http/1.1 sni str(web.ns.svc) verifyhost web.ns.svc check-sni web.ns.svc") {
		t.Fatalf("cfg:\n%s", d.files.Text())
	}
	testkit.Eventually(t, "the checked server UP", 20*time.Second, func() error {
		obs, err := d.Observe(context.Background())
		mustf(t, err, "observe")
		if srvs := obs[r.BackendName()]; len(srvs) != 1 || srvs[0].Health != "UP" {
			return fmt.Errorf("servers %+v", srvs)
		}
		return nil
	})
	code, body, _, err := testkit.HTTPSGet(https, "r.test", "/", front.Pool())
	if err != nil || code != 200 || body != "pod-sni" {
		t.Fatalf("GET: %d %q %v", code, body, err)
	}
}

// TestCACommandText: CA commands name the file by the version alone,
// validated, and the PEM travels as a payload, never in the text.
func TestCACommandText(t *testing.T) {
	ca := testkit.NewCA(t)
	p, err := NormalizePEM(ca.CertPEM())
	mustf(t, err, "normalize")
	cmds, abort, err := CACommands(dcm.Op{Kind: dcm.OpCAAdd, Upstream: &dcm.UpstreamTLS{CA: "secret:ns/ca", Version: "ab12"}}, p)
	mustf(t, err, "ca-add")
	var texts []string
	for _, c := range cmds {
		texts = append(texts, c.String())
	}
	want := []string{"new ssl ca-file cas/ab12.pem", "set ssl ca-file cas/ab12.pem", "commit ssl ca-file cas/ab12.pem"}
	if !slices.Equal(texts, want) || abort == nil || abort.String() != "abort ssl ca-file cas/ab12.pem" || cmds[1].payload != p {
		t.Fatalf("commands %q (abort %v), want %q", texts, abort, want)
	}
	for _, v := range []string{"", "AB", "ab;show info", "../x", "ab\nshow info"} {
		if _, _, err := CACommands(dcm.Op{Kind: dcm.OpCADel, Upstream: &dcm.UpstreamTLS{CA: "secret:ns/ca", Version: v}}, ""); err == nil {
			t.Errorf("version %q: accepted", v)
		}
	}
	for _, u := range []dcm.UpstreamTLS{
		{CA: "secret:ns/ca", Version: "ab", ServerName: "web.ns.svc verify none"},
		{CA: "secret:ns/ca", Version: "ab", ServerName: "web.ns.svc)"},
		// No name is the chain only (a Route's own CA), but a server that
		// verifies its Service's name must have one.
		{CA: "secret:ns/ca", Version: "ab", ServerName: "", PerService: true},
		{CA: "secret:ns/ca", Version: "", ServerName: "web.ns.svc"},
		{CA: "secret:ns/ca;x", Version: "ab", ServerName: "web.ns.svc"},
	} {
		if _, err := CommandFor(dcm.Op{Kind: dcm.OpAddServer, Backend: "be_reencrypt:ns:r", Server: "s", Addr: "127.0.0.1", Port: 1, Weight: 1, Upstream: &u}, HTTP2{}); err == nil {
			t.Errorf("upstream %+v: accepted", u)
		}
	}
}

// TestApplyBusyKeepsCAFile: when HAProxy refuses the del server of the
// last server using a CA file (a request in flight on it), the plan's
// del ssl ca-file of that file is not sent but handed back in the
// BusyError: the server may come back into use (a rollback), and dcm still
// lists the file. Once the server is deleted, so is the file, once.
func TestApplyBusyKeepsCAFile(t *testing.T) {
	t.Parallel()
	front, podCA1, podCA2 := testkit.NewCA(t), testkit.NewCA(t), testkit.NewCA(t)
	store := &testkit.CertStore{}
	const svcName = "web.ns.svc"
	podA := testkit.StartTLSBackend(t, "127.0.0.7", "pod-a", podCA1.Leaf(t, svcName))
	podB := testkit.StartTLSBackend(t, "127.0.0.7", "pod-b", podCA2.Leaf(t, svcName))
	certV := store.Put("ns/r-tls", front.Leaf(t, "r.test").PEM())
	up1 := dcm.UpstreamTLS{CA: "secret:ns/r-ca", Version: store.Put("secret:ns/r-ca", podCA1.CertPEM()), ServerName: svcName}
	up2 := dcm.UpstreamTLS{CA: "secret:ns/r-ca", Version: store.Put("secret:ns/r-ca", podCA2.CertPEM()), ServerName: svcName}
	https := testkit.FreeAddr(t)
	r := reencryptRoute("ns", "r", "r.test", certV, up2)
	sa, sb := tlsServer(podA, dcm.StateReady, up1), tlsServer(podB, dcm.StateMaint, up2)
	d, _ := startDriver(t, state(backendFor(r, sa, sb)), func(c *DriverConfig) {
		c.Settings.HTTPSBind = https
		c.Certs = store
		c.CAs = store
	})
	ctx := context.Background()
	be := r.BackendName()

	done := make(chan string, 1)
	go func() {
		code, body, _, err := testkit.HTTPSGet(https, "r.test", "/?ms=1500", front.Pool())
		done <- fmt.Sprintf("%d %s %v", code, body, err)
	}()
	testkit.Eventually(t, "the slow request on "+sa.Name, 5*time.Second, sessionOn(t, d, be, sa.Name))
	caDel := dcm.Op{Kind: dcm.OpCADel, Backend: be, Upstream: &dcm.UpstreamTLS{CA: up1.CA, Version: up1.Version}}
	sb.State = dcm.StateReady
	next := state(backendFor(r, sb))
	err := d.Apply(ctx, []dcm.Op{
		{Kind: dcm.OpSetState, Backend: be, Server: sb.Name, State: dcm.StateReady},
		{Kind: dcm.OpSetState, Backend: be, Server: sa.Name, State: dcm.StateMaint},
		{Kind: dcm.OpDelServer, Backend: be, Server: sa.Name},
		caDel,
	}, next)
	var busy *BusyError
	if !errors.As(err, &busy) || !slices.Equal(busy.Servers, []string{be + "/" + sa.Name}) {
		t.Fatalf("apply: %v, want a BusyError for %s", err, sa.Name)
	}
	if len(busy.Unsent) != 1 || busy.Unsent[0].Kind != dcm.OpCADel || busy.Unsent[0].Upstream.Version != up1.Version {
		t.Fatalf("unsent %+v, want the ca-del of %s", busy.Unsent, up1.Version)
	}
	if got := <-done; got != "200 pod-a <nil>" {
		t.Errorf("the request in flight: %s, want 200 pod-a", got)
	}
	// The file is still HAProxy's: deleting it after its server goes
	// through (it would fail "doesn't exist" had it been sent).
	testkit.Eventually(t, "del server after the request", 30*time.Second,
		delServer(t, d, []dcm.Op{{Kind: dcm.OpDelServer, Backend: be, Server: sa.Name}}, next))
	mustf(t, d.Apply(ctx, []dcm.Op{caDel}, next), "del ssl ca-file after its last server")
}
