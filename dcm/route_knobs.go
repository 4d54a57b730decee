package dcm

import "strconv"

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
