package dcm

import (
	"strconv"
	"strings"
)

// HTTPOptions are a route's HTTP settings that HAProxy reads from setting
// maps keyed by the route's HAProxy backend (dcm/routing.SettingMapTables),
// so a change is a map replace, never a new rendering of the backend: they
// stay out of Route.SameServing. The zero value is the router's defaults.
type HTTPOptions struct {
	// Forwarded is the route's forwarded-headers policy; "" is the
	// router's default (--forwarded-headers).
	Forwarded ForwardedPolicy `json:"forwarded,omitempty"`
	// TimeoutMillis overrides the server timeout (OpenShift's
	// haproxy.router.openshift.io/timeout); 0 keeps the default.
	TimeoutMillis int64 `json:"timeoutMs,omitempty"`
	// TunnelMillis overrides the tunnel timeout (WebSocket and other
	// upgraded connections); 0 keeps the default.
	TunnelMillis int64 `json:"tunnelMs,omitempty"`
	// HSTS is the Strict-Transport-Security header of HTTPS responses,
	// normalised by ParseHSTS; "" sends none.
	HSTS string `json:"hsts,omitempty"`
	// CookieName names a sticky route's cookie; "" is DefaultCookieName
	// (route_cookie.go).
	CookieName string `json:"cookieName,omitempty"`
	// CookieSameSite is the SameSite attribute of a secure cookie (Lax,
	// Strict, None); "" is None.
	CookieSameSite string `json:"cookieSameSite,omitempty"`
	// RewriteTarget replaces the route's path prefix in the requests it
	// serves (OpenShift's rewrite-target, route_rewrite.go); "" keeps
	// the path.
	RewriteTarget string `json:"rewriteTarget,omitempty"`
}

// ReasonPassthroughTimeout is the reload of a passthrough route whose
// timeouts are new or changed: its backend is TCP, and HAProxy 2.6 sets a
// TCP stream's timeouts by no rule, so they are written into the backend
// (a new such route takes no spare either, spares have none).
const ReasonPassthroughTimeout ReloadReason = "passthrough-timeout"

// TCPTimeouts are the server and tunnel timeouts rendered into a
// passthrough route's backend (0: the defaults); none for other kinds,
// whose timeouts are setting maps' entries.
func (r Route) TCPTimeouts() (server, tunnel int64) {
	if r.Kind != KindPassthrough {
		return 0, 0
	}
	return r.HTTP.TimeoutMillis, r.HTTP.TunnelMillis
}

// ForwardedPolicy is OpenShift's set-forwarded-headers policy.
type ForwardedPolicy string

const (
	// ForwardAppend adds the client to X-Forwarded-For and Forwarded.
	ForwardAppend ForwardedPolicy = "append"
	// ForwardReplace drops the client's own and sets them anew.
	ForwardReplace ForwardedPolicy = "replace"
	// ForwardIfNone sets them only when the client sent none.
	ForwardIfNone ForwardedPolicy = "if-none"
	// ForwardNever leaves them as the client sent them (but plain HTTP
	// never forwards a client's X-Forwarded-Proto).
	ForwardNever ForwardedPolicy = "never"
)

// ForwardedPolicies lists the policies, default first.
var ForwardedPolicies = []ForwardedPolicy{ForwardAppend, ForwardReplace, ForwardIfNone, ForwardNever}

// MaxTimeoutMillis is the longest timeout HAProxy takes (a signed 32-bit
// count of milliseconds, about 24.8 days).
const MaxTimeoutMillis = 1<<31 - 1

// ValidateForwarded checks a forwarded-headers policy; "" is the default.
func ValidateForwarded(field string, p ForwardedPolicy) error {
	if p == "" {
		return nil
	}
	for _, q := range ForwardedPolicies {
		if p == q {
			return nil
		}
	}
	return invalid(RejectInvalidValue, field, string(p))
}

// timeUnits are the units OpenShift's router accepts in a timeout, in
// microseconds.
var timeUnits = map[string]int64{"us": 1, "ms": 1000, "s": 1e6, "m": 60e6, "h": 3600e6, "d": 86400e6}

// ParseTimeout reads a timeout as OpenShift's router accepts it: a decimal
// number followed by us, ms, s, m, h or d; a bare number is milliseconds.
// The result is in milliseconds (microseconds round up), 1 to
// MaxTimeoutMillis.
func ParseTimeout(field, s string) (int64, error) {
	bad := invalid(RejectInvalidValue, field, s)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 || i > 12 {
		return 0, bad
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, bad
	}
	unit := s[i:]
	if unit == "" {
		unit = "ms"
	}
	us, ok := timeUnits[unit]
	if !ok || n > MaxTimeoutMillis*1000/us {
		return 0, bad
	}
	ms := (n*us + 999) / 1000
	if ms < 1 || ms > MaxTimeoutMillis {
		return 0, bad
	}
	return ms, nil
}

// ParseHSTS validates a Strict-Transport-Security value as OpenShift's
// router does — max-age=<delta-seconds> required, includeSubDomains and
// preload optional, each at most once, separated by ';', directive names in
// any case, nothing else — and returns it normalised: the directives in
// that order, canonically spelled, joined by ';' without spaces.
func ParseHSTS(field, s string) (string, error) {
	bad := invalid(RejectInvalidValue, field, s)
	if len(s) > 256 {
		return "", bad
	}
	age, sub, preload := "", false, false
	for _, part := range strings.Split(s, ";") {
		d := strings.TrimSpace(part)
		name, val, hasVal := strings.Cut(d, "=")
		switch {
		case d == "":
			continue // "max-age=1;" as OpenShift accepts
		case strings.EqualFold(name, "max-age") && hasVal && age == "":
			val = strings.Trim(strings.TrimSpace(val), `"`)
			if val == "" || len(val) > 10 || strings.Trim(val, "0123456789") != "" {
				return "", bad
			}
			age = strings.TrimLeft(val, "0")
			if age == "" {
				age = "0"
			}
		case strings.EqualFold(d, "includeSubDomains") && !sub:
			sub = true
		case strings.EqualFold(d, "preload") && !preload:
			preload = true
		default:
			return "", bad
		}
	}
	if age == "" {
		return "", bad
	}
	out := "max-age=" + age
	if sub {
		out += ";includeSubDomains"
	}
	if preload {
		out += ";preload"
	}
	return out, nil
}

// ValidateHTTPOptions checks a route's HTTP options against its kind:
// passthrough routes are TCP (HAProxy sees none of their headers; their
// timeouts reload, see ReasonPassthroughTimeout), HSTS needs a route whose
// TLS HAProxy terminates.
func ValidateHTTPOptions(r Route) error {
	o := r.HTTP
	if err := ValidateForwarded("forwarded headers", o.Forwarded); err != nil {
		return err
	}
	for _, t := range []struct {
		field string
		ms    int64
	}{{"timeout", o.TimeoutMillis}, {"tunnel timeout", o.TunnelMillis}} {
		if t.ms < 0 || t.ms > MaxTimeoutMillis {
			return invalid(RejectInvalidValue, t.field, strconv.FormatInt(t.ms, 10))
		}
	}
	if o.HSTS != "" {
		if n, err := ParseHSTS("hsts", o.HSTS); err != nil || n != o.HSTS {
			return invalid(RejectInvalidValue, "hsts", o.HSTS)
		}
		if !r.TerminatesTLS() {
			return invalid(RejectUnsupported, "hsts on a route whose TLS HAProxy does not terminate", o.HSTS)
		}
	}
	if err := validateCookie(r); err != nil {
		return err
	}
	if err := validateRewrite(r); err != nil {
		return err
	}
	if r.Kind == KindPassthrough {
		if o.Forwarded != "" {
			return invalid(RejectUnsupported, "forwarded headers on a passthrough route", string(o.Forwarded))
		}
	}
	return nil
}
