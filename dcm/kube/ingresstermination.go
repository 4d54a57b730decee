package kube

import "github.com/dcm-router/dcm/dcm"

// route.openshift.io/termination values, as route-controller-manager reads them.
const (
	terminationEdge        = "edge"
	terminationPassthrough = "passthrough"
	terminationReencrypt   = "reencrypt"
)

// tlsFor says whether a rule's host is served over TLS and with which
// Secret of spec.tls: its own, or "" for the default certificate when
// route.openshift.io/termination is edge or reencrypt, which makes every
// host TLS as route-controller-manager's Route for it would be. A rule
// without a host is never TLS: SNI picks certificates by host.
func (o ingressOptions) tlsFor(tlsHosts map[string]string, host string) (string, bool) {
	if host == "" {
		return "", false
	}
	if secret, ok := tlsHosts[host]; ok {
		return secret, true
	}
	return "", o.termination == terminationEdge || o.termination == terminationReencrypt
}

// tlsRef is the certificate of an Ingress route: its Secret, or, without
// one, a reference that never gets a version, so the default certificate
// serves the host as it serves a Route without a certificate of its own.
func tlsRef(ns, secret, route string) *dcm.TLSRef {
	if secret == "" {
		return &dcm.TLSRef{Secret: dcm.RouteCertRef(ns, route)}
	}
	return &dcm.TLSRef{Secret: ns + "/" + secret}
}
