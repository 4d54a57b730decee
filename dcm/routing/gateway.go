package routing

import (
	"sort"
	"strconv"
	"strings"

	"github.com/dcm-router/dcm/dcm"
)

// Gateway routes (dcm.Route.Gateway) are found by the Gateway frontends
// in two maps, read by a Lua action (dcm/haproxy's gateway script):
//
//   - gateway_rule, keyed by the route's HAProxy backend: its matches and
//     filters (GatewayRuleValue);
//   - gateway, keyed by "<bind>/<hostname>" (a hostname of the route's,
//     "*.domain" for a wildcard, "" for any host): the candidates a
//     request to that bind and host tries, "<backend>/<match index>"
//     comma-separated, in the Gateway API's precedence (gatewayEntries).
//
// The action takes, of the request's host, each of its wildcards and any
// host, the first candidate whose match matches, and of those the best
// by the same precedence, then the more specific hostname, then the rank
// (gateway_rule holds it): routes of every hostname that takes the host
// compete by their matches, as the conformance suite asks (a "*.com"
// route's /v2 wins over an "example.com" route's / for example.com/v2).
// Building each list's order here, once, keeps the planner, the renderer
// and the runtime on one order; HAProxy walks a few lists.

// GatewayKey is the gateway map's key of a bind and a hostname.
func GatewayKey(bind, host string) string { return bind + "/" + host }

// gatewayChunk bounds a gateway map value: a list longer is cut into
// entries "<key>", "<key>~1", "<key>~2"…, each but the last ending with
// ",~", so that every `add map` line fits HAProxy's buffer whatever the
// number of routes on one hostname.
const gatewayChunk = 8000

// Groups calls f with what the planner and the renderer group a
// backend's map entries by (dcm/plan's mapOps): its host; for a Gateway
// route, each gateway key it has a part in ("\x00" keeps them apart from
// hosts). Every backend with a part in a key shares a group with the
// others, so the entries of a touched backend's keys are built from its
// groups' backends alone; such a subset also builds partial entries for
// other keys of theirs, which no touched backend has, alike before and
// after (GatewayKeyGroup tells them apart).
func Groups(r dcm.Route, f func(string)) {
	g := r.Gateway
	if g == nil {
		f(r.Host)
		return
	}
	if len(g.Hostnames) == 0 {
		f("\x00" + GatewayKey(g.Bind, ""))
	}
	if r.Kind == dcm.KindPassthrough {
		f("\x00" + g.Bind) // the bind's passthrough mark (gatewayEntries)
	}
	for _, h := range g.Hostnames {
		f("\x00" + GatewayKey(g.Bind, h))
	}
}

// InGroups reports whether one of r's groups is in a set.
func InGroups(r dcm.Route, has func(string) bool) bool {
	if r.Gateway == nil {
		return has(r.Host)
	}
	in := false
	Groups(r, func(g string) { in = in || has(g) })
	return in
}

// GatewayKeyGroup is the group of a gateway map key (Groups), a chunk's
// too.
func GatewayKeyGroup(key string) string {
	if i := strings.LastIndexByte(key, '~'); i >= 0 {
		key = key[:i]
	}
	return "\x00" + key
}

type candidate struct {
	b     *dcm.Backend
	index int
	m     dcm.HTTPMatch
}

// pathClass ranks path match types: exact, then regular expressions
// (whose precedence the spec leaves to implementations: before prefixes,
// as Envoy-based ones do, so that a catch-all prefix does not hide
// them), then prefixes.
func pathClass(t string) int {
	switch t {
	case dcm.GatewayPathExact:
		return 0
	case dcm.GatewayPathRegex:
		return 1
	}
	return 2
}

// pathLen is a match's path length in the precedence: a prefix's trailing
// slash does not count (/foo/ and /foo match alike).
func pathLen(m dcm.HTTPMatch) int {
	if m.PathType == dcm.GatewayPathPrefix {
		return len(strings.TrimRight(m.Path, "/"))
	}
	return len(m.Path)
}

// before orders candidates by the Gateway API's match precedence: an
// exact path, a regular expression, the longest prefix, a method, the most headers, the most
// query parameters, then the rule's Rank (oldest route, its name, the
// rule's index), the match's index within its rule.
func (c candidate) before(o candidate) bool {
	a, b := c.m, o.m
	if x, y := pathClass(a.PathType), pathClass(b.PathType); x != y {
		return x < y
	}
	if x, y := pathLen(a), pathLen(b); x != y {
		return x > y
	}
	if (a.Method != "") != (b.Method != "") {
		return a.Method != ""
	}
	if len(a.Headers) != len(b.Headers) {
		return len(a.Headers) > len(b.Headers)
	}
	if len(a.Query) != len(b.Query) {
		return len(a.Query) > len(b.Query)
	}
	if ra, rb := c.b.Route.Gateway.Rank, o.b.Route.Gateway.Rank; ra != rb {
		return ra < rb
	}
	if c.index != o.index {
		return c.index < o.index
	}
	return c.b.Name < o.b.Name
}

// GatewayPassthroughMark is the gateway map's value under a bind's own
// key ("127.0.20.1:443", no '/') when a passthrough route (a TLSRoute's)
// is served there: a ClientHello whose SNI no such route takes is then
// refused rather than handed to the bind's TLS termination. A bind is one
// Gateway's port, whose listeners are all TLS or all HTTPS (dcm/kube
// refuses the mix as ProtocolConflict).
const GatewayPassthroughMark = "p"

// gatewayEntries are the gateway map's entries of the routed Gateway
// backends. A passthrough route is one candidate, index 0, of no match:
// it ties with every other by the match precedence and goes by its rank.
func gatewayEntries(backends []*dcm.Backend) []dcm.MapEntry {
	byKey := map[string][]candidate{}
	var keys []string
	marks := map[string]*dcm.Backend{}
	for _, b := range backends {
		g := b.Route.Gateway
		hosts := g.Hostnames
		if len(hosts) == 0 {
			hosts = []string{""}
		}
		if b.Route.Kind == dcm.KindPassthrough && (marks[g.Bind] == nil || b.Name < marks[g.Bind].Name) {
			marks[g.Bind] = b
		}
		for _, h := range hosts {
			k := GatewayKey(g.Bind, h)
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			for i, m := range g.Matches {
				byKey[k] = append(byKey[k], candidate{b, i, m})
			}
			if b.Route.Kind == dcm.KindPassthrough {
				byKey[k] = append(byKey[k], candidate{b, 0, dcm.HTTPMatch{}})
			}
		}
	}
	sort.Strings(keys)
	var out []dcm.MapEntry
	for bind, b := range marks {
		out = append(out, dcm.MapEntry{Key: bind, Backend: b.Name, Action: GatewayPassthroughMark})
	}
	for _, k := range keys {
		cs := byKey[k]
		sort.SliceStable(cs, func(i, j int) bool { return cs[i].before(cs[j]) })
		var val strings.Builder
		n := 0
		flush := func(more bool) {
			key := k
			if n > 0 {
				key += "~" + strconv.Itoa(n)
			}
			v := val.String()
			if more {
				v += ",~"
			}
			out = append(out, dcm.MapEntry{Key: key, Backend: cs[0].b.Name, Action: v})
			val.Reset()
			n++
		}
		for _, c := range cs {
			item := c.b.ProxyName() + "/" + strconv.Itoa(c.index)
			if val.Len() > 0 && val.Len()+1+len(item) > gatewayChunk {
				flush(true)
			}
			if val.Len() > 0 {
				val.WriteByte(',')
			}
			val.WriteString(item)
		}
		flush(false)
	}
	return out
}

// hexUp is text as upper-case hex: the rule's structure is in lower-case
// letters and '-' and '.', so no text can break it, nor a map line or a
// command.
func hexUp(s string) string { return strings.ToUpper(dcm.Hex([]byte(s))) }

// GatewayRuleValue encodes a Gateway route's matches and filters as its
// gateway_rule map value:
//
//	value   = section *("." section)
//	section = tag *("-" seg)
//	m  a match:          (e|p|r)HEX(path) [vHEX(method)] *(hHEX(lower name) (t|g)HEX(value)) *(qHEX(name) (t|g)HEX(value))
//	a, b request, response header modifier: *(sHEX(name) tHEX(value) | aHEX(name) tHEX(value) | dHEX(name))
//	r  a redirect:       [sHEX(scheme)] [hHEX(host)] [pHEX(port)] [(f|x)HEX(path)] cHEX(code)
//	w  a rewrite:        [hHEX(host)] [(f|x)HEX(path)]
//	u  unresolved: answer 500, or [cHEX(code)] (503 for a GRPCRoute's rule)
//	l  the listener's own hostname, when it has one: tHEX(hostname)
//	   (listener isolation: a request whose host a more specific
//	   listener of the bind takes sees that listener's routes only)
//	k  the rank:          tHEX(rank)
//	t  a passthrough route (a TLSRoute's): found by the SNI, no match
//
// t is an exact value, g a regular expression, f a full path, x a
// replacement of the matched prefix. The Lua action decodes it.
func GatewayRuleValue(r dcm.Route) string {
	g := r.Gateway
	if g == nil {
		return ""
	}
	var sections []string
	for _, m := range g.Matches {
		s := "m-" + string("erp"[pathClass(m.PathType)]) + hexUp(m.Path)
		if m.Method != "" {
			s += "-v" + hexUp(m.Method)
		}
		for _, l := range []struct {
			tag  string
			list []dcm.ValueMatch
		}{{"h", m.Headers}, {"q", m.Query}} {
			for _, v := range l.list {
				name := v.Name
				if l.tag == "h" {
					name = strings.ToLower(name)
				}
				how := "t"
				if v.Regex {
					how = "g"
				}
				s += "-" + l.tag + hexUp(name) + "-" + how + hexUp(v.Value)
			}
		}
		sections = append(sections, s)
	}
	if f := g.Filters; f != nil {
		for _, h := range []struct {
			tag  string
			mods *dcm.HeaderMods
		}{{"a", f.RequestHeaders}, {"b", f.ResponseHeaders}} {
			if h.mods != nil {
				sections = append(sections, headerMods(h.tag, h.mods))
			}
		}
		if d := f.Redirect; d != nil {
			s := "r" + opt("s", d.Scheme) + opt("h", d.Hostname)
			if d.Port != 0 {
				s += "-p" + hexUp(strconv.Itoa(d.Port))
			}
			code := d.StatusCode
			if code == 0 {
				code = 302
			}
			sections = append(sections, s+pathMod(d.Path)+"-c"+hexUp(strconv.Itoa(code)))
		}
		if w := f.Rewrite; w != nil {
			sections = append(sections, "w"+opt("h", w.Hostname)+pathMod(w.Path))
		}
	}
	if r.Kind == dcm.KindPassthrough {
		sections = append(sections, "t")
	}
	if g.Unresolved {
		// A GRPCRoute's rule answers 503, which gRPC clients read as
		// UNAVAILABLE, as the spec asks; an HTTPRoute's 500.
		if r.Source == dcm.SourceGRPCRoute {
			sections = append(sections, "u-c"+hexUp("503"))
		} else {
			sections = append(sections, "u")
		}
	}
	if g.ListenerHostname != "" {
		sections = append(sections, "l-t"+hexUp(g.ListenerHostname))
	}
	sections = append(sections, "k-t"+hexUp(g.Rank))
	return strings.Join(sections, ".")
}

func opt(tag, v string) string {
	if v == "" {
		return ""
	}
	return "-" + tag + hexUp(v)
}

func pathMod(p *dcm.PathModifier) string {
	if p == nil {
		return ""
	}
	if p.Type == dcm.ReplacePrefixMatch {
		return "-x" + hexUp(p.Value)
	}
	return "-f" + hexUp(p.Value)
}

func headerMods(tag string, h *dcm.HeaderMods) string {
	s := tag
	for _, v := range h.Set {
		s += "-s" + hexUp(v.Name) + "-t" + hexUp(v.Value)
	}
	for _, v := range h.Add {
		s += "-a" + hexUp(v.Name) + "-t" + hexUp(v.Value)
	}
	for _, n := range h.Remove {
		s += "-d" + hexUp(n)
	}
	return s
}

// ValidateGatewayValue checks a value of a Gateway map against the
// alphabet its map's values are written in and its length: what reaches
// a map file and an `add map` command.
func ValidateGatewayValue(t dcm.MapTable, field, s string) error {
	bad := &dcm.InvalidError{Reason: dcm.RejectInvalidValue, Field: field, Value: s}
	if s == "" || len(s) > dcm.MaxGatewayRuleValue {
		return bad
	}
	allowed := "-.abcdefghklmpqrstuvwx"
	if t == dcm.MapGateway {
		allowed = "abcdefghijklmnopqrstuvwxyz_:-./,~"
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' && (t == dcm.MapGateway || c <= 'F') || strings.IndexByte(allowed, c) >= 0) {
			return bad
		}
	}
	return nil
}
