package routing

import "github.com/dcm-router/dcm/dcm"

// wildcardKeys are the keys of a wildcard route. HAProxy derives the
// wildcard key of a request from its host without the first label, so
// "*.example.com" with path /api is the key .example.com/api: a.example.com/api
// and b.example.com/api find it, a.b.example.com/api and example.com/api do
// not, which is OpenShift's single-label rule. The frontends ask these maps
// after the exact-host ones, so an exact host under the domain wins, and
// before the any-host ones. A passthrough wildcard is found the same way
// by the ClientHello's server name in the sni_wild map.
func wildcardKeys(r dcm.Route) []key {
	domain := dcm.WildcardKey(r.Host)
	if r.Kind == dcm.KindPassthrough {
		return []key{{dcm.MapSNIWild, domain}}
	}
	return pathKeys(r, dcm.MapWildExact, dcm.MapWildPrefix, domain)
}

// insecureHostKey is a passthrough route's key in the insecure_host map:
// its host, or a wildcard's domain key, which fe_http looks up as it looks
// up the wildcard maps, after the exact hosts.
func insecureHostKey(r dcm.Route) string {
	if r.Wildcard() {
		return dcm.WildcardKey(r.Host)
	}
	return r.Host
}
