package dcm

import (
	"hash/fnv"
)

// A sticky route's cookie, as OpenShift's router sets it: a name of the
// route's own (so two sticky routes on one host never overwrite each
// other's), HttpOnly, and Secure with a SameSite attribute on a route whose
// TLS HAProxy terminates, unless plain HTTP is served too (Allow).
//
// HAProxy 2.6 fixes a backend's cookie name in the cfg, and spares serve
// any route: every sticky backend is rendered with one fixed name
// (dcm/haproxy.CookieName) that no client sees. Rules in the backend read
// the route's name and SameSite from setting maps, give HAProxy the value
// of the route's cookie under the fixed name, and rename the cookie HAProxy
// sets. Name and attributes are map entries: a client's cookie stays valid
// across pool moves and reloads (its value is the dynamic cookie of the
// route's backend name), and a custom name is a map replace, no reload.

// SameSite values of a secure cookie, as OpenShift's cookie-same-site.
const (
	SameSiteLax    = "Lax"
	SameSiteStrict = "Strict"
	SameSiteNone   = "None"
)

// SameSiteValues lists them, the default (None) first.
var SameSiteValues = []string{SameSiteNone, SameSiteLax, SameSiteStrict}

// MaxCookieNameLen bounds a cookie name (a map key's value and a header).
const MaxCookieNameLen = 128

// DefaultCookieName is a route's cookie name without a custom one: a hash
// of the route's key, as OpenShift's router names it after its routing
// key, so every replica and every reload agrees. It needs no secrecy, only
// stability and spread: 128-bit FNV-1a, as crypto/sha256 would pull about
// 60 KB (gzip) of crypto into the browser's planner.
func DefaultCookieName(r Route) string {
	h := fnv.New128a()
	h.Write([]byte(r.Namespace + "/" + r.Name))
	return Hex(h.Sum(nil))
}

// CookieNameOf is the name of a sticky route's cookie.
func (r Route) CookieNameOf() string {
	if r.HTTP.CookieName != "" {
		return r.HTTP.CookieName
	}
	return DefaultCookieName(r)
}

// CookieSecure reports whether the route's cookie is Secure (with
// SameSite): HAProxy terminates its TLS and does not serve it over plain
// HTTP too, OpenShift's rule.
func (r Route) CookieSecure() bool {
	return r.TerminatesTLS() && r.InsecureEffective() != InsecureAllow
}

// CookieSameSiteOf is the SameSite attribute of the route's cookie, ""
// when the cookie is not Secure.
func (r Route) CookieSameSiteOf() string {
	if !r.CookieSecure() {
		return ""
	}
	if r.HTTP.CookieSameSite != "" {
		return r.HTTP.CookieSameSite
	}
	return SameSiteNone
}

// ValidateCookieName checks a cookie name against OpenShift's pattern,
// [a-zA-Z0-9_-]+: what reaches a map file and a Set-Cookie header.
func ValidateCookieName(field, s string) error {
	if s == "" || len(s) > MaxCookieNameLen {
		return invalid(RejectInvalidValue, field, s)
	}
	for _, c := range []byte(s) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
		if !ok {
			return invalid(RejectInvalidValue, field, s)
		}
	}
	return nil
}

// ValidateSameSite checks a SameSite attribute; "" is the default.
func ValidateSameSite(field, s string) error {
	if s == "" {
		return nil
	}
	for _, v := range SameSiteValues {
		if s == v {
			return nil
		}
	}
	return invalid(RejectInvalidValue, field, s)
}

// validateCookie checks a route's cookie settings; a passthrough route
// has no cookie to set them on.
func validateCookie(r Route) error {
	o := r.HTTP
	if r.Kind == KindPassthrough && o.CookieName+o.CookieSameSite != "" {
		return invalid(RejectUnsupported, "cookie on a passthrough route", o.CookieName+o.CookieSameSite)
	}
	if o.CookieName != "" {
		if err := ValidateCookieName("cookie name", o.CookieName); err != nil {
			return err
		}
	}
	return ValidateSameSite("cookie same-site", o.CookieSameSite)
}

// Setting maps of sticky routes' cookies (route_cookie.go), keyed by the
// HAProxy backend: the name of each sticky route's cookie, and the SameSite
// attribute of each secure one (its entry makes the cookie Secure).
const (
	MapCookieName     MapTable = "cookie_name"
	MapCookieSameSite MapTable = "cookie_samesite"
)

func (t MapTable) cookie() bool { return t == MapCookieName || t == MapCookieSameSite }
