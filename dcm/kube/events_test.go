package kube

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// recordedEvent is one Eventf call, its note formatted as client-go does.
type recordedEvent struct {
	regarding                 corev1.ObjectReference
	eventType, reason, action string
	note                      string
}

func (e recordedEvent) String() string {
	return fmt.Sprintf("%s %s %s/%s: %s %s %q", e.regarding.Kind, e.regarding.APIVersion, e.regarding.Namespace, e.regarding.Name,
		e.eventType, e.reason, e.note)
}

// eventCapture is an events.EventRecorder that keeps what it is given.
type eventCapture struct {
	mu     sync.Mutex
	events []recordedEvent
}

func (c *eventCapture) Eventf(regarding, _ runtime.Object, eventType, reason, action, note string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, recordedEvent{regarding: *regarding.(*corev1.ObjectReference),
		eventType: eventType, reason: reason, action: action, note: fmt.Sprintf(note, args...)})
}

// take returns what was recorded since the last take.
func (c *eventCapture) take() []recordedEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.events
	c.events = nil
	return out
}

func TestTruncateNote(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int // bytes
	}{
		{name: "short", in: "invalid-value: x", want: 16},
		{name: "at the limit", in: strings.Repeat("a", noteLimit), want: noteLimit},
		{name: "over", in: strings.Repeat("a", noteLimit+1), want: noteLimit},
		// "é" is two bytes, "…" three: the cut lands inside an "é" and
		// must move before it.
		{name: "multibyte at the cut", in: strings.Repeat("é", noteLimit), want: noteLimit - 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := truncateNote(tt.in)
			if len(got) != tt.want || !utf8.ValidString(got) {
				t.Errorf("truncateNote: %d bytes (valid UTF-8: %v), want %d", len(got), utf8.ValidString(got), tt.want)
			}
			if cut := len(tt.in) > noteLimit; cut != strings.HasSuffix(got, "…") {
				t.Errorf("cut %v, but the note ends %q", cut, got[max(0, len(got)-8):])
			}
		})
	}
}

// The Events of an Ingress and a Route through their life, from the
// Source's syncs: a Warning with the rejection's reason and message
// (field included) when one is rejected or its rejection changes, nothing
// on a sync that changes nothing (a resync, a status write), a Normal
// Accepted when it serves again, nothing for one that is gone.
func TestSourceEvents(t *testing.T) {
	for _, o := range keptObjects() {
		t.Run(o.kind, func(t *testing.T) {
			s, cl, routes := routeSource(t, nil)
			rec := &eventCapture{}
			s.opts.Events = &Events{recorder: rec}
			put := func(obj any) {
				t.Helper()
				if u, ok := obj.(*unstructured.Unstructured); ok {
					_ = routes.Update(u)
				} else {
					_ = cl.ing.Update(obj.(*networkingv1.Ingress))
				}
				mustSync(t, s, o.key)
			}
			del := func(obj any) {
				t.Helper()
				if u, ok := obj.(*unstructured.Unstructured); ok {
					_ = routes.Delete(u)
				} else {
					_ = cl.ing.Delete(obj.(*networkingv1.Ingress))
				}
				mustSync(t, s, o.key)
			}
			regarding := corev1.ObjectReference{Kind: o.kind, APIVersion: apiVersionOf(o.kind), Namespace: "demo", Name: "web", UID: "uid-web"}
			type want struct {
				eventType, reason string
				note              []string // substrings
			}
			steps := []struct {
				name string
				do   func()
				want []want
			}{
				{name: "valid from the start", do: func() { put(o.version("10", "leastconn")) }},
				{name: "resync", do: func() { mustSync(t, s, o.key) }},
				{name: "update refused", do: func() { put(o.version("11", "bogus")) },
					want: []want{{corev1.EventTypeWarning, "invalid-value", []string{"update refused, resourceVersion 10 still served", o.annotation, `"bogus"`}}}},
				{name: "status write", do: func() { put(o.version("12", "bogus")) }},
				{name: "resync while refused", do: func() { mustSync(t, s, o.key) }},
				// Another message: recorded again (client-go folds it
				// into the first Event's series). The '%' reaches the
				// note as written.
				{name: "refused again", do: func() { put(o.version("13", "100%")) },
					want: []want{{corev1.EventTypeWarning, "invalid-value", []string{`"100%"`}}}},
				{name: "fixed", do: func() { put(o.version("14", "random")) },
					want: []want{{corev1.EventTypeNormal, EventReasonAccepted, []string{"dcm serves this " + o.kind + " again"}}}},
				{name: "resync once fixed", do: func() { mustSync(t, s, o.key) }},
				{name: "refused before deletion", do: func() { put(o.version("15", "bogus")) },
					want: []want{{corev1.EventTypeWarning, "invalid-value", []string{"resourceVersion 14 still served"}}}},
				{name: "deleted", do: func() { del(o.version("15", "bogus")) }},
				{name: "invalid from the start", do: func() { put(o.version("20", "bogus")) },
					want: []want{{corev1.EventTypeWarning, "invalid-value", []string{o.annotation}}}},
			}
			for _, step := range steps {
				step.do()
				got := rec.take()
				if len(got) != len(step.want) {
					t.Errorf("%s: events %v, want %d", step.name, got, len(step.want))
					continue
				}
				for i, w := range step.want {
					g := got[i]
					ok := g.regarding == regarding && g.eventType == w.eventType && g.reason == w.reason && g.action == eventAction
					for _, sub := range w.note {
						ok = ok && strings.Contains(g.note, sub)
					}
					if !ok {
						t.Errorf("%s: event %v (regarding %+v, action %s), want %s %s %q regarding %+v",
							step.name, g, g.regarding, g.action, w.eventType, w.reason, w.note, regarding)
					}
				}
			}
		})
	}
}

// A host taken by another namespace: the younger object, the loser, gets
// the Warning HostAlreadyClaimed; the owner gets nothing. Once the owner
// is gone the loser serves, and is told so.
func TestSourceEventsHostClaimed(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	s, cl, _ := routeSource(t, nil)
	rec := &eventCapture{}
	s.opts.Events = &Events{recorder: rec}
	owner := testIngress("web", "x.example.com", t0, httpPath("/a", prefix, svcBackend("web", "http")))
	owner.UID = "uid-owner"
	loser := testIngress("other", "x.example.com", t0.Add(time.Hour), httpPath("/b", prefix, svcBackend("web", "http")))
	loser.Namespace, loser.UID = "else", "uid-loser"
	_ = cl.ing.Add(owner)
	mustSync(t, s, "ingress/demo/web")
	_ = cl.ing.Add(loser)
	mustSync(t, s, "ingress/else/other")
	got := rec.take()
	if len(got) != 1 || got[0].regarding.Name != "other" || got[0].regarding.UID != "uid-loser" ||
		got[0].eventType != corev1.EventTypeWarning || got[0].reason != "HostAlreadyClaimed" ||
		!strings.Contains(got[0].note, "belongs to namespace demo") {
		t.Fatalf("events %v, want one Warning HostAlreadyClaimed on else/other", got)
	}
	_ = cl.ing.Delete(owner)
	mustSync(t, s, "ingress/demo/web")
	mustSync(t, s, "ingress/else/other")
	if got := rec.take(); len(got) != 1 || got[0].regarding.Name != "other" || got[0].reason != EventReasonAccepted {
		t.Errorf("owner gone: events %v, want Accepted on else/other", got)
	}
}
