package kube

import (
	"context"
	"fmt"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
)

// EventController is the reportingController of dcm's Kubernetes Events;
// client-go makes the reportingInstance of it and the host (pod) name.
const EventController = "dcm-router.io/dcm"

// EventReasonAccepted is the reason of the Normal Event on an Ingress or
// Route dcm serves again after rejecting it. A rejection's Warning has
// the rejection's own reason, as the portal and dcm_rejected_objects_total.
const EventReasonAccepted = "Accepted"

// eventAction is what dcm does to the objects its Events are about: it
// admits them, or refuses to.
const eventAction = "Admit"

// noteLimit is the API server's limit on an Event's note, in bytes: a
// longer note is refused and the Event lost.
const noteLimit = 1024

// Events writes Kubernetes Events (events.k8s.io/v1) on the Ingresses and
// Routes dcm rejects, and on those it serves again after a rejection,
// through client-go's events broadcaster: it keys an Event by object,
// type, reason and action, and writes a repeat as a series on the first
// Event (a count) instead of a new one, so a rejection that flaps writes
// one Event per reason. The Source tells it only of rejections that
// changed, never of a resync that changes nothing.
type Events struct {
	broadcaster events.EventBroadcaster // nil when a test brings the recorder
	recorder    events.EventRecorder
}

// NewEvents writes Events through client, from Source.Run on: give it a
// client of its own, whose rate limit bounds the writes whatever the
// rejections do.
func NewEvents(client kubernetes.Interface) *Events {
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	return &Events{broadcaster: b, recorder: b.NewRecorder(scheme.Scheme, EventController)}
}

// start sends what is recorded to the API server until ctx ends. An Event
// recorded before start would be dropped: the broadcaster keeps nothing
// for a sink that does not watch yet.
func (e *Events) start(ctx context.Context) error {
	if e.broadcaster == nil {
		return nil
	}
	if err := e.broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		return fmt.Errorf("kube: start writing events: %w", err)
	}
	context.AfterFunc(ctx, e.broadcaster.Shutdown)
	return nil
}

// eventOf is the Event dcm writes on an object of its own (st) after
// report r: a Warning with the rejection's reason and message, or a
// Normal Accepted once it is no longer rejected.
func eventOf(r report, st *ingressState) (regarding *corev1.ObjectReference, eventType, reason, note string) {
	regarding = &corev1.ObjectReference{Kind: r.ref.Kind, APIVersion: apiVersionOf(r.ref.Kind),
		Namespace: r.ref.Namespace, Name: r.ref.Name, UID: types.UID(st.uid)}
	// No resourceVersion: client-go keys Events by the reference, and a
	// version in it would make every update of a flapping object a new
	// Event rather than a repeat.
	if r.rej == nil {
		return regarding, corev1.EventTypeNormal, EventReasonAccepted, "dcm serves this " + r.ref.Kind + " again"
	}
	return regarding, corev1.EventTypeWarning, r.rej.Reason, truncateNote(r.rej.Message)
}

func apiVersionOf(kind string) string {
	switch kind {
	case KindRoute:
		return RouteGVR.GroupVersion().String()
	case KindGateway, KindHTTPRoute, KindGRPCRoute, KindTLSRoute, KindGatewayClass:
		return gatewayGroup + "/v1"
	}
	return "networking.k8s.io/v1"
}

// truncateNote cuts a note to what the API server takes, on a rune
// boundary, marking the cut.
func truncateNote(s string) string {
	if len(s) <= noteLimit {
		return s
	}
	const more = "…"
	cut := noteLimit - len(more)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + more
}

// recordEvent writes the Event of a report about an Ingress or Route that
// is dcm's: one gone, out of the class or the shard has no one to tell,
// and other kinds (Secrets, EndpointSlices) are left to the portal.
// Called under syncMu, like the Reporter; it does not block.
func (s *Source) recordEvent(r report) {
	if s.opts.Events == nil {
		return
	}
	var key string
	switch r.ref.Kind {
	case KindIngress:
		key = r.ref.Namespace + "/" + r.ref.Name
	case KindRoute:
		key = routeKey(r.ref.Namespace, r.ref.Name)
	case KindGateway, KindHTTPRoute, KindGRPCRoute, KindTLSRoute:
		// A gone object (no UID left) has no one to tell.
		if uid, ok := s.gatewayUID(r.ref); ok {
			s.recordGatewayEvent(r, uid)
		}
		return
	default:
		return
	}
	st := s.ingresses[key]
	if st == nil {
		return
	}
	regarding, eventType, reason, note := eventOf(r, st)
	// The note goes as an argument: a message may hold a '%'.
	s.opts.Events.recorder.Eventf(regarding, nil, eventType, reason, eventAction, "%s", note)
}
