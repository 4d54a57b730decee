package haproxy

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

// TestDefaultCertRotation drives the default certificate against the real
// binary: started with a Secret's certificate, rotated (set + commit on
// default.pem), then back to the self-signed one, each served to a host
// without a certificate of its own while a host with one keeps its own;
// default.pem on disk follows every step, the self-signed file stays, the
// worker never changes and a reload serves the same from the files.
func TestDefaultCertRotation(t *testing.T) {
	t.Parallel()
	ca := testkit.NewCA(t)
	store := &testkit.CertStore{}
	app := testkit.StartBackend(t, "127.0.0.5", "app")
	def1, def2, leafA := ca.Leaf(t, "apps.test"), ca.Leaf(t, "apps.test"), ca.Leaf(t, "a.test")
	v1 := store.Put("ingress/default-tls", def1.PEM())
	v2 := store.Put("ingress/default-tls", def2.PEM())
	va := store.Put("ns/a-tls", leafA.PEM())

	https := testkit.FreeAddr(t)
	a := edgeRoute("ns", "a", "a.test", va)
	st := state(backendFor(a, serverFor(app, dcm.StateReady)))
	st.DefaultCert = dcm.Cert{Secret: "ingress/default-tls", Version: v1}
	d, _ := startDriver(t, st, func(c *DriverConfig) {
		c.Settings.HTTPSBind = https
		c.Certs = store
	})
	ctx := context.Background()
	info, err := d.Info(ctx)
	mustf(t, err, "info")

	serves := func(step, host string, want *testkit.Leaf) {
		t.Helper()
		leaf, err := testkit.ServedLeaf(https, host, nil)
		mustf(t, err, "%s: TLS to %s", step, host)
		if want == nil {
			if leaf.Subject.CommonName != "dcm default certificate" {
				t.Fatalf("%s: %s served %q, want the self-signed certificate", step, host, leaf.Subject.CommonName)
			}
			return
		}
		if leaf.SerialNumber.Cmp(want.Cert.SerialNumber) != 0 {
			t.Fatalf("%s: %s served serial %s, want %s", step, host, leaf.SerialNumber, want.Cert.SerialNumber)
		}
	}
	onDisk := func(step string, want []byte) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(d.cfg.WorkDir, DefaultCertName))
		mustf(t, err, "%s: read", step)
		p, _ := NormalizePEM(want)
		if string(b) != p+"\n" {
			t.Fatalf("%s: default.pem on disk is not the default served", step)
		}
	}
	rotate := func(step string, c dcm.Cert) {
		t.Helper()
		st.DefaultCert = c
		mustf(t, d.Apply(ctx, []dcm.Op{{Kind: dcm.OpCertUpdate, Cert: &c}}, st), "%s: apply", step)
		mustf(t, d.Write(st), "%s: write", step)
	}

	serves("start", "other.test", &def1)
	serves("start", "a.test", &leafA)
	onDisk("start", def1.PEM())

	rotate("rotate", dcm.Cert{Secret: "ingress/default-tls", Version: v2})
	serves("rotate", "other.test", &def2)
	serves("rotate", "", &def2) // no SNI at all
	serves("rotate", "a.test", &leafA)
	onDisk("rotate", def2.PEM())

	rotate("self-signed", dcm.Cert{})
	serves("self-signed", "other.test", nil)
	self, err := os.ReadFile(filepath.Join(d.cfg.WorkDir, selfSignedName))
	mustf(t, err, "self-signed file")
	onDisk("self-signed", self)

	rotate("back", dcm.Cert{Secret: "ingress/default-tls", Version: v1})
	after, err := d.Info(ctx)
	mustf(t, err, "info")
	if after.Pid != info.Pid {
		t.Errorf("worker changed from %d to %d", info.Pid, after.Pid)
	}
	_, err = d.Reload(ctx, st)
	mustf(t, err, "reload")
	serves("reload", "other.test", &def1)
	serves("reload", "a.test", &leafA)
}

// TestDefaultCertCommandText: the default certificate (a Cert without a
// host) is a set and a commit on default.pem; it is never added or
// deleted, and its payload is checked as a host's is.
func TestDefaultCertCommandText(t *testing.T) {
	ca := testkit.NewCA(t)
	p, err := NormalizePEM(ca.Leaf(t, "apps.test").PEM())
	mustf(t, err, "normalize")
	def := &dcm.Cert{Secret: "ingress/default-tls", Version: "aa"}
	cmds, abort, err := CertCommands(dcm.Op{Kind: dcm.OpCertUpdate, Cert: def}, p, HTTP2{})
	mustf(t, err, "update")
	var texts []string
	for _, c := range cmds {
		texts = append(texts, c.String())
	}
	if want := []string{"set ssl cert default.pem", "commit ssl cert default.pem"}; !slices.Equal(texts, want) ||
		abort == nil || abort.String() != "abort ssl cert default.pem" || cmds[0].payload != p {
		t.Fatalf("commands %q (abort %v), want %q", texts, abort, want)
	}
	for _, k := range []dcm.OpKind{dcm.OpCertAdd, dcm.OpCertDel} {
		if _, _, err := CertCommands(dcm.Op{Kind: k, Cert: def}, p, HTTP2{}); err == nil {
			t.Errorf("%s of the default certificate: accepted", k)
		}
	}
	if _, _, err := CertCommands(dcm.Op{Kind: dcm.OpCertUpdate, Cert: def}, p+"\n\nshow info", HTTP2{}); err == nil {
		t.Error("a payload with an empty line: accepted")
	}
}
