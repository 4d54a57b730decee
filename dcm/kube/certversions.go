package kube

import (
	"strings"

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
	t.secrets[secret] = struct{}{}
	ns, name, _ := strings.Cut(secret, "/")
	ref := dcm.ObjectRef{Kind: KindSecret, Namespace: ns, Name: name}
	version := ""
	if ls, ok := s.lister(ns); ok && ls.secrets != nil {
		sec, err := ls.secrets.Secrets(ns).Get(name)
		switch {
		case apierrors.IsNotFound(err):
			t.reject(dcm.Rejection{Object: ref, Reason: dcm.RejectInvalidValue,
				Message: "no kubernetes.io/tls Secret " + secret + ": its hosts get the default certificate"})
		case err != nil:
			s.log.Warn("reading secret", "secret", secret, "err", err)
		default:
			pem, v, err := SecretCert(sec)
			if err != nil {
				t.reject(dcm.Rejection{Object: ref, Reason: RejectReason(err), Message: RejectMessage(err)})
				version = s.pems.newestCert(secret)
				break
			}
			t.accept(ref)
			version = v
			s.pems.keepCert(secret, v, pem)
		}
	}
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
		secret := strings.TrimPrefix(ca, CASecretPrefix)
		t.secrets[secret] = struct{}{}
		ns, name, _ := strings.Cut(secret, "/")
		ref := dcm.ObjectRef{Kind: KindSecret, Namespace: ns, Name: name}
		version = ""
		if ls, ok := s.lister(ns); ok && ls.secrets != nil {
			sec, err := ls.secrets.Secrets(ns).Get(name)
			switch {
			case apierrors.IsNotFound(err):
				t.reject(dcm.Rejection{Object: ref, Reason: dcm.RejectInvalidValue,
					Message: "no kubernetes.io/tls Secret " + secret + " with " + CAKey + ": its reencrypt routes get no servers (503)"})
			case err != nil:
				s.log.Warn("reading secret", "secret", secret, "err", err)
			default:
				pem, v, err := SecretCA(sec)
				if err != nil {
					t.reject(dcm.Rejection{Object: ref, Reason: RejectReason(err), Message: "destination CA: " + RejectMessage(err)})
					if last := s.pems.newestCA(ca); last != "" {
						version = last
					}
					break
				}
				t.accept(ref)
				version = v
				s.pems.keepCA(ca, v, pem)
			}
		}
	}
	t.cas[ca] = version
	return version
}
