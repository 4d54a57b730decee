package kube

import (
	"fmt"
	"strings"

	"github.com/dcm-router/dcm/dcm"
)

// Bounds the source keeps what it hands HAProxy's side to: the CRDs'
// own limits, checked again because dcm must not trust that the API
// server validated them.
const (
	maxGatewayHostnames = 16
	maxGatewayMatches   = 64
	maxGatewayValues    = 16
	maxGatewayValueLen  = 4096
)

// checkGatewayRule checks every string of a rule that reaches HAProxy
// (map keys and values, Lua, headers): paths, HTTP tokens, text without
// CR, LF or NUL, hostnames, redirect and rewrite targets.
func checkGatewayRule(rl gwRule) error {
	if len(rl.matches) == 0 || len(rl.matches) > maxGatewayMatches {
		return fmt.Errorf("matches: %d, want 1 to %d", len(rl.matches), maxGatewayMatches)
	}
	for _, m := range rl.matches {
		if err := checkHTTPMatch(m); err != nil {
			return err
		}
	}
	return checkHTTPFilters(rl.filters)
}

func checkHTTPMatch(m dcm.HTTPMatch) error {
	switch m.PathType {
	case dcm.GatewayPathExact, dcm.GatewayPathPrefix:
		if err := dcm.ValidatePath("path", m.Path); err != nil {
			return err
		}
	case dcm.GatewayPathRegex:
		// Only a GRPCRoute's method matches get here (ruleMatches).
		if m.Path == "" || !headerText(m.Path) {
			return fmt.Errorf("path regular expression %q: empty, with a control character or too long", m.Path)
		}
	default:
		return fmt.Errorf("path type %q is not supported", m.PathType)
	}
	if m.Method != "" && !httpToken(m.Method) {
		return fmt.Errorf("method %q is not an HTTP token", m.Method)
	}
	if len(m.Headers) > maxGatewayValues || len(m.Query) > maxGatewayValues {
		return fmt.Errorf("more than %d header or query matches", maxGatewayValues)
	}
	for _, h := range m.Headers {
		if !httpToken(h.Name) {
			return fmt.Errorf("header name %q is not an HTTP token", h.Name)
		}
		if !headerText(h.Value) {
			return fmt.Errorf("header %s: value has a control character or is too long", h.Name)
		}
	}
	for _, q := range m.Query {
		if q.Name == "" || !headerText(q.Name) || strings.ContainsAny(q.Name, " &=#") {
			return fmt.Errorf("query parameter name %q is not supported", q.Name)
		}
		if !headerText(q.Value) {
			return fmt.Errorf("query parameter %s: value has a control character or is too long", q.Name)
		}
	}
	return nil
}

func checkHTTPFilters(f *dcm.HTTPFilters) error {
	if f == nil {
		return nil
	}
	for _, h := range []*dcm.HeaderMods{f.RequestHeaders, f.ResponseHeaders} {
		if h == nil {
			continue
		}
		if len(h.Set) > maxGatewayValues || len(h.Add) > maxGatewayValues || len(h.Remove) > maxGatewayValues {
			return fmt.Errorf("header modifier: more than %d headers", maxGatewayValues)
		}
		for _, v := range append(append([]dcm.HeaderValue(nil), h.Set...), h.Add...) {
			if !httpToken(v.Name) {
				return fmt.Errorf("header name %q is not an HTTP token", v.Name)
			}
			if !headerText(v.Value) {
				return fmt.Errorf("header %s: value has a control character or is too long", v.Name)
			}
		}
		for _, n := range h.Remove {
			if !httpToken(n) {
				return fmt.Errorf("header name %q is not an HTTP token", n)
			}
		}
	}
	if rd := f.Redirect; rd != nil {
		if rd.Scheme != "" && rd.Scheme != "http" && rd.Scheme != "https" {
			return fmt.Errorf("redirect scheme %q: only http and https", rd.Scheme)
		}
		if err := dcm.ValidateHost("redirect hostname", rd.Hostname); err != nil {
			return err
		}
		if rd.Port != 0 {
			if err := dcm.ValidatePort("redirect port", rd.Port); err != nil {
				return err
			}
		}
		switch rd.StatusCode {
		case 0, 301, 302, 303, 307, 308:
		default:
			return fmt.Errorf("redirect status code %d is not supported", rd.StatusCode)
		}
		if err := checkPathModifier(rd.Path); err != nil {
			return err
		}
	}
	if rw := f.Rewrite; rw != nil {
		if err := dcm.ValidateHost("rewrite hostname", rw.Hostname); err != nil {
			return err
		}
		return checkPathModifier(rw.Path)
	}
	return nil
}

func checkPathModifier(p *dcm.PathModifier) error {
	if p == nil {
		return nil
	}
	if p.Type != dcm.ReplaceFullPath && p.Type != dcm.ReplacePrefixMatch {
		return fmt.Errorf("path modifier %q is not supported", p.Type)
	}
	return dcm.ValidatePath("path modifier", p.Value)
}

// httpToken: an RFC 9110 token (header names, methods), bounded.
func httpToken(s string) bool {
	if s == "" || len(s) > dcm.MaxHeaderNameLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// headerText: printable text and tabs, no CR, LF, NUL or DEL, bounded;
// bytes ≥ 0x80 (UTF-8) pass.
func headerText(s string) bool {
	if len(s) > maxGatewayValueLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
