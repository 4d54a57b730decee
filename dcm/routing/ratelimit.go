package routing

import "github.com/dcm-router/dcm/dcm"

// rateLimitEntry is a routed backend's entry in the rate-limit map: keyed
// by the HAProxy backend's name (be_name in its rules), its limits as the
// value; false for a route without limits.
func rateLimitEntry(b *dcm.Backend) (dcm.MapEntry, bool) {
	v := b.Route.RateLimitValue()
	if v == "" {
		return dcm.MapEntry{}, false
	}
	return dcm.MapEntry{Key: b.ProxyName(), Backend: b.Name, Slot: b.Slot, Action: v}, true
}
