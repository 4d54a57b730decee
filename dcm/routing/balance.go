package routing

import "github.com/dcm-router/dcm/dcm"

// PoolBalance is the balance algorithm the spares of a pool kind are
// rendered with (HAProxy cannot change a backend's algorithm at runtime):
// the default of the routes of that kind, source for TCP spares.
func PoolBalance(kind dcm.RouteKind) string {
	return dcm.DefaultBalance(kind)
}
