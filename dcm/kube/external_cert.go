package kube

import (
	"strings"

	"github.com/dcm-router/dcm/dcm"
)

// ReasonExternalCertificate is the reason of a Route's Admitted=False
// condition, as OpenShift's router gives it, when the Secret of its
// spec.tls.externalCertificate is missing or invalid.
const ReasonExternalCertificate = "ExternalCertificateValidationFailed"

// externalCertificate is spec.tls.externalCertificate.
type externalCertificate struct {
	Name string `json:"name"`
}

// externalCertOf reads spec.tls.externalCertificate into the route's
// certificate: the kubernetes.io/tls Secret of that name in the Route's
// namespace, whose version the Source fills in and follows as it does an
// Ingress's. Both certificate and externalCertificate is refused, as the
// Route CRD's validation does (an API server without it lets it through).
// The chain belongs in the Secret's tls.crt, so caCertificate is refused
// too rather than left out.
func externalCertOf(ns string, t *routeTLS, r *dcm.Route) error {
	const field = "spec.tls.externalCertificate"
	if t.Certificate != "" || t.Key != "" {
		return routeErr(dcm.RejectInvalidValue, field, "set with spec.tls.certificate or key: cannot have both")
	}
	if t.CACertificate != "" {
		return routeErr(dcm.RejectUnsupported, "spec.tls.caCertificate", "with "+field+": put the chain in the Secret's tls.crt")
	}
	if t.ExternalCertificate.Name == "" {
		return routeErr(dcm.RejectInvalidValue, field+".name", "")
	}
	if err := dcm.ValidateDNSSubdomain(field+".name", t.ExternalCertificate.Name); err != nil {
		return routeErr(dcm.RejectInvalidName, field+".name", t.ExternalCertificate.Name)
	}
	r.TLS = &dcm.TLSRef{Secret: ns + "/" + t.ExternalCertificate.Name}
	return nil
}

// externalCertVerdict is what a Route's externalCertificate Secret, just
// read by certVersion, makes of the Route. Missing or invalid: the Route
// is Admitted=False ExternalCertificateValidationFailed; with no valid
// version ever seen it gets no servers (HAProxy answers 503 with the
// default certificate, as OpenShift's router answers for a Route it does
// not admit), with one it goes on serving that one, as every certificate
// from a Secret does in dcm: a botched rotation or a deleted Secret does
// not take a live host down. Valid again: the verdict is lifted. A Secret
// that could not be read changes nothing.
func (s *Source) externalCertVerdict(t *txn, r dcm.Route, b *dcm.DesiredBackend) {
	if r.Source != dcm.SourceRoute || r.TLS == nil || dcm.InlineCert(r.TLS.Secret) {
		return
	}
	ns, name, _ := strings.Cut(r.TLS.Secret, "/")
	secretVerdict, read := t.rejections[dcm.ObjectRef{Kind: KindSecret, Namespace: ns, Name: name}]
	if !read {
		return
	}
	ref := dcm.ObjectRef{Kind: KindRoute, Namespace: r.Namespace, Name: strings.TrimPrefix(r.Name, dcm.RouteNamePrefix)}
	if secretVerdict == nil {
		s.mu.Lock()
		old, had := s.rejections[ref]
		s.mu.Unlock()
		if _, decided := t.rejections[ref]; had && !decided && old.Reason == ReasonExternalCertificate {
			t.accept(ref)
		}
		return
	}
	served := ": the Route gets no servers (503)"
	if r.TLS.Version != "" {
		served = ": its last valid certificate is still served"
	} else {
		b.Endpoints = []dcm.Endpoint{}
	}
	t.reject(dcm.Rejection{Object: ref, Reason: ReasonExternalCertificate,
		Message: "spec.tls.externalCertificate: " + secretVerdict.Message + served})
}
