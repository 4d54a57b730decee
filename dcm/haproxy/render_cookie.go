package haproxy

import (
	"bytes"
	"fmt"

	"github.com/dcm-router/dcm/dcm"
)

// CookieName is the cookie HAProxy's persistence reads and sets in every
// sticky backend. HAProxy 2.6 fixes it in the cfg, so a spare can serve
// any route: clients never see it. The rules of cookieRules rename it to
// the route's own cookie (dcm/route_cookie.go), from setting maps.
const CookieName = "DCMSRV"

// cookieLine is the persistence of a sticky backend. indirect: the pod
// never sees the cookie; nocache: a shared cache must not hand one
// client's cookie to others; httponly: scripts never read it; dynamic: the
// value is a hash of the backend's key and the server's address, so
// every replica and every reload agree (cookie on add server is 3.0).
const cookieLine = "    cookie " + CookieName + " insert indirect nocache httponly dynamic\n"

// cookieRules translate between the route's cookie and CookieName, in the
// HTTP frontends for every route (renderRouteRules), keyed by txn.be: only
// a sticky route has an entry in the cookie maps, and its backend is
// sticky (its own, or a sticky spare), so a request of any other route
// meets two map lookups and nothing else. The frontend's http-request
// rules run before the backend's cookie persistence reads the request,
// and its http-after-response rules after the persistence inserted its
// cookie, as the backend's did. On the
// request, the value of the cookie named by the cookie_name map is found
// in the Cookie header (a regex with a back reference to the name, put
// before the header with '|', which no name holds: HAProxy takes no
// variable inside a regex) and added as CookieName, which the persistence
// reads and, indirect, removes before the pod sees it. On the response
// (after-response: HAProxy inserts its cookie after the http-response
// rules), HAProxy's Set-Cookie gets the route's name, and Secure with the
// SameSite attribute when the route has an entry in the cookie_samesite
// map. The pod still sees the route's cookie, as OpenShift's pods do not:
// it is a value the pod cannot forge into anything but a server choice.
//
// Measured with the real binary (TestStickyCookieNames): a capturing
// regex in an ACL needs a named group (HAProxy compiles ACL regexes
// without numbered captures), and the regsub argument is quoted twice,
// for the cfg's words and for the converter's arguments.
func cookieRules() string {
	name, same := MapFile(dcm.MapCookieName), MapFile(dcm.MapCookieSameSite)
	return cookieMapRules(name, same) +
		"    http-request set-var(txn.dcm_cs) var(txn.dcm_ck),concat(|,txn.dcm_hdr) if { var(txn.dcm_ck) -m found } { req.fhdr(cookie),set-var(txn.dcm_hdr) -m found }\n" +
		`    http-request set-var(txn.dcm_cv) "var(txn.dcm_cs),regsub('^([^|]+)\\|(.*;\\s*)?\\1=([^;]*).*','\\3')" if { var(txn.dcm_cs) -m reg '^(?<n>[^|]+)\|(?:.*;\s*)?\k<n>=' }` + "\n" +
		"    http-request add-header Cookie " + CookieName + "=%[var(txn.dcm_cv)] if { var(txn.dcm_cv) -m found }\n" +
		"    http-after-response replace-header Set-Cookie '^" + CookieName + "=(.*)' '%[var(txn.dcm_ck)]=\\1' if { var(txn.dcm_ck) -m found } !{ var(txn.dcm_ss) -m found }\n" +
		"    http-after-response replace-header Set-Cookie '^" + CookieName + "=(.*)' '%[var(txn.dcm_ck)]=\\1; Secure; SameSite=%[var(txn.dcm_ss)]' if { var(txn.dcm_ck) -m found } { var(txn.dcm_ss) -m found }\n"
}

// renderSticky renders a sticky backend's persistence: the cookie and its
// key (none in a free spare: the route that takes it sets one).
func renderSticky(w *bytes.Buffer, b dcm.Backend, cookieSecret string) {
	w.WriteString(cookieLine)
	if b.Route.Name != "" {
		fmt.Fprintf(w, "    dynamic-cookie-key %s\n", CookieKey(cookieSecret, b.Name))
	}
}

// renderCookieRules renders the rules that give a sticky route's cookie
// the route's name.
func renderCookieRules(w *bytes.Buffer) { w.WriteString(cookieRules()) }

func cookieMapRules(name, same string) string {
	return "    http-request set-var(txn.dcm_ck) var(txn.be),map_str(" + name + ")\n" +
		"    http-request set-var(txn.dcm_ss) var(txn.be),map_str(" + same + ")\n"
}
