package views

import (
	"strconv"
	"strings"

	"github.com/dcm-router/dcm/dcm"
)

// The short forms below say how a Gateway API route reads on the pages;
// web/format.js says it the same way (web's TestFormatParity).

// RuleText is "HTTPRoute ns/name rule N" (or "GRPCRoute …") for a Gateway
// route ("" else): the rule is the index the route's name carries
// (gw_<route>.<rule>.<hash>, g<rule> for a GRPCRoute's); "TLSRoute
// ns/name" for a TLSRoute's, which has one rule.
func RuleText(r dcm.Route) string {
	if r.Gateway == nil {
		return ""
	}
	if r.Source == dcm.SourceTLSRoute {
		return "TLSRoute " + r.Namespace + "/" + r.Object
	}
	rule := strings.TrimPrefix(r.Name, "gw_"+r.Object+".")
	rule, _, _ = strings.Cut(rule, ".")
	kind := "HTTPRoute"
	if r.Source == dcm.SourceGRPCRoute {
		kind, rule = "GRPCRoute", strings.TrimPrefix(rule, "g")
	}
	return kind + " " + r.Namespace + "/" + r.Object + " rule " + rule
}

// RouteText is how a backend's route reads in a row: host and path, or
// for a Gateway route its rule, hostnames and matches.
func RouteText(r dcm.Route) string {
	if r.Gateway == nil {
		return r.HostPath()
	}
	return RuleText(r) + " · " + HostsText(r) + " · " + MatchesText(r)
}

// HostsText is a route's host, or a Gateway route's hostnames ("*": any).
func HostsText(r dcm.Route) string {
	if r.Gateway == nil {
		return Or(r.Host)
	}
	if len(r.Gateway.Hostnames) == 0 {
		return "*"
	}
	return strings.Join(r.Gateway.Hostnames, ", ")
}

// MatchesText is a Gateway route's matches, " | " between them; a
// TLSRoute's is "SNI passthrough".
func MatchesText(r dcm.Route) string {
	if r.Source == dcm.SourceTLSRoute {
		return "SNI passthrough"
	}
	parts := make([]string, 0, len(r.Gateway.Matches))
	for _, m := range r.Gateway.Matches {
		s := m.PathType + " " + m.Path
		if m.Method != "" {
			s += " " + m.Method
		}
		for _, h := range m.Headers {
			s += " header " + valueMatchText(h)
		}
		for _, q := range m.Query {
			s += " query " + valueMatchText(q)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " | ")
}

func valueMatchText(v dcm.ValueMatch) string {
	if v.Regex {
		return v.Name + "~" + v.Value
	}
	return v.Name + "=" + v.Value
}

// GatewayText is a Gateway route's Gateway, listener and bind ("–" else).
func GatewayText(r dcm.Route) string {
	g := r.Gateway
	if g == nil {
		return "–"
	}
	s := g.Gateway + " listener " + g.Listener + " on " + g.Bind
	switch {
	case g.Unresolved && r.Source == dcm.SourceTLSRoute:
		s += " · no backendRef resolves: refused"
	case g.Unresolved:
		s += " · no backendRef resolves: 500"
	}
	return s
}

// FiltersText is a Gateway route's filters in short ("–": none).
func FiltersText(r dcm.Route) string {
	if r.Gateway == nil || r.Gateway.Filters == nil {
		return "–"
	}
	f := r.Gateway.Filters
	var parts []string
	if f.RequestHeaders != nil {
		parts = append(parts, "request headers"+modsText(*f.RequestHeaders))
	}
	if f.ResponseHeaders != nil {
		parts = append(parts, "response headers"+modsText(*f.ResponseHeaders))
	}
	if rd := f.Redirect; rd != nil {
		s := "redirect"
		if rd.Scheme != "" {
			s += " scheme " + rd.Scheme
		}
		if rd.Hostname != "" {
			s += " host " + rd.Hostname
		}
		if rd.Port != 0 {
			s += " port " + strconv.Itoa(rd.Port)
		}
		s += pathModText(rd.Path)
		if rd.StatusCode != 0 {
			s += " " + strconv.Itoa(rd.StatusCode)
		}
		parts = append(parts, s)
	}
	if rw := f.Rewrite; rw != nil {
		s := "rewrite"
		if rw.Hostname != "" {
			s += " host " + rw.Hostname
		}
		parts = append(parts, s+pathModText(rw.Path))
	}
	if len(parts) == 0 {
		return "–"
	}
	return strings.Join(parts, "; ")
}

func modsText(m dcm.HeaderMods) string {
	s := ""
	for _, h := range m.Set {
		s += " set " + h.Name + "=" + h.Value
	}
	for _, h := range m.Add {
		s += " add " + h.Name + "=" + h.Value
	}
	for _, n := range m.Remove {
		s += " remove " + n
	}
	return s
}

func pathModText(p *dcm.PathModifier) string {
	if p == nil {
		return ""
	}
	return " path " + p.Type + " " + p.Value
}

// ConditionText is a status condition in one line.
func ConditionText(c dcm.Condition) string {
	return c.Type + " " + c.Status + " · " + c.Reason + " · " + c.Message
}

// RouteViewText names a route of the Gateway API panel: ns/name, and
// "(GRPCRoute)" after a GRPCRoute's.
func RouteViewText(r dcm.HTTPRouteView) string {
	if r.Kind != "" {
		return r.Namespace + "/" + r.Name + " (" + r.Kind + ")"
	}
	return r.Namespace + "/" + r.Name
}

// HostnamesText is an HTTPRoute's hostnames ("*": any).
func HostnamesText(hs []string) string {
	if len(hs) == 0 {
		return "*"
	}
	return strings.Join(hs, ", ")
}

// ParentText is the Gateway and listener an HTTPRoute's status is for.
func ParentText(p dcm.RouteParentView) string {
	if p.Listener == "" {
		return p.Gateway
	}
	return p.Gateway + " " + p.Listener
}
