package kube

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// shardSource is routeSource with a shard: Routes and Ingresses labelled
// shard=a, in namespaces labelled router=a (the cache of namespaces, as
// the API server's selector fills it, is the returned indexer).
func shardSource(t *testing.T) (*Source, *cluster, cache.Indexer, cache.Indexer) {
	t.Helper()
	s, cl, routes := routeSource(t, nil)
	s.opts.RouteSelector = labels.SelectorFromSet(labels.Set{"shard": "a"})
	s.opts.NamespaceSelector = labels.SelectorFromSet(labels.Set{"router": "a"})
	namespaces := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	s.namespaces = corelisters.NewNamespaceLister(namespaces)
	return s, cl, routes, namespaces
}

// Only the shard is served, Ingresses and Routes alike; a relabelled
// object or namespace joins or leaves it, and nothing outside it is
// reported.
func TestShard(t *testing.T) {
	s, cl, routes, namespaces := shardSource(t)
	demo := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "demo", Labels: map[string]string{"router": "a"}}}
	_ = namespaces.Add(demo)
	ing := testIngress("web", "web.example.com", time.Now(), httpPath("/", prefix, svcBackend("web", "http")))
	rt := osRoute("r", "r.example.com", nil)
	sync := func(shard string) {
		t.Helper()
		ing.Labels = map[string]string{"shard": shard}
		rt.SetLabels(map[string]string{"shard": shard})
		_ = cl.ing.Update(ing)
		_ = routes.Update(rt)
		mustSync(t, s, "ingress/demo/web")
		mustSync(t, s, "route/demo/r")
	}
	served := func(what string, want ...string) {
		t.Helper()
		d, _ := s.Desired()
		if got := backendNames(d); !slices.Equal(got, want) {
			t.Errorf("%s: backends %v, want %v", what, got, want)
		}
		if r := s.Rejections(); len(r) != 0 {
			t.Errorf("%s: rejections %+v", what, r)
		}
	}
	both := []string{"be_http:demo:route_r", "be_http:demo:web"}
	sync("b")
	served("labelled for another shard")
	sync("a")
	served("labelled for this shard", both...)

	// The namespace leaves the shard (relabelled: gone from its cache).
	_ = namespaces.Delete(demo)
	mustSync(t, s, "namespace/demo")
	served("namespace out of the shard")
	_ = namespaces.Add(demo)
	mustSync(t, s, "namespace/demo")
	served("namespace back", both...)
	sync("b")
	served("relabelled out")
}

// A Route outside the shard has no status entry of dcm's: one it wrote
// earlier is taken out, other routers' entries stay — whether the Route
// is still in the cache (its namespace left the shard) or left it (it was
// relabelled: the delete event's last state is what dcm updates).
func TestShardStatusRemoved(t *testing.T) {
	for _, relabelled := range []bool{false, true} {
		s, _, routes, namespaces := shardSource(t)
		_ = namespaces.Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}})
		rt := osRoute("r", "r.example.com", nil)
		rt.SetLabels(map[string]string{"shard": "a"})
		rt.Object["status"] = map[string]any{"ingress": []any{
			map[string]any{"routerName": "default", "host": "r.example.com"},
			map[string]any{"routerName": DefaultRouterName, "host": "r.example.com"},
		}}
		client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{RouteGVR: "RouteList"}, rt.DeepCopy())
		s.rw.opts.Client = client
		s.rw.status = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
		if relabelled {
			s.routeGone(rt.DeepCopy())
		} else {
			_ = routes.Add(rt)
		}
		if err := s.writeStatus(context.Background(), "demo/r"); err != nil {
			t.Fatal(err)
		}
		got, err := client.Resource(RouteGVR).Namespace("demo").Get(context.Background(), "r", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		entries, _, _ := unstructured.NestedSlice(got.Object, "status", "ingress")
		if len(entries) != 1 || entries[0].(map[string]any)["routerName"] != "default" {
			t.Errorf("relabelled %v: status.ingress %v, want the other router's entry alone", relabelled, entries)
		}
		if relabelled && s.rw.gone.take("demo/r") != nil {
			t.Error("the last state of the Route is kept after its status was written")
		}
	}
}
