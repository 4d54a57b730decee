package routing

import (
	"strconv"
	"strings"

	"github.com/dcm-router/dcm/dcm"
)

// SettingValue is the value a setting map holds for a route, "" for no
// entry (the router's default applies). Timeouts are in milliseconds, the
// unit HAProxy reads a number in; HSTS is the normalised header value.
func SettingValue(t dcm.MapTable, r dcm.Route) string {
	if r.Kind == dcm.KindPassthrough {
		return "" // TCP: its timeouts are in its backend (dcm.Route.TCPTimeouts)
	}
	o := r.HTTP
	switch t {
	case dcm.MapForwarded:
		return string(o.Forwarded)
	case dcm.MapTimeoutServer:
		return millis(o.TimeoutMillis)
	case dcm.MapTimeoutTunnel:
		return millis(o.TunnelMillis)
	case dcm.MapHSTS:
		return o.HSTS
	case dcm.MapCookieName, dcm.MapCookieSameSite:
		return cookieSetting(t, r)
	case dcm.MapRewrite:
		return RewriteValue(r)
	}
	return ""
}

func millis(ms int64) string {
	if ms <= 0 {
		return ""
	}
	return strconv.FormatInt(ms, 10)
}

// SameSettings reports whether two routes put the same values into the
// setting maps, the insecure maps, the headers map and the Gateway maps: when they do not,
// the change is a map replace (or, where maps are not changed at runtime,
// a reload).
func SameSettings(a, b dcm.Route) bool {
	if InsecureAction(a) != InsecureAction(b) || HeaderValue(a) != HeaderValue(b) || !a.Gateway.Equal(b.Gateway) {
		return false
	}
	for _, t := range dcm.SettingMapTables {
		if SettingValue(t, a) != SettingValue(t, b) {
			return false
		}
	}
	return true
}

// ValidateSetting checks a value of setting map t against its allow-list:
// what reaches a map file and an `add map` command.
func ValidateSetting(t dcm.MapTable, field, v string) error {
	bad := &dcm.InvalidError{Reason: dcm.RejectInvalidValue, Field: field, Value: v}
	switch t {
	case dcm.MapForwarded:
		if v == "" || dcm.ValidateForwarded(field, dcm.ForwardedPolicy(v)) != nil {
			return bad
		}
	case dcm.MapTimeoutServer, dcm.MapTimeoutTunnel:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 || n > dcm.MaxTimeoutMillis || strconv.FormatInt(n, 10) != v {
			return bad
		}
	case dcm.MapHSTS:
		if n, err := dcm.ParseHSTS(field, v); err != nil || n != v || strings.ContainsAny(v, " \t\r\n") {
			return bad
		}
	case dcm.MapCookieName:
		if dcm.ValidateCookieName(field, v) != nil {
			return bad
		}
	case dcm.MapCookieSameSite:
		if v == "" || dcm.ValidateSameSite(field, v) != nil {
			return bad
		}
	case dcm.MapRewrite:
		return validateRewriteValue(field, v)
	default:
		return bad
	}
	return nil
}
