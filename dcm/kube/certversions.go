package kube

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/dcm-router/dcm/dcm"
)

// certVersion reads a route's Secret (once per sync) and returns the
// version of its certificate. A missing Secret gives "": its hosts get the
// default certificate. An invalid one is rejected with its reason and its
// hosts keep the last valid version dcm has seen of it, so a botched
// rotation does not turn into clients refusing the default certificate
// (after a restart of dcm there is none: they get the default one).
func (s *Source) certVersion(t *txn, secret string) string {
	if v, ok := t.certs[secret]; ok {
		return v
	}
	version := s.secretVersion(t, secret, secretPEM{
		parse:   SecretCert,
		missing: ": its hosts get the default certificate",
		newest:  func() string { return s.pems.newestCert(secret) },
		keep:    func(v string, pem []byte) { s.pems.keepCert(secret, v, pem) },
	})
	t.certs[secret] = version
	return version
}

// caVersion reads a reencrypt route's destination CA (once per sync) and
// returns its version. A CA from a Secret's ca.crt: a missing Secret gives
// "" (the route gets no servers), an invalid one is rejected with its
// reason and the route keeps the last valid version dcm has seen of it,
// as certVersion does. The default CA is the one checked at start. Other
// sources (an OpenShift Route's inline CA) bring their version along and
// register their PEM in the PEMStore.
func (s *Source) caVersion(t *txn, ca, given string) string {
	if v, ok := t.cas[ca]; ok {
		return v
	}
	version := given
	switch {
	case ca == CADefault:
		version = ""
		if len(s.opts.DefaultBackendCA) > 0 {
			if v, err := ParseCA(s.opts.DefaultBackendCA); err == nil {
				version = v
				s.pems.keepCA(ca, v, s.opts.DefaultBackendCA)
			}
		}
	case strings.HasPrefix(ca, CASecretPrefix):
		version = s.secretVersion(t, strings.TrimPrefix(ca, CASecretPrefix), secretPEM{
			parse:   SecretCA,
			missing: " with " + CAKey + ": its reencrypt routes get no servers (503)",
			invalid: "destination CA: ",
			newest:  func() string { return s.pems.newestCA(ca) },
			keep:    func(v string, pem []byte) { s.pems.keepCA(ca, v, pem) },
		})
	}
	t.cas[ca] = version
	return version
}

// secretPEM is what differs between reading a certificate and reading a
// destination CA from a kubernetes.io/tls Secret.
type secretPEM struct {
	parse   func(*corev1.Secret) (pem []byte, version string, err error)
	missing string        // ends the message of a missing Secret's rejection
	invalid string        // starts the message of an invalid one's
	newest  func() string // the newest valid version kept, "" if none
	keep    func(version string, pem []byte)
}

// secretVersion reads a Secret (ns/name) and returns the version of the
// PEM it holds: "" when it is missing (rejected) or cannot be read
// (logged), the newest valid version kept when it is invalid (rejected),
// its own when it is valid (accepted, and its PEM kept).
func (s *Source) secretVersion(t *txn, secret string, p secretPEM) string {
	t.secrets[secret] = struct{}{}
	ns, name, _ := strings.Cut(secret, "/")
	ls, ok := s.lister(ns)
	if !ok || ls.secrets == nil {
		return ""
	}
	ref := dcm.ObjectRef{Kind: KindSecret, Namespace: ns, Name: name}
	sec, err := ls.secrets.Secrets(ns).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		t.reject(dcm.Rejection{Object: ref, Reason: dcm.RejectInvalidValue,
			Message: "no kubernetes.io/tls Secret " + secret + p.missing})
		return ""
	case err != nil:
		s.log.Warn("reading secret", "secret", secret, "err", err)
		return ""
	}
	pem, version, err := p.parse(sec)
	if err != nil {
		t.reject(dcm.Rejection{Object: ref, Reason: RejectReason(err), Message: p.invalid + RejectMessage(err)})
		return p.newest()
	}
	t.accept(ref)
	p.keep(version, pem)
	return version
}
