package dcm

import (
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Server knobs of OpenShift's router: options of every server of a
// route, rendered on its `server` lines and `add server` arguments alike.

// OpSetMaxConn changes a server's connection limit (set maxconn server):
// a route's MaxConn changed, its servers follow at runtime.
const OpSetMaxConn OpKind = "set-maxconn"

// MaxServerConn bounds a route's MaxConn: HAProxy's global maxconn is far
// below it, so a larger value would mean nothing.
const MaxServerConn = 1000000

// ValidateMaxConn checks a per-server connection limit; 0 is none.
func ValidateMaxConn(field string, n int) error {
	if n < 0 || n > MaxServerConn {
		return invalid(RejectInvalidValue, field, strconv.Itoa(n))
	}
	return nil
}

// ReasonCheckInterval is the reload of servers whose health-check
// interval must change where new servers cannot be added next to them
// (slots and reload modes, or a server a source did not rename): HAProxy
// 2.6 changes no server's check interval at runtime.
const ReasonCheckInterval ReloadReason = "check-interval"

// DefaultCheckInterMillis is the check interval of a route without one:
// OpenShift's router's 5000ms.
const DefaultCheckInterMillis = 5000

// CheckInterOf is the check interval a new server of route r is added
// with: r's own while r checks its servers, 0 (none, or the default)
// otherwise.
func CheckInterOf(r Route) int64 {
	if !r.Check || r.CheckInterMillis == DefaultCheckInterMillis {
		return 0
	}
	return r.CheckInterMillis
}

// interTag is what the names of a route's servers end with when their
// check interval is not the default: a server's interval is fixed when
// it is added, so a new one needs new servers, added next to the old
// ones, which are retired only after (as a CA rotation, UpstreamTag).
func interTag(r Route) string {
	ms := CheckInterOf(r)
	if ms <= 0 {
		return ""
	}
	return ".i" + strconv.FormatInt(ms, 10)
}

// withInterNames appends the route's interval tag to its endpoints' names.
func (b DesiredBackend) withInterNames() DesiredBackend {
	return b.renamed(func(n string) string { return n + interTag(b.Route) })
}

// withoutInterNames drops it.
func (b DesiredBackend) withoutInterNames() DesiredBackend {
	return b.renamed(func(n string) string { return strings.TrimSuffix(n, interTag(b.Route)) })
}

func (b DesiredBackend) renamed(f func(string) string) DesiredBackend {
	if interTag(b.Route) == "" || len(b.Endpoints) == 0 {
		return b
	}
	eps := slices.Clone(b.Endpoints)
	for i := range eps {
		eps[i].Name = f(eps[i].Name)
	}
	sort.Slice(eps, func(i, j int) bool { return eps[i].Name < eps[j].Name })
	b.Endpoints = eps
	return b
}

// WithCheck gives a backend's route other health-check settings, renaming
// its endpoints from the old interval's tag to the new one's: what a
// source does when the interval changes.
func (b DesiredBackend) WithCheck(check bool, interMillis int64) DesiredBackend {
	b = b.withoutInterNames()
	b.Route.Check, b.Route.CheckInterMillis = check, interMillis
	return b.withInterNames()
}

// ValidateCheckInter checks a route's health-check interval; 0 is the
// default.
func ValidateCheckInter(field string, ms int64) error {
	if ms < 0 || ms > MaxTimeoutMillis {
		return invalid(RejectInvalidValue, field, strconv.FormatInt(ms, 10))
	}
	return nil
}
