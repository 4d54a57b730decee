package dcm

import (
	"strconv"
	"strings"
)

// A route's rate limits (OpenShift's rate-limit-connections): HAProxy
// tracks each client address of the route's backend in a stick table and
// closes the connection of a client over a limit without an answer, as
// OpenShift's router does (tcp-request content reject). Every backend,
// spares included, is rendered with the table and the rules; whether a
// backend tracks, and its limits, are its entry in the rate-limit map
// (MapRateLimit, keyed by the HAProxy backend's name), so limits come,
// change and go with a map replace, without a reload.

// RateLimit is what OpenShift's rate-limit-connections annotations ask: a
// limit of 0 is not set. All zero still tracks, as OpenShift does with
// rate-limit-connections alone.
type RateLimit struct {
	// ConcurrentTCP refuses a client with that many connections open
	// (sc2_conn_cur ge N: its N-th concurrent one).
	ConcurrentTCP int `json:"concurrentTCP,omitempty"`
	// RateTCP refuses a client that opened that many in 3 s.
	RateTCP int `json:"rateTCP,omitempty"`
	// RateHTTP refuses a client that sent that many requests in 10 s.
	RateHTTP int `json:"rateHTTP,omitempty"`
}

// MaxRateLimit bounds a limit.
const MaxRateLimit = 1_000_000_000

// MapRateLimit maps the HAProxy backend of a route with rate limits to
// its limits (RateLimitValue).
const MapRateLimit MapTable = "rate_limit"

// RateLimitValue is the route's entry in MapRateLimit:
// "<concurrent>:<rate-tcp>:<rate-http>", a limit not set left empty (HAProxy
// then has no number to compare with, and refuses nothing for it), so
// "::" tracks only; "" when the route has no limits.
func (r Route) RateLimitValue() string {
	l := r.RateLimit
	if l == nil {
		return ""
	}
	field := func(n int) string {
		if n == 0 {
			return ""
		}
		return strconv.Itoa(n)
	}
	return field(l.ConcurrentTCP) + ":" + field(l.RateTCP) + ":" + field(l.RateHTTP)
}

// ValidateRateLimitValue checks an entry of MapRateLimit: three limits,
// each empty or in 1..MaxRateLimit, written canonically.
func ValidateRateLimitValue(field, s string) error {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return invalid(RejectInvalidValue, field, s)
	}
	for _, p := range parts {
		if p == "" {
			continue
		}
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > MaxRateLimit || strconv.Itoa(n) != p {
			return invalid(RejectInvalidValue, field, s)
		}
	}
	return nil
}

// SameRateLimit reports whether two routes are limited alike.
func SameRateLimit(a, b Route) bool { return a.RateLimitValue() == b.RateLimitValue() }
