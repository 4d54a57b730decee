package kube

import "github.com/dcm-router/dcm/dcm"

// keepServing is what an Ingress or Route is once its new version next is
// converted, given what the Source knew of it before (old). An update that
// is refused keeps the routes of the last version accepted, as a Secret
// that turns invalid keeps its last certificate: a typo in an annotation
// must not take a live host offline. The kept version goes on claiming its
// host/paths, so it wins or loses conflicts as the version it serves. An
// object refused from the start has nothing to keep and serves nothing.
func keepServing(old, next *ingressState) *ingressState {
	if next.invalid == nil || old.routes == nil || old.uid != next.uid {
		return next
	}
	kept := *old
	kept.invalid = nil
	kept.created = next.created
	// The message names the version served, not the one refused: a status
	// write gives a Route a new resourceVersion, and a message that moved
	// with it would be rewritten for ever.
	kept.refused = &dcm.Rejection{Object: next.ref, Reason: next.invalid.Reason,
		Message: "update refused, resourceVersion " + old.version + " still served: " + next.invalid.Message}
	return &kept
}

// ReasonUpdateRefused is the reason of the Admitted condition of a Route
// whose update was refused while its last accepted version serves.
const ReasonUpdateRefused = "UpdateRefused"

// keptHost says whether the object of key serves a kept version after a
// refused update, and the host it serves: the Route status writer names
// it. Call under syncMu.
func (s *Source) keptHost(key string) (host string, kept bool) {
	st := s.ingresses[key]
	if st == nil || st.refused == nil || len(st.served) == 0 || len(st.routes) == 0 {
		return "", false
	}
	return st.routes[0].Host, true
}
