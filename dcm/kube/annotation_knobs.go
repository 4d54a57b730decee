package kube

import "github.com/dcm-router/dcm/dcm"

// knobRows are the rows of OpenShift's server knobs: options of each of a
// Route's servers.
func knobRows() []Annotation {
	return []Annotation{
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
