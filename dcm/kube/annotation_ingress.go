package kube

import (
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/dcm-router/dcm/dcm"
)

// ingressOptions is what an Ingress's annotations ask of all its routes.
type ingressOptions struct {
	balance     string
	check       bool
	passthrough bool
	sticky      bool
	// redirect is what plain HTTP for a TLS host gets; redirectSet tells an
	// explicit "true" from the default, which passthrough routes differ on.
	redirect, redirectSet bool
	redirectCode          int // 0: HAProxy's default, 302
	split                 []dcm.ServiceRef
	upstream              *dcm.UpstreamTLS
	// termination is route.openshift.io/termination ("" when absent).
	termination string
	allowlist   []string
	rateLimit   *dcm.RateLimit
	http        dcm.HTTPOptions
	headers     *dcm.HeaderActions
	// maxConn and checkInter are the server knobs (annotation_knobs.go).
	maxConn    int
	checkInter int64
}

// ingressAnnotations reads an Ingress's annotations through the table, in
// the table's order, with the checks between them that refuse what they
// ask together.
func ingressAnnotations(ing *networkingv1.Ingress) (ingressOptions, error) {
	ann := ing.Annotations
	var o ingressOptions
	var err error
	if o.balance, _, err = annotationValue[string](ann, AnnotationBalance); err != nil {
		return o, err
	}
	if o.check, _, err = annotationValue[bool](ann, AnnotationHealthCheck); err != nil {
		return o, err
	}
	if o.passthrough, _, err = annotationValue[bool](ann, AnnotationSSLPassthrough); err != nil {
		return o, err
	}
	if o.termination, _, err = annotationValue[string](ann, AnnotationIngressTermination); err != nil {
		return o, err
	}
	o.passthrough = o.passthrough || o.termination == terminationPassthrough
	if o.passthrough && len(ing.Spec.TLS) > 0 {
		// HAProxy never holds the key of a passed-through host: a Secret
		// named here would be a certificate nobody serves.
		return o, &dcm.InvalidError{Reason: dcm.RejectUnsupported, Field: "spec.tls", Value: "with " + AnnotationSSLPassthrough}
	}
	tcpBalanceDefault(ann, AnnotationBalance, &o.balance, o.passthrough)
	if o.sticky, _, err = annotationValue[bool](ann, AnnotationSticky); err != nil {
		return o, err
	}
	if o.sticky && o.passthrough {
		// A cookie needs HTTP; HAProxy never reads a passed-through request.
		return o, &dcm.InvalidError{Reason: dcm.RejectUnsupported, Field: annotationField(AnnotationSticky), Value: "with " + AnnotationSSLPassthrough}
	}
	if o.redirect, o.redirectSet, err = annotationValue[bool](ann, AnnotationSSLRedirect); err != nil {
		return o, err
	}
	// route-controller-manager's Routes redirect plain HTTP, passthrough
	// ones too.
	o.redirectSet = o.redirectSet || o.termination != ""
	code, codeSet, err := annotationValue[int](ann, AnnotationSSLRedirectCode)
	if err != nil {
		return o, err
	}
	if codeSet {
		// Unset stays 0, as routes have always carried it.
		o.redirectCode = code
	}
	if o.split, _, err = annotationValue[[]dcm.ServiceRef](ann, AnnotationWeights); err != nil {
		return o, err
	}
	if o.upstream, err = ingressUpstream(ing, o.passthrough, len(o.split) > 0, o.termination == terminationReencrypt); err != nil {
		return o, err
	}
	if o.allowlist, _, err = annotationValue[[]string](ann, AnnotationAllowlist); err != nil {
		return o, err
	}
	if o.rateLimit, err = rateLimitOf(ann, ingressRateLimits); err != nil {
		return o, err
	}
	if o.http, err = httpOptions(ann, KindIngress, o.passthrough); err != nil {
		return o, err
	}
	if err = cookieNeedsSticky(ann, o.sticky); err != nil {
		return o, err
	}
	if o.headers, err = ingressHeaders(ann); err != nil {
		return o, err
	}
	if err = ingressKnobs(ann, &o); err != nil {
		return o, err
	}
	if o.passthrough && o.headers != nil {
		return o, &dcm.InvalidError{Reason: dcm.RejectUnsupported, Field: annotationField(AnnotationRequestHeaders), Value: "with " + AnnotationSSLPassthrough}
	}
	return o, refuseUnhonoured(ann, KindIngress)
}

// ingressUpstream reads the reencrypt annotations: nil when the Ingress
// is not reencrypt. The CA's version is the Source's to fill in, and so is
// the check that a default CA exists; the server name is left empty when
// it defaults to each route's service.
func ingressUpstream(ing *networkingv1.Ingress, passthrough, weighted, terminated bool) (*dcm.UpstreamTLS, error) {
	ann := ing.Annotations
	reencrypt, _, err := annotationValue[bool](ann, AnnotationReencrypt)
	if err != nil {
		return nil, err
	}
	reencrypt = reencrypt || terminated
	ca, hasCA, err := annotationValue[string](ann, AnnotationBackendCA)
	if err != nil {
		return nil, err
	}
	reencrypt = reencrypt || hasCA
	name, hasName, err := annotationValue[string](ann, AnnotationBackendServerName)
	if err != nil {
		return nil, err
	}
	if !reencrypt {
		if hasName {
			return nil, &dcm.InvalidError{Reason: dcm.RejectUnsupported, Field: annotationField(AnnotationBackendServerName), Value: "without " + AnnotationReencrypt}
		}
		return nil, nil
	}
	if passthrough {
		return nil, &dcm.InvalidError{Reason: dcm.RejectUnsupported, Field: annotationField(AnnotationReencrypt), Value: "with " + AnnotationSSLPassthrough}
	}
	if weighted && !hasName {
		// Each service's pods would carry their own service's name, and
		// only the primary's would be verified.
		return nil, &dcm.InvalidError{Reason: dcm.RejectUnsupported, Field: annotationField(AnnotationWeights),
			Value: "with " + AnnotationReencrypt + " but without " + AnnotationBackendServerName}
	}
	up := &dcm.UpstreamTLS{CA: CADefault, ServerName: name}
	if hasCA {
		up.CA = CASecretPrefix + ing.Namespace + "/" + ca
	}
	return up, nil
}

// httpOptions reads the HTTP options (dcm.HTTPOptions) of an object of
// kind through the table, by the names of its kind. A passthrough object
// has none: HAProxy reads none of its requests.
func httpOptions(ann map[string]string, kind string, passthrough bool) (dcm.HTTPOptions, error) {
	names := [5]string{AnnotationForwardedHeaders, AnnotationTimeout, AnnotationTimeoutTunnel, AnnotationHSTS, AnnotationRewriteTarget}
	if kind == KindRoute {
		names = [5]string{AnnotationRouteForwarded, AnnotationRouteTimeout, AnnotationRouteTimeoutTunnel, AnnotationRouteHSTS, AnnotationRouteRewriteTarget}
	}
	var o dcm.HTTPOptions
	fwd, _, err := annotationValue[string](ann, names[0])
	if err != nil {
		return o, err
	}
	o.Forwarded = dcm.ForwardedPolicy(fwd)
	if o.TimeoutMillis, _, err = annotationValue[int64](ann, names[1]); err != nil {
		return o, err
	}
	if o.TunnelMillis, _, err = annotationValue[int64](ann, names[2]); err != nil {
		return o, err
	}
	if o.HSTS, _, err = annotationValue[string](ann, names[3]); err != nil {
		return o, err
	}
	if err = cookieOptions(ann, kind, passthrough, &o); err != nil {
		return o, err
	}
	if o.RewriteTarget, _, err = annotationValue[string](ann, names[4]); err != nil {
		return o, err
	}
	if passthrough {
		// Its timeouts are written into its TCP backend (a reload).
		for _, n := range []string{names[0], names[3], names[4]} {
			if v, ok := ann[n]; ok {
				return o, &dcm.InvalidError{Reason: dcm.RejectUnsupported, Field: annotationField(n), Value: v + " on a passthrough route"}
			}
		}
	}
	return o, nil
}

// httpFor is the HTTP options of one of the Ingress's routes: HSTS only
// where HAProxy terminates the route's TLS (the spec.tls hosts), as the
// annotation's row documents.
func (o ingressOptions) httpFor(kind dcm.RouteKind) dcm.HTTPOptions {
	h := o.http
	if kind != dcm.KindEdge && kind != dcm.KindReencrypt {
		h.HSTS = ""
	}
	return h
}
