package views

// RouteChange is one change of a route's settings that the what-if form
// offers to preview (web/whatif-form.js makes it on the route's copy).
type RouteChange struct {
	Value, Label string
}

// routeChanges are the annotation changes whose cost differs most: a
// setting map's entry, an allowlist (its map's entry too), a spare of
// another kind, a new backend.
func routeChanges() []RouteChange {
	return []RouteChange{
		{"timeout-5m", "server timeout 5 minutes (annotation timeout)"},
		{"forwarded-never", "forwarded headers: never (set-forwarded-headers)"},
		{"allow-loopback", "allow only 127.0.0.0/8 (ip_allowlist)"},
		{"sticky", "stickiness on or off"},
		{"balance-leastconn", "balance leastconn"},
	}
}
