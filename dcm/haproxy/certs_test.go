package haproxy

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

func edgeRoute(ns, name, host, version string) dcm.Route {
	r := route(ns, name, host, "/", dcm.PathPrefix)
	r.Kind = dcm.KindEdge
	r.TLS = &dcm.TLSRef{Secret: ns + "/" + name + "-tls", Version: version}
	return r
}

// TestCertCommands drives every certificate command against the real
// binary: an edge route served with its certificate from the files, a
// rotation (set + commit), a host added (new + set + commit + add crt-list)
// and removed (del crt-list + del cert), and a rejected certificate whose
// transaction is aborted so the next rotation still works. A real TLS
// client checks which leaf is served after each step; the worker never
// changes.
func TestCertCommands(t *testing.T) {
	t.Parallel()
	ca := testkit.NewCA(t)
	store := &testkit.CertStore{}
	app := testkit.StartBackend(t, "127.0.0.5", "app")
	leaf1, leaf2, leafB := ca.Leaf(t, "a.test"), ca.Leaf(t, "a.test"), ca.Leaf(t, "b.test")
	v1 := store.Put("ns/a-tls", leaf1.PEM())
	v2 := store.Put("ns/a-tls", leaf2.PEM())
	vb := store.Put("ns/b-tls", leafB.PEM())
	vBad := store.Put("ns/a-tls", append(leaf2.CertPEM, leaf1.KeyPEM...)) // key of another certificate

	https := testkit.FreeAddr(t)
	a := edgeRoute("ns", "a", "a.test", v1)
	// b.test is routed from the start, without a certificate yet (its
	// Secret is not valid): the default certificate serves it.
	b := edgeRoute("ns", "b", "b.test", "")
	st := state(backendFor(a, serverFor(app, dcm.StateReady)), backendFor(b, serverFor(app, dcm.StateReady)))
	d, _ := startDriver(t, st, func(c *DriverConfig) {
		c.Settings.HTTPSBind = https
		c.Certs = store
	})
	ctx := context.Background()
	info, err := d.Info(ctx)
	mustf(t, err, "info")

	serves := func(step, host string, want *testkit.Leaf) {
		t.Helper()
		if want == nil {
			leaf, err := testkit.ServedLeaf(https, host, nil)
			mustf(t, err, "%s: TLS to %s", step, host)
			if leaf.Subject.CommonName != "dcm default certificate" {
				t.Fatalf("%s: %s served %q, want the default certificate", step, host, leaf.Subject.CommonName)
			}
			return
		}
		code, body, leaf, err := testkit.HTTPSGet(https, host, "/", ca.Pool())
		mustf(t, err, "%s: GET https://%s/", step, host)
		if code != 200 || body != "app" {
			t.Fatalf("%s: https://%s/ → %d %q", step, host, code, body)
		}
		if leaf.SerialNumber.Cmp(want.Cert.SerialNumber) != 0 {
			t.Fatalf("%s: %s served serial %s, want %s", step, host, leaf.SerialNumber, want.Cert.SerialNumber)
		}
	}
	apply := func(step string, next dcm.State, ops ...dcm.Op) {
		t.Helper()
		mustf(t, d.Apply(ctx, ops, next), "%s: apply", step)
		mustf(t, d.Write(next), "%s: write", step)
	}
	cert := func(host, secret, version string) *dcm.Cert {
		return &dcm.Cert{Host: host, Secret: secret, Version: version}
	}
	onDisk := func(step, name, want string) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(d.cfg.WorkDir, name))
		mustf(t, err, "%s: read %s", step, name)
		if string(b) != want {
			t.Fatalf("%s: %s on disk:\n%s\nwant:\n%s", step, name, b, want)
		}
	}

	serves("start", "a.test", &leaf1)
	fi, err := os.Stat(filepath.Join(d.cfg.WorkDir, CertFile("a.test")))
	mustf(t, err, "stat")
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("certificate file mode %v, want 0600", fi.Mode().Perm())
	}

	a.TLS.Version = v2
	st = state(backendFor(a, serverFor(app, dcm.StateReady)), backendFor(b, serverFor(app, dcm.StateReady)))
	apply("rotate", st, dcm.Op{Kind: dcm.OpCertUpdate, Cert: cert("a.test", "ns/a-tls", v2)})
	serves("rotate", "a.test", &leaf2)
	p, _ := NormalizePEM(leaf2.PEM())
	onDisk("rotate", CertFile("a.test"), p+"\n")

	b.TLS.Version = vb
	st = state(backendFor(a, serverFor(app, dcm.StateReady)), backendFor(b, serverFor(app, dcm.StateReady)))
	serves("before add", "b.test", nil)
	apply("add", st, dcm.Op{Kind: dcm.OpCertAdd, Cert: cert("b.test", "ns/b-tls", vb)})
	serves("add", "b.test", &leafB)
	onDisk("add", CrtListName, "certs/a.test.pem [alpn h2,http/1.1] a.test\ncerts/b.test.pem [alpn h2,http/1.1] b.test\n")

	// A certificate HAProxy refuses: the transaction is aborted, the old
	// certificate keeps being served, and the next rotation works.
	err = d.Apply(ctx, []dcm.Op{{Kind: dcm.OpCertUpdate, Cert: cert("a.test", "ns/a-tls", vBad)}}, st)
	// 2.6 takes the payload and refuses it at the commit, leaving the
	// transaction open: without the abort, the next set would fail.
	if ce := commandErrors(err); len(ce) == 0 || ce[0].Command != "commit ssl cert certs/a.test.pem" {
		t.Fatalf("bad certificate: %v", err)
	}
	if strings.Contains(err.Error(), "PRIVATE KEY") {
		t.Fatalf("the error carries the key: %v", err)
	}
	serves("refused", "a.test", &leaf2)
	a.TLS.Version = v1
	st = state(backendFor(a, serverFor(app, dcm.StateReady)), backendFor(b, serverFor(app, dcm.StateReady)))
	apply("rotate back", st, dcm.Op{Kind: dcm.OpCertUpdate, Cert: cert("a.test", "ns/a-tls", v1)})
	serves("rotate back", "a.test", &leaf1)

	b.TLS.Version = ""
	st = state(backendFor(a, serverFor(app, dcm.StateReady)), backendFor(b, serverFor(app, dcm.StateReady)))
	apply("del", st, dcm.Op{Kind: dcm.OpCertDel, Cert: cert("b.test", "ns/b-tls", vb)})
	serves("del", "b.test", nil)
	onDisk("del", CrtListName, "certs/a.test.pem [alpn h2,http/1.1] a.test\n")
	if _, err := os.Stat(filepath.Join(d.cfg.WorkDir, CertFile("b.test"))); !os.IsNotExist(err) {
		t.Errorf("b.test's certificate is still on disk: %v", err)
	}

	after, err := d.Info(ctx)
	mustf(t, err, "info")
	if after.Pid != info.Pid {
		t.Errorf("worker changed from %d to %d", info.Pid, after.Pid)
	}
	// A reload loads the same from the files.
	_, err = d.Reload(ctx, st)
	mustf(t, err, "reload")
	serves("reload", "a.test", &leaf1)
	serves("reload", "b.test", nil)
}

// TestCertCommandText: what reaches the socket is built from validated
// parts only — a host that could smuggle a command is refused, a PEM is
// reduced to its blocks (no CR, no blank line that would end the payload
// early), and the payload never appears in the command's text.
func TestCertCommandText(t *testing.T) {
	ca := testkit.NewCA(t)
	leaf := ca.Leaf(t, "a.test")
	messy := strings.ReplaceAll("junk before\n"+string(leaf.CertPEM)+"\n\n"+string(leaf.KeyPEM)+"trailing", "\n", "\r\n")
	p, err := NormalizePEM([]byte(messy))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(p, "\r") || strings.Contains(p, "\n\n") || strings.Contains(p, "junk") || strings.HasSuffix(p, "\n") {
		t.Fatalf("normalized PEM: %q", p)
	}
	if _, err := NormalizePEM([]byte("no pem here")); err == nil {
		t.Error("accepted a file without PEM")
	}
	cmds, abort, err := CertCommands(dcm.Op{Kind: dcm.OpCertAdd, Cert: &dcm.Cert{Host: "a.test", Secret: "ns/a", Version: "aa"}}, p, HTTP2{})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, c := range cmds {
		texts = append(texts, c.String())
	}
	want := []string{"new ssl cert certs/a.test.pem", "set ssl cert certs/a.test.pem", "commit ssl cert certs/a.test.pem", "add ssl crt-list certs.list"}
	if !slices.Equal(texts, want) || abort == nil || abort.String() != "abort ssl cert certs/a.test.pem" {
		t.Fatalf("commands %q (abort %v), want %q", texts, abort, want)
	}
	if cmds[1].payload != p || cmds[3].payload != "certs/a.test.pem [alpn http/1.1] a.test" {
		t.Fatalf("payloads %q, %q", cmds[1].payload, cmds[3].payload)
	}
	// No host is the default certificate: updated in place, never
	// added or deleted (TestDefaultCertCommandText).
	for _, host := range []string{"a.test;show info", "a.test\nshow info", "../etc", "*.test", "A.TEST"} {
		if _, _, err := CertCommands(dcm.Op{Kind: dcm.OpCertUpdate, Cert: &dcm.Cert{Host: host}}, p, HTTP2{}); err == nil {
			t.Errorf("host %q: accepted", host)
		}
	}
	if _, _, err := CertCommands(dcm.Op{Kind: dcm.OpCertUpdate, Cert: &dcm.Cert{Host: "a.test"}}, p+"\n\nshow info", HTTP2{}); err == nil {
		t.Error("a payload with an empty line: accepted")
	}
}

// TestCertForgottenBeforeWrite: the source forgets a Secret (its route was
// rejected) after the engine applied a state naming it and before the
// engine wrote that state. The write still succeeds with the certificate
// HAProxy was sent — a failed write forces a reload — and once a written
// state no longer names the version, the driver forgets it too.
func TestCertForgottenBeforeWrite(t *testing.T) {
	t.Parallel()
	ca := testkit.NewCA(t)
	store := &testkit.CertStore{}
	app := testkit.StartBackend(t, "127.0.0.5", "app")
	leaf := ca.Leaf(t, "c.test")
	v := store.Put("ns/c-tls", leaf.PEM())
	https := testkit.FreeAddr(t)
	without := state(backendFor(edgeRoute("ns", "c", "c.test", ""), serverFor(app, dcm.StateReady)))
	withCert := state(backendFor(edgeRoute("ns", "c", "c.test", v), serverFor(app, dcm.StateReady)))
	d, _ := startDriver(t, without, func(cfg *DriverConfig) {
		cfg.Settings.HTTPSBind = https
		cfg.Certs = store
	})
	ctx := context.Background()

	add := dcm.Op{Kind: dcm.OpCertAdd, Cert: &dcm.Cert{Host: "c.test", Secret: "ns/c-tls", Version: v}}
	mustf(t, d.Apply(ctx, []dcm.Op{add}, withCert), "apply")
	store.Forget("ns/c-tls")
	mustf(t, d.Write(withCert), "write after the source forgot")
	b, err := os.ReadFile(filepath.Join(d.cfg.WorkDir, CertFile("c.test")))
	mustf(t, err, "read")
	if p, _ := NormalizePEM(leaf.PEM()); string(b) != p+"\n" {
		t.Fatalf("c.test's certificate on disk:\n%s", b)
	}
	code, body, _, err := testkit.HTTPSGet(https, "c.test", "/", ca.Pool())
	if err != nil || code != 200 || body != "app" {
		t.Fatalf("https://c.test/ → %d %q %v", code, body, err)
	}

	del := dcm.Op{Kind: dcm.OpCertDel, Cert: &dcm.Cert{Host: "c.test", Secret: "ns/c-tls", Version: v}}
	mustf(t, d.Apply(ctx, []dcm.Op{del}, without), "apply del")
	mustf(t, d.Write(without), "write without")
	if err := d.Write(withCert); err == nil {
		t.Fatal("a version no written state names any more was still at hand")
	}
}
