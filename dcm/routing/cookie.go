package routing

import "github.com/dcm-router/dcm/dcm"

// cookieSetting is a sticky route's entry in a cookie map
// (dcm/route_cookie.go): its cookie's name, and the SameSite attribute of
// a secure cookie; none for a route without a cookie.
func cookieSetting(t dcm.MapTable, r dcm.Route) string {
	if !r.Sticky {
		return ""
	}
	if t == dcm.MapCookieName {
		return r.CookieNameOf()
	}
	return r.CookieSameSiteOf()
}
