package haproxy

import (
	"bytes"
	"fmt"

	"github.com/dcm-router/dcm/dcm"
)

// Rate limits (dcm.Route.RateLimit). Every backend, spares included, has
// OpenShift's stick table and rules; what OpenShift writes as constants
// per route is read at request time from the rate-limit map, keyed by
// be_name: a backend without an entry tracks nothing, one with an entry
// tracks its clients, and each limit it sets refuses a client at or over
// it (sc2_<counter> - limit ≥ 0, HAProxy 2.6's sub converter taking the
// limit from a variable). A limit left empty in the entry gives sub no
// number, so its rule refuses nothing.
//
// The rules are written for memory: each anonymous ACL ({ … }) costs about
// 1 KB per backend in HAProxy 2.6.12, so the variables are set without a
// condition (set-var sets nothing when txn.rl is absent) and each limit
// has one ACL. Measured (RSS, 1000 backends): the empty table 1.5 KB, the
// rules 7.8 KB per backend (with a guard ACL per limit and per variable it
// was 13.2 KB). One map lookup per request for a backend without limits.

// rateLimitCounters are, in the map value's order, the counter each limit
// compares.
var rateLimitCounters = []struct{ variable, counter string }{
	{"txn.rl_cur", "sc2_conn_cur"},
	{"txn.rl_tcp", "sc2_conn_rate"},
	{"txn.rl_http", "sc2_http_req_rate"},
}

// renderRateLimitRules is the table and rules every backend gets, after
// its allowlist.
func renderRateLimitRules(w *bytes.Buffer) {
	w.WriteString("    stick-table type ip size 100k expire 30s store conn_cur,conn_rate(3s),http_req_rate(10s)\n")
	fmt.Fprintf(w, "    tcp-request content set-var(txn.rl) be_name,map_str(%s)\n", MapFile(dcm.MapRateLimit))
	w.WriteString("    tcp-request content track-sc2 src if { var(txn.rl) -m found }\n")
	for i, c := range rateLimitCounters {
		fmt.Fprintf(w, "    tcp-request content set-var(%s) var(txn.rl),field(%d,:)\n", c.variable, i+1)
	}
	for _, c := range rateLimitCounters {
		fmt.Fprintf(w, "    tcp-request content reject if { %s,sub(%s) -m int ge 0 }\n", c.counter, c.variable)
	}
}

// validateRateLimitEntry checks an entry of the rate-limit map as the map file
// and add map write it: an HAProxy backend's name and its limits.
func validateRateLimitEntry(key, value string) error {
	if err := validateBackendName(key); err != nil {
		return err
	}
	return dcm.ValidateRateLimitValue("rate limits", value)
}
