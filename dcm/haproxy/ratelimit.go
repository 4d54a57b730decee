package haproxy

import (
	"bytes"
	"fmt"

	"github.com/dcm-router/dcm/dcm"
)

// Rate limits (dcm.Route.RateLimit), OpenShift's stick-table counters and
// limits: what OpenShift writes as constants per route is read at request
// time from the rate-limit map, keyed by the route's HAProxy backend: a
// route without an entry tracks nothing, one with an entry tracks its
// clients, and each limit it sets refuses a client at or over it
// (sc2_<counter> - limit ≥ 0, HAProxy 2.6's sub converter taking the
// limit from a variable). A limit left empty in the entry gives sub no
// number, so its rule refuses nothing.
//
// HTTP routes are limited in the HTTP frontends (renderRouteRules), keyed
// by txn.be, in one table for all of them (RateLimitTable) whose key is
// the client's address and the backend's name: each route counts each
// client on its own, as a table per backend did. The tracking starts in
// the frontend's http-request rules instead of the backend's tcp-request
// content rules; in HTTP mode each request is a stream either way, so
// conn_cur is the client's requests in progress and conn_rate its
// requests, the current one included, as before. http_req_rate would
// not count the same: tracked by an http-request rule it counts the
// current request at once, refused or not, where the backend's table
// counted a request once it had passed the rules. So the shared table
// counts HTTP requests in gpc0_rate(10s) instead, incremented after the
// checks (sc-inc-gpc0): a client of rate-http 3 is served three requests
// in 10 s, and requests refused do not keep it refused, as with
// OpenShift's http_req_rate. What does differ: the routes share the
// table's room (a full table drops its oldest idle entries, as each table
// did). Passthrough routes keep OpenShift's table in their own backend,
// keyed by the client's address (renderRateLimitRules).
//
// The rules are written for memory: each anonymous ACL ({ … }) costs about
// 1 KB per proxy in HAProxy 2.6.12, so the variables are set without a
// condition (set-var sets nothing when txn.rl is absent) and each limit
// has one ACL. Measured (RSS, 1000 backends): the empty table 1.5 KB, the
// rules 7.8 KB per backend (with a guard ACL per limit and per variable it
// was 13.2 KB). One map lookup per request for a route without limits.

// RateLimitTable is the backend that holds the HTTP routes' stick table:
// a table and nothing else. Its name is outside be_*, so dcm never adds
// servers to it nor observes it.
const RateLimitTable = "rate_limits"

// rateLimitKeyLen bounds a key of RateLimitTable: the client's address as
// text (at most 45 bytes, an IPv6 address with an IPv4 tail), '@', and the
// backend's name (at most 300 bytes, dcm.ValidateServerName). A longer
// key would be cut, and two routes could then share a count.
const rateLimitKeyLen = 45 + 1 + 300

// rateLimitTableSize is how many client-and-route entries the table holds
// at most: as many as ten tables of OpenShift's 100k. An entry is
// allocated when a client is first tracked and expires 30 s after its
// last use; each takes 536 bytes (HAProxy's show pools: the key's room is
// fixed by its bound), so a full table would hold about 540 MB, where
// each backend's table could grow to about 21 MB (216-byte entries).
const rateLimitTableSize = "1m"

// rateLimitStore is what an entry of a passthrough backend's table counts,
// OpenShift's counters, and rateLimitTableStore what an entry of
// RateLimitTable counts.
const (
	rateLimitStore      = "expire 30s store conn_cur,conn_rate(3s),http_req_rate(10s)"
	rateLimitTableStore = "expire 30s store conn_cur,conn_rate(3s),gpc0_rate(10s)"
)

// rateLimitVars are, in the map value's order, the variable each limit is
// read into.
var rateLimitVars = []string{"txn.rl_cur", "txn.rl_tcp", "txn.rl_http"}

// renderRateLimitRules is the table and rules every passthrough backend
// gets, after its allowlist.
func renderRateLimitRules(w *bytes.Buffer) {
	w.WriteString("    stick-table type ip size 100k " + rateLimitStore + "\n")
	fmt.Fprintf(w, "    tcp-request content set-var(txn.rl) be_name,map_str(%s)\n", MapFile(dcm.MapRateLimit))
	w.WriteString("    tcp-request content track-sc2 src if { var(txn.rl) -m found }\n")
	renderRateLimitChecks(w, "tcp-request content", "sc2_http_req_rate")
}

// renderFrontendRateLimitRules are the HTTP routes' rules, in the HTTP
// frontends (renderRouteRules), after the allowlist: a request that
// passed the checks is counted in gpc0.
func renderFrontendRateLimitRules(w *bytes.Buffer) {
	fmt.Fprintf(w, "    http-request set-var(txn.rl) var(txn.be),map_str(%s)\n", MapFile(dcm.MapRateLimit))
	fmt.Fprintf(w, "    http-request track-sc2 src,concat(@,txn.be) table %s if { var(txn.rl) -m found }\n", RateLimitTable)
	renderRateLimitChecks(w, "http-request", "sc2_gpc0_rate")
	w.WriteString("    http-request sc-inc-gpc0(2)\n") // nothing when sc2 tracks nothing
}

// renderRateLimitChecks reads the limits from txn.rl and refuses a client
// at or over one, with rules of the given kind; httpRate is the counter
// of its HTTP requests.
func renderRateLimitChecks(w *bytes.Buffer, kind, httpRate string) {
	for i, v := range rateLimitVars {
		fmt.Fprintf(w, "    %s set-var(%s) var(txn.rl),field(%d,:)\n", kind, v, i+1)
	}
	for i, counter := range []string{"sc2_conn_cur", "sc2_conn_rate", httpRate} {
		fmt.Fprintf(w, "    %s reject if { %s,sub(%s) -m int ge 0 }\n", kind, counter, rateLimitVars[i])
	}
}

// renderRateLimitTable is the HTTP routes' table, in haproxy.cfg.
func renderRateLimitTable(w *bytes.Buffer) {
	fmt.Fprintf(w, "\nbackend %s\n", RateLimitTable)
	fmt.Fprintf(w, "    stick-table type string len %d size %s %s\n", rateLimitKeyLen, rateLimitTableSize, rateLimitTableStore)
}

// validateRateLimitEntry checks an entry of the rate-limit map as the map file
// and add map write it: an HAProxy backend's name and its limits.
func validateRateLimitEntry(key, value string) error {
	if err := validateBackendName(key); err != nil {
		return err
	}
	return dcm.ValidateRateLimitValue("rate limits", value)
}
