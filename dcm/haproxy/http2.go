package haproxy

import "github.com/dcm-router/dcm/dcm"

// HTTP2 is the HTTPS frontend's HTTP/2 policy, OpenShift's router's: a
// host with a certificate of its own (dcm.Cert.H2) is offered h2 by ALPN,
// the default certificate only when DefaultCert is set, and nothing when
// Disabled. Both are start-time flags: the bind line and every crt-list
// line are rendered from them, and a change takes a restart of dcm (which
// rewrites the cfg and starts HAProxy on it).
type HTTP2 struct {
	// Disabled turns h2 off everywhere (--disable-http2).
	Disabled bool
	// DefaultCert offers h2 with the default certificate too
	// (--enable-http2-default-cert): off by default because the default
	// certificate (a wildcard, typically) names many routes' hosts.
	DefaultCert bool
}

const (
	alpnH2     = "h2,http/1.1"
	alpnHTTP11 = "http/1.1"
)

// bindALPN is the ALPN of the HTTPS bind line, which the default
// certificate is served with.
func (h HTTP2) bindALPN() string {
	if h.DefaultCert && !h.Disabled {
		return alpnH2
	}
	return alpnHTTP11
}

// crtListLine is a host's crt-list line, as written in the file and as
// sent with add ssl crt-list: the file, its ALPN in brackets (a crt-list
// line's options override the bind line's, so a host without h2 says so
// even when the default certificate offers it) and the host as its only
// SNI filter.
func (h HTTP2) crtListLine(c dcm.Cert) string {
	alpn := alpnHTTP11
	if c.H2 && !h.Disabled {
		alpn = alpnH2
	}
	return CertFile(c.Host) + " [alpn " + alpn + "] " + c.Host
}

// serverALPN is what a TLS server offers its pod by ALPN: h2 and
// http/1.1, so a pod that speaks h2 (gRPC) gets it, or, with h2 disabled,
// no ALPN at all, as OpenShift's router drops alpn from its reencrypt
// servers under ROUTER_DISABLE_HTTP2.
func (h HTTP2) serverALPN() string {
	if h.Disabled {
		return ""
	}
	return alpnH2
}

// protoArgs is a server's proto argument: h2 speaks HTTP/2 to the pod in
// clear text (h2c), which gRPC needs; a TLS server negotiates by ALPN
// instead (upstreamArgs).
func protoArgs(p dcm.Proto) (string, error) {
	if err := dcm.ValidateProto("server proto", p); err != nil {
		return "", err
	}
	if p == dcm.ProtoH2 {
		return " proto h2", nil
	}
	return "", nil
}

// transportArgs are how a server talks to its pod: TLS for reencrypt
// routes (upstreamArgs), then its protocol (protoArgs).
func transportArgs(s dcm.Server, h HTTP2) (string, error) {
	var tls string
	if u := s.Upstream; u != nil {
		var err error
		if tls, err = upstreamArgs(u, s.Check, h.serverALPN()); err != nil {
			return "", err
		}
	}
	proto, err := protoArgs(s.Proto)
	if err != nil {
		return "", err
	}
	return tls + proto, nil
}
