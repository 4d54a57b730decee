package kube

import "github.com/dcm-router/dcm/dcm"

// rateLimitNames are the annotations of one kind's rate limits: the
// switch, then concurrent-tcp, rate-tcp and rate-http.
type rateLimitNames struct{ on, concurrent, tcp, http string }

var (
	routeRateLimits   = rateLimitNames{AnnotationRouteRateLimit, AnnotationRouteRateConcurrent, AnnotationRouteRateTCP, AnnotationRouteRateHTTP}
	ingressRateLimits = rateLimitNames{AnnotationRateLimit, AnnotationRateConcurrent, AnnotationRateTCP, AnnotationRateHTTP}
)

// rateLimitOf reads the rate limits: nil when the switch is off. A limit
// without the switch is refused rather than ignored (OpenShift ignores
// it): it would not limit what its author meant to limit.
func rateLimitOf(ann map[string]string, n rateLimitNames) (*dcm.RateLimit, error) {
	on, _, err := annotationValue[bool](ann, n.on)
	if err != nil {
		return nil, err
	}
	var l dcm.RateLimit
	for _, f := range []struct {
		name string
		to   *int
	}{{n.concurrent, &l.ConcurrentTCP}, {n.tcp, &l.RateTCP}, {n.http, &l.RateHTTP}} {
		v, set, err := annotationValue[int](ann, f.name)
		if err != nil {
			return nil, err
		}
		if set && !on {
			return nil, &dcm.InvalidError{Reason: dcm.RejectUnsupported, Field: annotationField(f.name), Value: "without " + n.on + `: "true"`}
		}
		*f.to = v
	}
	if !on {
		return nil, nil
	}
	return &l, nil
}
