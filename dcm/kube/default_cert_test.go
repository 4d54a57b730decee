package kube

import (
	"strings"
	"testing"
	"time"

	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

// TestDefaultCertSecret walks the default certificate's Secret through its
// life: missing at start (the self-signed one, rejected), valid (its
// version, accepted and its PEM kept for the driver), invalid and then
// deleted (the last valid version still served, rejected with a message
// that says so), rotated (the new version).
func TestDefaultCertSecret(t *testing.T) {
	ca := testkit.NewCA(t)
	leaf1, leaf2 := ca.Leaf(t, "apps.example"), ca.Leaf(t, "apps.example")
	secrets := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	s := newSource(Options{DefaultCertificate: "demo/def"}, nil, nil)
	s.dc.secrets = corev1listers.NewSecretLister(secrets)
	ref := dcm.ObjectRef{Kind: KindSecret, Namespace: "demo", Name: "def"}
	valid1, valid2 := tlsSecret("def", leaf1.CertPEM, leaf1.KeyPEM), tlsSecret("def", leaf2.CertPEM, leaf2.KeyPEM)
	_, v1, _ := SecretCert(valid1)
	_, v2, _ := SecretCert(valid2)
	invalid := tlsSecret("def", leaf1.CertPEM, leaf2.KeyPEM)

	for _, step := range []struct {
		name    string
		secret  any // nil: deleted
		want    dcm.Cert
		message string // "" : accepted
	}{
		{"missing at start", nil, dcm.Cert{}, "no kubernetes.io/tls Secret demo/def: dcm's self-signed certificate is served"},
		{"valid", valid1, dcm.Cert{Secret: "demo/def", Version: v1}, ""},
		{"invalid", invalid, dcm.Cert{Secret: "demo/def", Version: v1}, "its last valid certificate is still served"},
		{"deleted", nil, dcm.Cert{Secret: "demo/def", Version: v1}, "no kubernetes.io/tls Secret demo/def: its last valid certificate is still served"},
		{"rotated", valid2, dcm.Cert{Secret: "demo/def", Version: v2}, ""},
	} {
		for _, o := range secrets.List() {
			_ = secrets.Delete(o)
		}
		if step.secret != nil {
			_ = secrets.Add(step.secret)
		}
		if err := s.sync(prefixSecret+"demo/def", time.Time{}); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		d, _ := s.Desired()
		if d.DefaultCert != step.want {
			t.Errorf("%s: default %+v, want %+v", step.name, d.DefaultCert, step.want)
		}
		if !d.DefaultCert.SelfSigned() {
			if _, err := s.PEMs().CertPEM("demo/def", d.DefaultCert.Version); err != nil {
				t.Errorf("%s: the driver cannot read the served version: %v", step.name, err)
			}
		}
		var rej *dcm.Rejection
		for _, r := range s.Rejections() {
			if r.Object == ref {
				rej = &r
			}
		}
		switch {
		case step.message == "" && rej != nil:
			t.Errorf("%s: rejected: %s", step.name, rej.Message)
		case step.message != "" && (rej == nil || !strings.Contains(rej.Message, step.message) || !strings.HasPrefix(rej.Message, "--default-ssl-certificate: ")):
			t.Errorf("%s: rejection %+v, want one saying %q", step.name, rej, step.message)
		}
	}
}
