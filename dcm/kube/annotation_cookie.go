package kube

import "github.com/dcm-router/dcm/dcm"

// Annotations of a sticky route's cookie (dcm/route_cookie.go): setting
// maps' entries, so a change is a map replace, no reload.
const (
	AnnotationCookieName          = "dcm.io/cookie-name"
	AnnotationCookieSameSite      = "dcm.io/cookie-same-site"
	AnnotationRouteCookieName     = "router.openshift.io/cookie_name"
	AnnotationRouteCookieSameSite = "router.openshift.io/cookie-same-site"
)

// cookieRows are the rows of the cookie's name and SameSite attribute, on
// Ingresses and Routes alike.
func cookieRows() []Annotation {
	return []Annotation{
		{Name: AnnotationCookieName, Kinds: ingressOnly, Type: ValueCookieName, Example: "web_session",
			Doc: "The name of the dcm.io/sticky cookie ([a-zA-Z0-9_-], at most 128). Default: a hash of the route's namespace and name, so two sticky paths on one host keep their own cookies. Changed at runtime; refused without dcm.io/sticky and on passthrough."},
		{Name: AnnotationCookieSameSite, Kinds: ingressOnly, Type: ValueEnum, Values: dcm.SameSiteValues, Default: dcm.SameSiteNone,
			Doc: "The SameSite attribute (Lax, Strict, None) of the sticky cookie on its spec.tls hosts when dcm.io/ssl-redirect is true, where the cookie is Secure; plain HTTP cookies have none. Changed at runtime."},
		{Name: AnnotationRouteCookieName, Kinds: routeOnly, Type: ValueCookieName, Example: "web_session",
			Doc: "The name of the sticky cookie ([a-zA-Z0-9_-], at most 128), as in OpenShift. Default: a hash of the Route's namespace and name. Changed at runtime; unused with disable_cookies, refused on passthrough."},
		{Name: AnnotationRouteCookieSameSite, Kinds: routeOnly, Type: ValueEnum, Values: dcm.SameSiteValues, Default: dcm.SameSiteNone,
			Doc: "The SameSite attribute (Lax, Strict, None) of the sticky cookie of an edge or reencrypt Route whose insecureEdgeTerminationPolicy is not Allow: that cookie is HttpOnly, Secure and SameSite, as OpenShift sets it; other cookies are HttpOnly only. Changed at runtime."},
	}
}

// cookieOptions reads the cookie's annotations of kind into o; a
// passthrough route has no cookie, so a name for one is refused.
func cookieOptions(ann map[string]string, kind string, passthrough bool, o *dcm.HTTPOptions) error {
	name, same := AnnotationCookieName, AnnotationCookieSameSite
	if kind == KindRoute {
		name, same = AnnotationRouteCookieName, AnnotationRouteCookieSameSite
	}
	var err error
	if o.CookieName, _, err = annotationValue[string](ann, name); err != nil {
		return err
	}
	if o.CookieSameSite, _, err = annotationValue[string](ann, same); err != nil {
		return err
	}
	if o.CookieSameSite == dcm.SameSiteNone {
		o.CookieSameSite = "" // the default, spelled as every other route's
	}
	if v, ok := ann[name]; ok && passthrough {
		return &dcm.InvalidError{Reason: dcm.RejectUnsupported, Field: annotationField(name), Value: v + " on a passthrough route"}
	}
	return nil
}

// cookieNeedsSticky refuses an Ingress that names a cookie it does not
// set: without dcm.io/sticky the name would be silently unused.
func cookieNeedsSticky(ann map[string]string, sticky bool) error {
	if v, ok := ann[AnnotationCookieName]; ok && !sticky {
		return &dcm.InvalidError{Reason: dcm.RejectUnsupported, Field: annotationField(AnnotationCookieName), Value: v + " without " + AnnotationSticky}
	}
	return nil
}
