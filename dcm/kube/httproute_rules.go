package kube

import (
	"errors"
	"fmt"
	"regexp/syntax"
	"strings"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dcm-router/dcm/dcm"
)

// gwRule is one HTTPRoute rule as dcm serves it.
type gwRule struct {
	matches    []dcm.HTTPMatch
	filters    *dcm.HTTPFilters
	services   []dcm.ServiceRef
	unresolved bool
	// refReason and refMsg say why a backendRef does not resolve (the
	// route's ResolvedRefs); "" when all do.
	refReason, refMsg string
}

// routeRules converts an HTTPRoute's hostnames and rules. An error is a
// field dcm cannot honour: the whole route is refused (UnsupportedValue),
// as serving part of it would send some of its requests elsewhere.
func (in gwInput) routeRules(kind string, r *gwv1.HTTPRoute, out *gwOutput) ([]gwRule, error) {
	hosts := make([]string, len(r.Spec.Hostnames))
	for i, h := range r.Spec.Hostnames {
		hosts[i] = lower(string(h))
	}
	if len(hosts) > maxGatewayHostnames {
		return nil, fmt.Errorf("spec.hostnames: more than %d", maxGatewayHostnames)
	}
	if err := validHostnames(hosts); err != nil {
		return nil, err
	}
	rules := make([]gwRule, 0, len(r.Spec.Rules))
	for i, rule := range r.Spec.Rules {
		field := fmt.Sprintf("spec.rules[%d]", i)
		switch {
		case rule.Timeouts != nil:
			return nil, fmt.Errorf("%s.timeouts: not supported", field)
		case rule.Retry != nil:
			return nil, fmt.Errorf("%s.retry: not supported", field)
		case rule.SessionPersistence != nil:
			return nil, fmt.Errorf("%s.sessionPersistence: not supported", field)
		}
		var rl gwRule
		var err error
		if rl.matches, err = ruleMatches(field, rule.Matches, kind == KindGRPCRoute); err != nil {
			return nil, err
		}
		if rl.filters, err = ruleFilters(field+".filters", rule.Filters, rl.matches); err != nil {
			return nil, err
		}
		if err := checkGatewayRule(rl); err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		if err := in.ruleBackends(kind, r, field, rule, &rl, out); err != nil {
			return nil, err
		}
		rules = append(rules, rl)
	}
	return rules, nil
}

// ruleMatches converts a rule's matches; none is PathPrefix "/". regexOK
// serves a RegularExpression path that is not a literal one as such: a
// GRPCRoute's method matches (grpcMethodPath) are, an HTTPRoute's are
// refused.
func ruleMatches(field string, ms []gwv1.HTTPRouteMatch, regexOK bool) ([]dcm.HTTPMatch, error) {
	if len(ms) == 0 {
		return []dcm.HTTPMatch{{PathType: dcm.GatewayPathPrefix, Path: "/"}}, nil
	}
	out := make([]dcm.HTTPMatch, 0, len(ms))
	for j, m := range ms {
		f := fmt.Sprintf("%s.matches[%d]", field, j)
		hm := dcm.HTTPMatch{PathType: dcm.GatewayPathPrefix, Path: "/"}
		if m.Path != nil {
			if m.Path.Type != nil {
				hm.PathType = string(*m.Path.Type)
			}
			if m.Path.Value != nil {
				hm.Path = *m.Path.Value
			}
		}
		if hm.PathType == dcm.GatewayPathRegex {
			lit, ok := literalRegex(hm.Path)
			switch {
			case ok:
				hm.PathType, hm.Path = dcm.GatewayPathExact, lit
			case !regexOK:
				return nil, fmt.Errorf("%s.path: RegularExpression %q is not supported, only Exact and PathPrefix (or a regular expression that is a literal path)", f, hm.Path)
			}
		}
		if m.Method != nil {
			hm.Method = string(*m.Method)
		}
		for _, h := range m.Headers {
			hm.Headers = append(hm.Headers, dcm.ValueMatch{Name: string(h.Name), Value: h.Value,
				Regex: h.Type != nil && *h.Type == gwv1.HeaderMatchRegularExpression})
		}
		for _, q := range m.QueryParams {
			hm.Query = append(hm.Query, dcm.ValueMatch{Name: string(q.Name), Value: q.Value,
				Regex: q.Type != nil && *q.Type == gwv1.QueryParamMatchRegularExpression})
		}
		out = append(out, hm)
	}
	return out, nil
}

// literalRegex reports whether a path regular expression matches one path
// only (no metacharacters but an optional ^…$): it is then an Exact match.
func literalRegex(re string) (string, bool) {
	p, err := syntax.Parse(re, syntax.Perl)
	if err != nil {
		return "", false
	}
	p = p.Simplify()
	subs := []*syntax.Regexp{p}
	if p.Op == syntax.OpConcat {
		subs = p.Sub
	}
	var b strings.Builder
	for i, s := range subs {
		switch {
		case s.Op == syntax.OpLiteral && s.Flags&syntax.FoldCase == 0:
			b.WriteString(string(s.Rune))
		case s.Op == syntax.OpBeginText && i == 0, s.Op == syntax.OpEndText && i == len(subs)-1:
		default:
			return "", false
		}
	}
	lit := b.String()
	return lit, strings.HasPrefix(lit, "/") && dcm.ValidatePath("path", lit) == nil
}

// ruleFilters converts a rule's filters; one dcm cannot honour refuses the
// route.
func ruleFilters(field string, fs []gwv1.HTTPRouteFilter, matches []dcm.HTTPMatch) (*dcm.HTTPFilters, error) {
	if len(fs) == 0 {
		return nil, nil
	}
	out := &dcm.HTTPFilters{}
	for j, f := range fs {
		ff := fmt.Sprintf("%s[%d]", field, j)
		var err error
		switch {
		case f.Type == gwv1.HTTPRouteFilterRequestHeaderModifier && f.RequestHeaderModifier != nil && out.RequestHeaders == nil:
			out.RequestHeaders = headerMods(f.RequestHeaderModifier)
		case f.Type == gwv1.HTTPRouteFilterResponseHeaderModifier && f.ResponseHeaderModifier != nil && out.ResponseHeaders == nil:
			out.ResponseHeaders = headerMods(f.ResponseHeaderModifier)
		case f.Type == gwv1.HTTPRouteFilterRequestRedirect && f.RequestRedirect != nil && out.Redirect == nil:
			out.Redirect, err = redirect(ff, f.RequestRedirect, matches)
		case f.Type == gwv1.HTTPRouteFilterURLRewrite && f.URLRewrite != nil && out.Rewrite == nil:
			out.Rewrite = &dcm.URLRewrite{}
			if f.URLRewrite.Hostname != nil {
				out.Rewrite.Hostname = lower(string(*f.URLRewrite.Hostname))
			}
			out.Rewrite.Path, err = pathModifier(ff+".urlRewrite.path", f.URLRewrite.Path, matches)
		default:
			return nil, fmt.Errorf("%s: filter %s is not supported (or given twice, or without its settings)", ff, f.Type)
		}
		if err != nil {
			return nil, err
		}
	}
	if out.Redirect != nil && out.Rewrite != nil {
		return nil, errors.New(field + ": RequestRedirect and URLRewrite cannot be combined")
	}
	return out, nil
}

func headerMods(h *gwv1.HTTPHeaderFilter) *dcm.HeaderMods {
	m := &dcm.HeaderMods{Remove: h.Remove}
	for _, v := range h.Set {
		m.Set = append(m.Set, dcm.HeaderValue{Name: string(v.Name), Value: v.Value})
	}
	for _, v := range h.Add {
		m.Add = append(m.Add, dcm.HeaderValue{Name: string(v.Name), Value: v.Value})
	}
	return m
}

func redirect(field string, r *gwv1.HTTPRequestRedirectFilter, matches []dcm.HTTPMatch) (*dcm.HTTPRedirect, error) {
	out := &dcm.HTTPRedirect{}
	if r.Scheme != nil {
		out.Scheme = lower(*r.Scheme)
	}
	if r.Hostname != nil {
		out.Hostname = lower(string(*r.Hostname))
	}
	if r.Port != nil {
		out.Port = int(*r.Port)
	}
	if r.StatusCode != nil {
		out.StatusCode = *r.StatusCode
	}
	var err error
	out.Path, err = pathModifier(field+".requestRedirect.path", r.Path, matches)
	return out, err
}

// pathModifier converts a path modifier; ReplacePrefixMatch needs every
// match of the rule to be a PathPrefix one (the spec's rule).
func pathModifier(field string, p *gwv1.HTTPPathModifier, matches []dcm.HTTPMatch) (*dcm.PathModifier, error) {
	if p == nil {
		return nil, nil
	}
	switch {
	case p.Type == gwv1.FullPathHTTPPathModifier && p.ReplaceFullPath != nil:
		return &dcm.PathModifier{Type: dcm.ReplaceFullPath, Value: *p.ReplaceFullPath}, nil
	case p.Type == gwv1.PrefixMatchHTTPPathModifier && p.ReplacePrefixMatch != nil:
		for _, m := range matches {
			if m.PathType != dcm.GatewayPathPrefix {
				return nil, errors.New(field + ": ReplacePrefixMatch needs PathPrefix matches")
			}
		}
		return &dcm.PathModifier{Type: dcm.ReplacePrefixMatch, Value: *p.ReplacePrefixMatch}, nil
	}
	return nil, fmt.Errorf("%s: type %s is not supported (or its value is missing)", field, p.Type)
}
