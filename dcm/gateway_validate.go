package dcm

import (
	"strconv"
	"strings"
)

// Equal reports whether two Gateway routes are the same in every field:
// the planner re-keys the Gateway maps when they are not.
func (g *GatewayRoute) Equal(o *GatewayRoute) bool { return g.equal(o) }

// Bounds of what a Gateway route carries into HAProxy's maps: each rule is
// one map value, which one runtime command line must hold.
const (
	MaxGatewayMatches   = 64
	MaxGatewayHostnames = 16
	maxGatewayValue     = 4096
)

// validateGatewayRoute checks what of a Gateway route reaches HAProxy: its
// names as any route's, its listener bind, hostnames, matches and filters.
// Host and Path stay empty: the Gateway maps find the route, not the host
// and path maps.
func validateGatewayRoute(r Route) error {
	g := r.Gateway
	if err := ValidateDNSLabel("namespace", r.Namespace); err != nil {
		return err
	}
	if err := ValidateRouteName("route name", r.Name); err != nil {
		return err
	}
	if r.Host != "" || r.Path != "" {
		return invalid(RejectInvalidValue, "gateway route with host or path", r.Host+r.Path)
	}
	switch r.Kind {
	case KindHTTP:
		if r.TLS != nil {
			return invalid(RejectInvalidValue, "tls", r.TLS.Secret)
		}
	case KindEdge:
		if r.TLS == nil {
			return invalid(RejectInvalidValue, "tls", "")
		}
		if err := ValidateSecretRef("tls.secret", r.TLS.Secret); err != nil {
			return err
		}
		if err := ValidateCertVersion("tls.version", r.TLS.Version); err != nil {
			return err
		}
	case KindPassthrough:
		// A TLSRoute on a TLS Passthrough listener: found by the SNI
		// alone, no matches, no filters, no certificate.
		if r.TLS != nil || len(g.Matches) > 0 || g.Filters != nil {
			return invalid(RejectInvalidValue, "passthrough gateway route with tls, matches or filters", r.Name)
		}
	default:
		return invalid(RejectUnsupported, "gateway route kind (http, edge or passthrough)", string(r.Kind))
	}
	if r.Upstream != nil || r.Sticky || !r.Headers.Empty() || r.RateLimit != nil || len(r.Allowlist) > 0 {
		return invalid(RejectUnsupported, "gateway route with router options", r.Name)
	}
	if err := ValidateGatewayBind("gateway.bind", g.Bind); err != nil {
		return err
	}
	if len(g.Hostnames) > MaxGatewayHostnames {
		return invalid(RejectUnsupported, "gateway.hostnames (at most "+strconv.Itoa(MaxGatewayHostnames)+")", strconv.Itoa(len(g.Hostnames)))
	}
	for _, h := range g.Hostnames {
		if err := ValidateGatewayHostname("gateway.hostnames", h); err != nil {
			return err
		}
	}
	if (len(g.Matches) == 0) != (r.Kind == KindPassthrough) || len(g.Matches) > MaxGatewayMatches {
		return invalid(RejectInvalidValue, "gateway.matches (1 to "+strconv.Itoa(MaxGatewayMatches)+")", strconv.Itoa(len(g.Matches)))
	}
	if err := validateGatewayText("gateway.rank", g.Rank, false); err != nil {
		return err
	}
	for _, m := range g.Matches {
		if err := validateHTTPMatch(m); err != nil {
			return err
		}
	}
	if err := validateHTTPFilters(g.Filters, g.Matches); err != nil {
		return err
	}
	if n := g.encodedBound(); n > MaxGatewayRuleValue {
		return invalid(RejectUnsupported, "gateway rule (matches and filters too long for one HAProxy command line)", strconv.Itoa(n))
	}
	if err := ValidateServices(r.Services); err != nil {
		return err
	}
	return ValidateBalance("balance", r.Balance)
}

// ValidateGatewayBind checks a Gateway listener's bind: an IPv4
// address and a port, as the Gateway maps key it.
func ValidateGatewayBind(field, s string) error {
	host, port, ok := strings.Cut(s, ":")
	n, err := strconv.Atoi(port)
	if !ok || err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port || !ipv4(host) {
		return invalid(RejectInvalidValue, field, s)
	}
	return nil
}

func ipv4(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return false
	}
	for _, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 255 || strconv.Itoa(n) != p {
			return false
		}
	}
	return true
}

// ValidateGatewayHostname checks a hostname of a Gateway route: a DNS
// name, or "*." and one (any subdomain, at any depth).
func ValidateGatewayHostname(field, s string) error {
	d, _ := strings.CutPrefix(s, WildcardPrefix)
	if s == "" || d == "" || ValidateHost(field, d) != nil {
		return invalid(RejectInvalidHost, field, s)
	}
	return nil
}

// MaxGatewayRuleValue bounds a rule's entry in the gateway_rule map
// (dcm/routing encodes it, every text in hex): one `add map` line must
// fit HAProxy's buffer with room for the command.
const MaxGatewayRuleValue = 12000

// encodedBound is at least the length of the rule's map value: two hex
// digits per byte of text and a few bytes of structure per item.
func (g *GatewayRoute) encodedBound() int {
	n := 4
	text := func(ss ...string) {
		for _, s := range ss {
			n += 2*len(s) + 3
		}
	}
	text(g.Rank, g.ListenerHostname)
	for _, m := range g.Matches {
		text(m.Path, m.Method)
		for _, v := range append(append([]ValueMatch{}, m.Headers...), m.Query...) {
			text(v.Name, v.Value)
		}
	}
	if f := g.Filters; f != nil {
		for _, h := range []*HeaderMods{f.RequestHeaders, f.ResponseHeaders} {
			if h == nil {
				continue
			}
			for _, v := range append(append([]HeaderValue{}, h.Set...), h.Add...) {
				text(v.Name, v.Value)
			}
			text(h.Remove...)
		}
		if r := f.Redirect; r != nil {
			text(r.Scheme, r.Hostname, "65535", "308")
			if r.Path != nil {
				text(r.Path.Value)
			}
		}
		if w := f.Rewrite; w != nil {
			text(w.Hostname)
			if w.Path != nil {
				text(w.Path.Value)
			}
		}
	}
	return n
}

// validateGatewayText checks a text that reaches a map value hex-encoded:
// no control character (a header value must not split a header), bounded.
func validateGatewayText(field, s string, empty bool) error {
	if len(s) > maxGatewayValue || s == "" && !empty {
		return invalid(RejectInvalidValue, field, s)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return invalid(RejectInvalidValue, field+" (control character)", s)
		}
	}
	return nil
}

func validateGatewayPath(field, s string) error {
	if s == "" || s[0] != '/' || strings.ContainsAny(s, " ?#") {
		return invalid(RejectInvalidPath, field, s)
	}
	return validateGatewayText(field, s, false)
}

func validateHTTPMatch(m HTTPMatch) error {
	switch m.PathType {
	case GatewayPathExact, GatewayPathPrefix:
		if err := validateGatewayPath("gateway.matches.path", m.Path); err != nil {
			return err
		}
	case GatewayPathRegex:
		if err := validateGatewayText("gateway.matches.path", m.Path, false); err != nil {
			return err
		}
	default:
		return invalid(RejectInvalidPath, "gateway.matches.pathType", m.PathType)
	}
	if m.Method != "" && !tokenText(m.Method) {
		return invalid(RejectInvalidValue, "gateway.matches.method", m.Method)
	}
	for _, l := range []struct {
		field string
		list  []ValueMatch
	}{{"gateway.matches.headers", m.Headers}, {"gateway.matches.queryParams", m.Query}} {
		if len(l.list) > MaxGatewayMatches {
			return invalid(RejectInvalidValue, l.field, strconv.Itoa(len(l.list)))
		}
		for _, v := range l.list {
			if !tokenText(v.Name) && l.field == "gateway.matches.headers" || v.Name == "" {
				return invalid(RejectInvalidValue, l.field+".name", v.Name)
			}
			if err := validateGatewayText(l.field+".name", v.Name, false); err != nil {
				return err
			}
			if err := validateGatewayText(l.field+".value", v.Value, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// tokenText is an RFC 7230 token (a header name, a method) of at most 255
// bytes.
func tokenText(s string) bool {
	if s == "" || len(s) > MaxHeaderNameLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !tokenByte(s[i]) {
			return false
		}
	}
	return true
}

func validateHTTPFilters(f *HTTPFilters, matches []HTTPMatch) error {
	if f == nil {
		return nil
	}
	for _, h := range []struct {
		field string
		mods  *HeaderMods
	}{{"gateway.filters.requestHeaderModifier", f.RequestHeaders}, {"gateway.filters.responseHeaderModifier", f.ResponseHeaders}} {
		if h.mods == nil {
			continue
		}
		for _, v := range append(append([]HeaderValue{}, h.mods.Set...), h.mods.Add...) {
			if !tokenText(v.Name) {
				return invalid(RejectInvalidValue, h.field+".name", v.Name)
			}
			if err := validateGatewayText(h.field+".value", v.Value, true); err != nil {
				return err
			}
		}
		for _, n := range h.mods.Remove {
			if !tokenText(n) {
				return invalid(RejectInvalidValue, h.field+".remove", n)
			}
		}
	}
	if r := f.Redirect; r != nil {
		if r.Scheme != "" && r.Scheme != "http" && r.Scheme != "https" {
			return invalid(RejectUnsupported, "gateway.filters.requestRedirect.scheme", r.Scheme)
		}
		if r.Hostname != "" && ValidateHost("gateway.filters.requestRedirect.hostname", r.Hostname) != nil {
			return invalid(RejectInvalidHost, "gateway.filters.requestRedirect.hostname", r.Hostname)
		}
		if r.Port < 0 || r.Port > 65535 {
			return invalid(RejectInvalidValue, "gateway.filters.requestRedirect.port", strconv.Itoa(r.Port))
		}
		if r.StatusCode != 0 && !validRedirectCode(r.StatusCode) {
			return invalid(RejectUnsupported, "gateway.filters.requestRedirect.statusCode", strconv.Itoa(r.StatusCode))
		}
		if err := validatePathModifier("gateway.filters.requestRedirect.path", r.Path, matches); err != nil {
			return err
		}
	}
	if w := f.Rewrite; w != nil {
		if w.Hostname != "" && ValidateHost("gateway.filters.urlRewrite.hostname", w.Hostname) != nil {
			return invalid(RejectInvalidHost, "gateway.filters.urlRewrite.hostname", w.Hostname)
		}
		if err := validatePathModifier("gateway.filters.urlRewrite.path", w.Path, matches); err != nil {
			return err
		}
	}
	return nil
}

func validRedirectCode(c int) bool {
	for _, r := range RedirectCodes {
		if r == c {
			return true
		}
	}
	return false
}

// validatePathModifier checks a path modifier; ReplacePrefixMatch needs
// every match of its rule to be a PathPrefix one, whose prefix it replaces.
func validatePathModifier(field string, p *PathModifier, matches []HTTPMatch) error {
	if p == nil {
		return nil
	}
	switch p.Type {
	case ReplaceFullPath:
	case ReplacePrefixMatch:
		for _, m := range matches {
			if m.PathType != GatewayPathPrefix {
				return invalid(RejectUnsupported, field+" (ReplacePrefixMatch needs PathPrefix matches)", m.PathType)
			}
		}
	default:
		return invalid(RejectInvalidValue, field+".type", p.Type)
	}
	return validateGatewayPath(field, p.Value)
}
