package cluster

import (
	"runtime"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/dcm-router/dcm/dcm/kube"
)

// TestInformerTransformSaves: dcm serves an app whose objects the real
// API server and controllers wrote (managed fields on each, node and zone
// on the slice's endpoints), which proves routes through the informers'
// transform; then it measures what the transform takes off each object as
// client-go decodes it, in heap bytes: the objects are copied many times,
// as they are and as the transform leaves them. kubectl apply's
// last-applied annotation (a JSON copy of the object) comes on top where
// it is used; nothing here writes one.
func TestInformerTransformSaves(t *testing.T) {
	const replicas = 10
	ns, _, _ := served(t, "strip", replicas)
	ctx := t.Context()
	svc, err := env.admin.CoreV1().Services(ns).Get(ctx, "strip", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ing, err := env.admin.NetworkingV1().Ingresses(ns).Get(ctx, "strip", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	slices, err := env.admin.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=strip"})
	if err != nil || len(slices.Items) == 0 {
		t.Fatalf("slices of strip: %v, %v", slices, err)
	}
	objs := []k8sruntime.Object{svc, ing}
	for i := range slices.Items {
		objs = append(objs, &slices.Items[i])
	}
	for _, o := range objs {
		if len(o.(metav1.Object).GetManagedFields()) == 0 {
			t.Errorf("%T %s has no managed fields: nothing to measure", o, o.(metav1.Object).GetName())
		}
	}
	const copies = 2000
	as := heapPerCopy(copies, func() any {
		out := make([]k8sruntime.Object, len(objs))
		for i, o := range objs {
			out[i] = o.DeepCopyObject()
		}
		return out
	})
	stripped := heapPerCopy(copies, func() any {
		out := make([]any, len(objs))
		for i, o := range objs {
			if out[i], err = kube.StripUnread(o.DeepCopyObject()); err != nil {
				t.Fatal(err)
			}
		}
		return out
	})
	t.Logf("a Service, an Ingress and %d EndpointSlice(s) of %d endpoints as decoded: %d bytes; as cached after the transform: %d bytes (%.0f%%)",
		len(slices.Items), replicas, as, stripped, 100*float64(stripped)/float64(as))
	if stripped >= as {
		t.Errorf("the transform saves nothing: %d bytes before, %d after", as, stripped)
	}
}

// heapPerCopy is the live heap that one result of build holds, measured
// over n results kept at once.
func heapPerCopy(n int, build func() any) int64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapAlloc
	kept := make([]any, n)
	for i := range kept {
		kept[i] = build()
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	runtime.KeepAlive(kept)
	return (int64(ms.HeapAlloc) - int64(before)) / int64(n)
}
