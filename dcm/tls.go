package dcm

import (
	"hash/fnv"
	"slices"
	"sort"
	"strings"
)

// Edge routes: HAProxy terminates TLS with the certificate of the route's
// Secret and routes the decrypted request through the same maps as plain
// HTTP. The model carries a reference to the Secret and a version of its
// content (a hash), never the key: snapshots, events, the feed and the
// what-if planner see which certificate is served, not what it is. Only the
// driver fetches the PEM, by version, to write the file and feed the socket.

// TLSRef is the certificate of an edge route.
type TLSRef struct {
	// Secret is the kubernetes.io/tls Secret as namespace/name, or, for a
	// certificate written inline in an OpenShift Route, RouteCertRef.
	Secret string `json:"secret"`
	// Version identifies the certificate and key (a hash of both); empty
	// while the Secret is missing or invalid, and then the route is served
	// with the default certificate.
	Version string `json:"version,omitempty"`
}

// UpstreamTLS is the TLS of a reencrypt route towards its pods: HAProxy
// connects with TLS, sends ServerName as SNI and requires the pod's
// certificate to be signed by the destination CA and to name ServerName.
// Like TLSRef it carries where the CA comes from and a hash of it, never the
// PEM: the driver fetches the PEM by version to write the CA file.
type UpstreamTLS struct {
	// CA is where the destination CA comes from: "secret:<namespace>/<name>"
	// (the ca.crt of a Secret), "route:<namespace>/<name>" (an OpenShift
	// Route's destinationCACertificate) or "file:default" (the file of
	// --default-backend-ca-file).
	CA string `json:"ca"`
	// Version identifies the CA's PEM (a hash of it). A reencrypt route
	// without one is not served: it cannot verify its pods.
	Version string `json:"version"`
	// ServerName is the name the pods' certificate must carry, also sent
	// as SNI; by default <service>.<namespace>.svc, the name of the
	// service-serving certificate. Empty: the chain is verified, no name
	// (OpenShift's rule for a Route with its own destination CA).
	ServerName string `json:"serverName"`
	// PerService makes each server verify the name of its own Service,
	// <service>.<namespace>.svc, alternate backends included, rather than
	// ServerName (the primary's): OpenShift's rule with the default
	// destination CA, the service CA, which names every Service's pods
	// after their Service. UpstreamFor gives a server its own.
	PerService bool `json:"perService,omitempty"`
}

// UpstreamFor is the upstream TLS of a route's server that carries e:
// the route's, with e's Service's name when the route verifies each
// Service's (PerService). nil when the route has none.
func UpstreamFor(r Route, e Endpoint) *UpstreamTLS {
	if r.Upstream == nil {
		return nil
	}
	u := *r.Upstream
	if u.PerService && e.Service != "" {
		u.ServerName = e.Service + "." + r.Namespace + ".svc"
	}
	return &u
}

// CAsOf lists the destination CAs the servers of backends verify their
// pods with, one per version, sorted by version: each is one CA file in
// HAProxy. A server keeps the CA it was added with until it is deleted, so
// after a rotation the old CA stays listed while old servers wait to be
// idle, and goes with the last of them.
func CAsOf(backends []*Backend) []UpstreamTLS {
	var out []UpstreamTLS
	seen := map[string]bool{}
	for _, b := range backends {
		for _, s := range b.Servers {
			if u := s.Upstream; u != nil && u.Version != "" && !seen[u.Version] {
				seen[u.Version] = true
				out = append(out, UpstreamTLS{CA: u.CA, Version: u.Version})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out
}

// UpstreamTag is what a reencrypt route's server names end with: a short
// hash of the CA version and the server name they verify. A server's TLS
// settings are fixed when it is added, so a new CA or server name needs new
// servers; with names of their own, they are added next to the old ones,
// which are retired only after (never a moment without a server).
func UpstreamTag(u *UpstreamTLS) string {
	if u == nil {
		return ""
	}
	h := fnv.New32a()
	h.Write([]byte(u.Version))
	h.Write([]byte{0})
	h.Write([]byte(u.ServerName))
	if u.PerService {
		h.Write([]byte{0, 's'}) // only then: the tags of other routes stay
	}
	return HexUint(uint64(h.Sum32()), 8)
}

// WithUpstreamNames names the endpoints of a reencrypt route's backend
// after its upstream TLS (<name>.<UpstreamTag>), so the servers that
// carry them follow a CA rotation (see UpstreamTag). Sources call it once
// per backend they build; other backends come back unchanged.
func (b DesiredBackend) WithUpstreamNames() DesiredBackend {
	if b.Route.Kind != KindReencrypt || b.Route.Upstream == nil || len(b.Endpoints) == 0 {
		return b.withInterNames() // the check interval's tag (route_knobs.go) follows
	}
	tag := "." + UpstreamTag(b.Route.Upstream)
	eps := slices.Clone(b.Endpoints)
	for i := range eps {
		eps[i].Name += tag
	}
	sort.Slice(eps, func(i, j int) bool { return eps[i].Name < eps[j].Name })
	b.Endpoints = eps
	return b.withInterNames()
}

// WithUpstream gives a backend's route another upstream TLS, renaming a
// reencrypt route's endpoints from the old one's tag to the new one's
// (WithUpstreamNames): what a source does when a CA changes.
func (b DesiredBackend) WithUpstream(u *UpstreamTLS) DesiredBackend {
	b = b.withoutInterNames()
	if b.Route.Kind == KindReencrypt && b.Route.Upstream != nil {
		old := "." + UpstreamTag(b.Route.Upstream)
		eps := slices.Clone(b.Endpoints)
		for i := range eps {
			eps[i].Name = strings.TrimSuffix(eps[i].Name, old)
		}
		b.Endpoints = eps
	}
	b.Route.Upstream = u
	return b.WithUpstreamNames()
}

// ValidateUpstream checks what of a reencrypt route's upstream TLS reaches
// HAProxy or its logs: the CA's source, its version (empty while the CA is
// missing: then the route gets no servers) and the server name, a DNS name
// sent as SNI and matched against the pods' certificates.
func ValidateUpstream(u *UpstreamTLS) error {
	if u == nil {
		return invalid(RejectInvalidValue, "upstream", "")
	}
	kind, ref, ok := strings.Cut(u.CA, ":")
	switch {
	case !ok:
		return invalid(RejectInvalidValue, "upstream.ca", u.CA)
	case kind == "secret" || kind == "route":
		if err := ValidateSecretRef("upstream.ca", ref); err != nil {
			return invalid(RejectInvalidValue, "upstream.ca", u.CA)
		}
	case kind == "file" && ref == "default":
	default:
		return invalid(RejectInvalidValue, "upstream.ca", u.CA)
	}
	if err := ValidateCertVersion("upstream.version", u.Version); err != nil {
		return err
	}
	if u.ServerName == "" {
		if u.PerService {
			return invalid(RejectInvalidHost, "upstream.serverName", u.ServerName)
		}
		return nil // the chain only
	}
	if err := ValidateHost("upstream.serverName", u.ServerName); err != nil {
		return invalid(RejectInvalidHost, "upstream.serverName", u.ServerName)
	}
	return nil
}

// Cert is the certificate HAProxy serves for one SNI host: one file and one
// crt-list line per host, so a host's certificate is added, rotated and
// removed without touching another host's.
type Cert struct {
	Host    string `json:"host"`
	Secret  string `json:"secret"`
	Version string `json:"version"`
	// H2 says the host may be offered HTTP/2 (ALPN h2): its certificate is
	// served for no other host. OpenShift's router's rule: a browser
	// reuses an h2 connection for every host its certificate names, so a
	// shared certificate would carry one route's requests on another's
	// connection. The HTTPS frontend's --disable-http2 still overrides it.
	H2 bool `json:"h2,omitempty"`
	// Bind is set for a Gateway HTTPS listener's certificate: the bind
	// it is served on, by SNI Host, or, with Host empty, to every client
	// whose SNI names no other of the bind's (the listener has no
	// hostname). Each bind has its own list, so two Gateways' listeners
	// never serve each other's certificates.
	Bind string `json:"bind,omitempty"`
}

// Key names a certificate among a state's: its host, or for a Gateway
// listener's its bind and host (no host holds a '/').
func (c Cert) Key() string {
	if c.Bind == "" {
		return c.Host
	}
	return c.Bind + "/" + c.Host
}

// CertLess orders certificates as CertsOf lists them: the hosts' of
// Ingresses and Routes first, by host, then the Gateway listeners', by
// bind and host.
func CertLess(a, b Cert) bool {
	if a.Bind != b.Bind {
		return a.Bind < b.Bind
	}
	return a.Host < b.Host
}

// CertsOf lists the certificates the routed edge and reencrypt backends need, sorted by
// host. Two routes on one host with different certificates (two paths of
// one host from two Ingresses): the first in route order wins, as it does
// for map keys, so every renderer and planner picks the same.
func CertsOf(backends []*Backend) []Cert {
	certs, _ := certsOf(backends)
	return certs
}

// CertBackends names, by host, the backend whose route's certificate is
// served: cert ops name it, so the feed's filters and the event log show
// them with the route they are for.
func CertBackends(backends []*Backend) map[string]string {
	_, owners := certsOf(backends)
	return owners
}

func certsOf(backends []*Backend) ([]Cert, map[string]string) {
	var routed []*Backend
	for _, b := range backends {
		if b.Routed() && (b.Route.Kind == KindEdge || b.Route.Kind == KindReencrypt) && b.Route.TLS != nil && b.Route.TLS.Version != "" && b.Route.Host != "" {
			routed = append(routed, b)
		}
	}
	owners := map[string]string{}
	if len(routed) == 0 {
		return gatewayCerts(backends, owners), owners
	}
	sort.SliceStable(routed, func(i, j int) bool { return routed[i].Route.Less(routed[j].Route) })
	out := make([]Cert, 0, len(routed))
	for _, b := range routed {
		r := b.Route
		if len(out) > 0 && out[len(out)-1].Host == r.Host {
			continue
		}
		out = append(out, Cert{Host: r.Host, Secret: r.TLS.Secret, Version: r.TLS.Version})
		owners[r.Host] = b.Name
	}
	markH2(out)
	return append(out, gatewayCerts(backends, owners)...), owners
}

// gatewayCerts are the certificates of the routed Gateway routes of
// HTTPS listeners (edge): the listener's, one per bind and listener
// hostname — a listener without one serves its certificate to any SNI
// (the bind's default, ""), whatever hostnames its routes name; the first
// route by name wins, sorted by bind and host.
func gatewayCerts(backends []*Backend, owners map[string]string) []Cert {
	byKey := map[string]Cert{}
	for _, b := range backends {
		r := b.Route
		if !b.Routed() || r.Gateway == nil || r.Kind != KindEdge || r.TLS == nil || r.TLS.Version == "" {
			continue
		}
		c := Cert{Host: r.Gateway.ListenerHostname, Secret: r.TLS.Secret, Version: r.TLS.Version, Bind: r.Gateway.Bind}
		if owner, ok := owners[c.Key()]; !ok || b.Name < owner {
			byKey[c.Key()], owners[c.Key()] = c, b.Name
		}
	}
	out := make([]Cert, 0, len(byKey))
	for _, c := range byKey {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return CertLess(out[i], out[j]) })
	return out
}

// markH2 offers HTTP/2 to the hosts whose certificate (by version: the
// same certificate and key, whichever Secret holds them) no other host
// serves.
func markH2(certs []Cert) {
	hosts := make(map[string]int, len(certs))
	for _, c := range certs {
		hosts[c.Version]++
	}
	for i := range certs {
		certs[i].H2 = hosts[certs[i].Version] == 1
	}
}

// ValidateCertVersion checks a certificate version: lower-case hex, as the
// kube layer derives it (it names no file, but it reaches logs and pages).
func ValidateCertVersion(field, s string) error {
	if len(s) > 128 {
		return invalid(RejectInvalidValue, field, s)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return invalid(RejectInvalidValue, field, s)
		}
	}
	return nil
}

// RouteCertPrefix starts the TLSRef.Secret of a certificate written inline
// in an OpenShift Route (spec.tls.certificate and key):
// "route:<namespace>/<route>". A Secret's namespace is a DNS label, which
// has no ':', so an inline certificate and a Secret never share a key in
// the kube Source's PEM store, in a what-if rotation or on a page.
const RouteCertPrefix = "route:"

// RouteCertRef is the TLSRef.Secret of the inline certificate of the Route
// namespace/route.
func RouteCertRef(namespace, route string) string {
	return RouteCertPrefix + namespace + "/" + route
}

// InlineCert reports whether a TLSRef.Secret names a Route's inline
// certificate rather than a Secret.
func InlineCert(secret string) bool {
	return len(secret) > len(RouteCertPrefix) && secret[:len(RouteCertPrefix)] == RouteCertPrefix
}

// ValidateSecretRef checks namespace/name of a Secret, or
// RouteCertPrefix+namespace/name of a Route with an inline certificate.
func ValidateSecretRef(field, s string) error {
	ref := s
	if InlineCert(s) {
		ref = s[len(RouteCertPrefix):]
	}
	ns, name, ok := cutSlash(ref)
	if !ok {
		return invalid(RejectInvalidName, field, s)
	}
	if err := ValidateDNSLabel(field, ns); err != nil {
		return invalid(RejectInvalidName, field, s)
	}
	if err := ValidateDNSSubdomain(field, name); err != nil {
		return invalid(RejectInvalidName, field, s)
	}
	return nil
}

func cutSlash(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return s[:i], s[i+1:], true
		}
	}
	return "", "", false
}
