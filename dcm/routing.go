package dcm

// The routing maps are named here, with the entries they hold; how routes
// become entries, in which order, is dcm/routing's (the model keeps types).

// MapTable names one routing map.
type MapTable string

const (
	MapHostExact  MapTable = "host_exact"
	MapHostPrefix MapTable = "host_prefix"
	MapAnyExact   MapTable = "any_exact"
	MapAnyPrefix  MapTable = "any_prefix"
	// MapWildExact and MapWildPrefix are host_exact and host_prefix for
	// wildcard routes: keyed by the domain with its leading dot and the
	// path (".example.com/api"), looked up with the request's host less
	// its first label, only when no exact host matched.
	MapWildExact  MapTable = "wild_exact"
	MapWildPrefix MapTable = "wild_prefix"
	// MapSNI maps a passthrough route's host to its backend.
	MapSNI MapTable = "sni"
	// MapSNIWild maps a wildcard passthrough route's domain (".example.com")
	// to its backend, asked when the SNI map knows no exact host.
	MapSNIWild MapTable = "sni_wild"
	// MapInsecure maps the HAProxy backend of a route that terminates TLS
	// to what a plain HTTP request routed to it gets (routing.InsecureAction),
	// when its policy is not Allow. fe_http routes a request by the HTTP
	// maps first and asks this map about the backend found, so the most
	// specific route decides: /api with Redirect and / with Allow on one
	// host each keep their own policy.
	MapInsecure MapTable = "insecure"
	// MapInsecureHost maps the host of a passthrough route with the
	// Redirect policy to its routing.InsecureAction: HAProxy serves no path of
	// such a host, so fe_http redirects the whole host before routing.
	MapInsecureHost MapTable = "insecure_host"
)

// HTTPMapTables lists the maps of HTTP requests in the order HAProxy tries them.
var HTTPMapTables = []MapTable{MapHostExact, MapHostPrefix, MapWildExact, MapWildPrefix, MapAnyExact, MapAnyPrefix}

// MapTables lists every routing map: first those keyed by a backend that
// say how it serves (the rate limits, the setting maps, the allowlists, the
// header actions, the insecure policies), then those keyed by host and
// path that send requests to a backend (the HTTP maps, the SNI maps), and
// insecure_host. Maps change entry by entry (OpMapReplace): additions are
// sent in this order and deletions in the reverse, so a new route's
// limits, settings, list and policy are there before a key sends it
// traffic, and a deleted route's keys go before them.
var MapTables = append(append([]MapTable{MapRateLimit}, SettingMapTables...),
	MapAllowlist, MapHeaders, MapGatewayRule, MapInsecure, MapHostExact, MapHostPrefix, MapWildExact, MapWildPrefix, MapAnyExact, MapAnyPrefix, MapSNI, MapSNIWild,
	MapInsecureHost, MapGateway)

// Setting maps hold a route's HTTPOptions, keyed by its HAProxy backend
// (Backend.ProxyName), as the insecure map is: a value changes at runtime.
const (
	MapForwarded     MapTable = "forwarded"
	MapTimeoutServer MapTable = "timeout_server"
	MapTimeoutTunnel MapTable = "timeout_tunnel"
	MapHSTS          MapTable = "hsts"
)

// SettingMapTables lists the setting maps.
var SettingMapTables = []MapTable{MapForwarded, MapTimeoutServer, MapTimeoutTunnel, MapHSTS, MapCookieName, MapCookieSameSite, MapRewrite}

// Setting reports whether a map is a setting map.
func (t MapTable) Setting() bool {
	return t == MapForwarded || t == MapTimeoutServer || t == MapTimeoutTunnel || t == MapHSTS || t.cookie() || t == MapRewrite
}

// HTTPSOnly reports whether a map is read only when HAProxy has an HTTPS
// frontend: the SNI map by it, the insecure maps by fe_http only to send
// plain HTTP over to it.
func (t MapTable) HTTPSOnly() bool {
	return t == MapSNI || t == MapSNIWild || t == MapInsecure || t == MapInsecureHost || t == MapHSTS
}

// Insecure reports whether a map holds insecure-policy actions rather than
// backends.
func (t MapTable) Insecure() bool { return t == MapInsecure || t == MapInsecureHost }

// Prefix reports whether the map matches keys by prefix (map_beg). HAProxy
// 2.6 indexes such a map in a prefix tree (pat_idx_tree_pfx) and map_beg
// returns the longest key that begins the input (ebmb_lookup_longest),
// whatever the order the entries came in: checked against 2.6.12, a key
// added at runtime after a longer one that shares its start does not hide
// it. So no map depends on its order, and an entry changes on its own.
func (t MapTable) Prefix() bool { return t == MapHostPrefix || t == MapWildPrefix || t == MapAnyPrefix }

// MapEntry is one line of a routing map: requests whose key matches go to
// the backend. Backend is the route's backend as dcm names it; Slot, when
// set, is the spare backend that carries it in HAProxy.
type MapEntry struct {
	Key     string `json:"key"`
	Backend string `json:"backend"`
	Slot    string `json:"slot,omitempty"`
	// Action is the value of an insecure map's entry (routing.InsecureAction),
	// of a setting map's (routing.SettingValue), of the rate-limit map's
	// (Route.RateLimitValue) or of the allowlist map's (a list, a chunk of
	// one, or the ids of its chunks).
	Action string `json:"action,omitempty"`
	// New is set on an entry of a map-replace's Set whose key the map
	// does not hold yet: HAProxy gets `add map` for it, `set map` for an
	// entry that repoints a key it holds (add map would hold the key
	// twice, set map of a key it lacks fails). It is never set on an
	// entry of a map itself.
	New bool `json:"new,omitempty"`
}

// Value is what the map says to HAProxy: the backend's HAProxy name, or
// an insecure or setting map's value.
func (e MapEntry) Value() string {
	if e.Action != "" {
		return e.Action
	}
	if e.Slot != "" {
		return e.Slot
	}
	return e.Backend
}

// Routed reports whether a backend has entries in the maps: it serves a
// route that is not being retired.
func (b Backend) Routed() bool { return b.Route.Name != "" && !b.Retiring }

// ValidateMapKey checks a routing map key: a host followed by a path, both
// already restricted to characters that need no quoting in a map file or an
// `add map` command.
func ValidateMapKey(field, s string) error {
	if s == "" || len(s) > 253+2048 {
		return invalid(RejectInvalidPath, field, s)
	}
	for i := 0; i < len(s); i++ {
		if !pathByte(s[i]) {
			return invalid(RejectInvalidPath, field, s)
		}
	}
	return nil
}
