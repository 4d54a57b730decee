package kube

import (
	"strings"
	"testing"

	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

// TestSecretVersions pins what certVersion and caVersion say of a Secret
// that is missing, invalid after a valid version, and valid: the rejection
// messages differ, the fallbacks do not.
func TestSecretVersions(t *testing.T) {
	ca := testkit.NewCA(t)
	leaf := ca.Leaf(t, "a.example")
	secrets := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	s := newSource(Options{}, nil, nil)
	s.listers[""] = listerSet{secrets: corev1listers.NewSecretLister(secrets)}
	ref := dcm.ObjectRef{Kind: KindSecret, Namespace: "demo", Name: "s"}
	cert := func(t *txn) string { return s.certVersion(t, "demo/s") }
	caOf := func(t *txn) string { return s.caVersion(t, CASecretPrefix+"demo/s", "") }
	_, certV, _ := SecretCert(tlsSecret("s", leaf.CertPEM, leaf.KeyPEM))
	caV, _ := ParseCA(ca.CertPEM())
	valid := tlsSecret("s", leaf.CertPEM, leaf.KeyPEM)
	valid.Data[CAKey] = ca.CertPEM()
	invalid := tlsSecret("s", leaf.CertPEM, ca.Leaf(t, "b.example").KeyPEM)
	invalid.Data[CAKey] = leaf.CertPEM

	for _, tt := range []struct {
		name    string
		read    func(*txn) string
		version string
		missing string
		invalid string
	}{
		{"cert", cert, certV,
			"no kubernetes.io/tls Secret demo/s: its hosts get the default certificate", ""},
		{"ca", caOf, caV,
			"no kubernetes.io/tls Secret demo/s with " + CAKey + ": its reencrypt routes get no servers (503)", "destination CA: "},
	} {
		_ = secrets.Delete(valid)
		s.pems = NewPEMStore()
		step := func(want string) *dcm.Rejection {
			t.Helper()
			tx := newTxn()
			if got := tt.read(tx); got != want {
				t.Errorf("%s: version %q, want %q", tt.name, got, want)
			}
			if _, ok := tx.secrets["demo/s"]; !ok {
				t.Errorf("%s: the Secret is not marked as read", tt.name)
			}
			r, ok := tx.rejections[ref]
			if !ok {
				t.Fatalf("%s: no verdict on the Secret", tt.name)
			}
			return r
		}
		if r := step(""); r == nil || r.Message != tt.missing || r.Reason != dcm.RejectInvalidValue {
			t.Errorf("%s missing: %+v", tt.name, r)
		}
		_ = secrets.Add(valid)
		if r := step(tt.version); r != nil {
			t.Errorf("%s valid: rejected %+v", tt.name, r)
		}
		_ = secrets.Update(invalid)
		if r := step(tt.version); r == nil || !strings.HasPrefix(r.Message, tt.invalid) {
			t.Errorf("%s invalid: %+v, want the message to start with %q", tt.name, r, tt.invalid)
		}
	}
}
