package kube

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// lastApplied is the annotation kubectl apply writes: the whole object
// again, as JSON. dcm reads annotations by name only, never this one.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// StripUnread is the informers' transform (cache.TransformFunc), exported
// so that the end-to-end tests can measure it on a real API server's
// objects: it
// drops from the Ingresses, Services, EndpointSlices and Secrets the
// Source caches what dcm never reads and an API server fills in: managed
// fields (every object written through an API server has them: a fifth
// of a route's Service, Ingress and EndpointSlice of 10 endpoints as
// client-go decodes them, 1.2 KB of 6.4, TestInformerTransformSaves) and
// kubectl's last-applied copy of the object; of an EndpointSlice's
// endpoints also their topology, zone, node and hints. Everything dcm reads is kept (TestStripUnreadKeepsRoutes
// and the Source's tests, which run with it). The object is copied before
// a change, not changed in place: a fake clientset may share what it
// hands out with what it holds.
func StripUnread(obj any) (any, error) {
	switch o := obj.(type) {
	case *networkingv1.Ingress:
		if m, ok := strippedMeta(o.ObjectMeta); ok {
			c := *o
			c.ObjectMeta = m
			return &c, nil
		}
	case *corev1.Service:
		if m, ok := strippedMeta(o.ObjectMeta); ok {
			c := *o
			c.ObjectMeta = m
			return &c, nil
		}
	case *corev1.Secret:
		if m, ok := strippedMeta(o.ObjectMeta); ok {
			c := *o
			c.ObjectMeta = m
			return &c, nil
		}
	case *discoveryv1.EndpointSlice:
		m, metaChanged := strippedMeta(o.ObjectMeta)
		eps, epsChanged := strippedEndpoints(o.Endpoints)
		if metaChanged || epsChanged {
			c := *o
			c.ObjectMeta, c.Endpoints = m, eps
			return &c, nil
		}
	}
	return obj, nil
}

// strippedMeta is m without managed fields and last-applied annotation;
// false when m had neither.
func strippedMeta(m metav1.ObjectMeta) (metav1.ObjectMeta, bool) {
	_, applied := m.Annotations[lastApplied]
	if m.ManagedFields == nil && !applied {
		return m, false
	}
	m.ManagedFields = nil
	if applied {
		m.Annotations = maps.Clone(m.Annotations)
		delete(m.Annotations, lastApplied)
	}
	return m, true
}

// strippedEndpoints is eps without the fields dcm does not read; false
// when none had any.
func strippedEndpoints(eps []discoveryv1.Endpoint) ([]discoveryv1.Endpoint, bool) {
	unread := func(e discoveryv1.Endpoint) bool {
		return e.DeprecatedTopology != nil || e.NodeName != nil || e.Zone != nil || e.Hints != nil
	}
	if !slices.ContainsFunc(eps, unread) {
		return eps, false
	}
	out := slices.Clone(eps)
	for i := range out {
		out[i].DeprecatedTopology, out[i].NodeName, out[i].Zone, out[i].Hints = nil, nil, nil, nil
	}
	return out, true
}

// transformed installs StripUnread on informers that have not started.
func transformed(informers ...cache.SharedIndexInformer) error {
	for _, inf := range informers {
		if err := inf.SetTransform(StripUnread); err != nil {
			return err
		}
	}
	return nil
}
