package kube

import "github.com/dcm-router/dcm/dcm"

// The Ingress equivalents of OpenShift's server knobs, which Ingress has
// none of.
const (
	AnnotationMaxConn       = "dcm.io/pod-concurrent-connections"
	AnnotationCheckInterval = "dcm.io/health-check-interval"
)

// knobRows are the rows of OpenShift's server knobs: options of each of a
// Route's servers, and their Ingress equivalents.
func knobRows() []Annotation {
	return []Annotation{
		{Name: AnnotationMaxConn, Kinds: ingressOnly, Type: ValueMaxConn, Example: "100",
			Doc: "As haproxy.router.openshift.io/pod-concurrent-connections on a Route: the most connections HAProxy opens to each pod at once; 0 is no limit. Changed at runtime (set maxconn server)."},
		{Name: AnnotationCheckInterval, Kinds: ingressOnly, Type: ValueTimeout, Example: "2s",
			Doc: "As router.openshift.io/haproxy.health.check.interval on a Route: the interval of HAProxy's health checks (with dcm.io/health-check on, the default); default 5000ms. A change adds new servers beside the old ones, no reload in dynamic mode."},
		{Name: AnnotationRouteMaxConn, Kinds: routeOnly, Type: ValueMaxConn, Example: "100",
			Doc: "The most connections HAProxy opens to each pod of the Route at once (maxconn on each server), the others waiting in HAProxy's queue (timeout queue 30s), as OpenShift does; 0 is no limit, at most 1000000. Changed at runtime (set maxconn server)."},
		{Name: AnnotationRouteCheckInterval, Kinds: routeOnly, Type: ValueTimeout, Example: "2s",
			Doc: "The interval of HAProxy's health checks of the Route's pods (check inter; a number with us, ms, s, m, h or d, a bare number is ms). Default: 5000ms, as OpenShift's. HAProxy 2.6 changes no server's interval at runtime, so a change adds new servers with it beside the old ones, which leave once idle, as a CA rotation does: no reload in dynamic mode (slots and reload modes reload, check-interval)."},
	}
}

// routeKnobs reads the server knobs of a Route through the table.
func routeKnobs(ann map[string]string, r *dcm.Route) error {
	var err error
	if r.MaxConn, _, err = annotationValue[int](ann, AnnotationRouteMaxConn); err != nil {
		return err
	}
	if r.CheckInterMillis, _, err = annotationValue[int64](ann, AnnotationRouteCheckInterval); err != nil {
		return err
	}
	return nil
}

// ingressKnobs reads the server knobs of an Ingress through the table.
func ingressKnobs(ann map[string]string, o *ingressOptions) error {
	var err error
	if o.maxConn, _, err = annotationValue[int](ann, AnnotationMaxConn); err != nil {
		return err
	}
	if o.checkInter, _, err = annotationValue[int64](ann, AnnotationCheckInterval); err != nil {
		return err
	}
	if o.checkInter != 0 && !o.check {
		// An interval of checks that are off would be ignored.
		return &dcm.InvalidError{Reason: dcm.RejectUnsupported, Field: annotationField(AnnotationCheckInterval), Value: "with " + AnnotationHealthCheck + " false"}
	}
	return nil
}
