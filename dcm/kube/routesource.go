package kube

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/dcm-router/dcm/dcm"
)

// RouteWatchOptions turn on the OpenShift Routes source.
type RouteWatchOptions struct {
	// Client reads Routes (a dynamic client: dcm needs no OpenShift types).
	Client dynamic.Interface
	// Discovery tells whether the API server serves route.openshift.io/v1.
	Discovery discovery.DiscoveryInterface
	// Convert tunes the conversion (hosts of Routes without spec.host).
	Convert RouteOptions
	// Status writes each Route's admission into status.ingress, as
	// OpenShift's routers do (needs update on routes/status).
	Status bool
	// Recheck is the first wait before discovery is asked again when the
	// Routes API is not served; it doubles up to MaxRecheck (defaults 10s
	// and 5m).
	Recheck, MaxRecheck time.Duration
}

// routeWatch is the state of the Routes source.
type routeWatch struct {
	opts *RouteWatchOptions
	wg   sync.WaitGroup
	// gone holds the Routes that left the cache until the status writer
	// has taken dcm's entry out (routeGone).
	gone lastSeen[*unstructured.Unstructured]
	// status queues namespace/name of Routes whose status.ingress may
	// need writing (nil: no status written).
	status workqueue.TypedRateLimitingInterface[string]
}

// routeKey is the key of a Route among the objects that claim host/paths;
// an Ingress's is namespace/name, and a namespace has no ':'.
func routeKey(ns, name string) string { return "route:" + ns + "/" + name }

// WatchRoutes makes Run watch OpenShift Routes too. When the API server
// does not serve route.openshift.io/v1 (no CRD, not OpenShift), Run says so
// once and serves Ingresses; it asks discovery again with backoff and
// starts watching Routes when they appear. Call before Run.
func (s *Source) WatchRoutes(o RouteWatchOptions) {
	if o.Recheck <= 0 {
		o.Recheck = 10 * time.Second
	}
	if o.MaxRecheck < o.Recheck {
		o.MaxRecheck = max(o.Recheck, 5*time.Minute)
	}
	s.rw.opts = &o
	if o.Status && o.Client != nil {
		s.rw.status = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	}
}

// routesServed asks discovery whether the Routes API is served.
func (s *Source) routesServed() (bool, error) {
	list, err := s.rw.opts.Discovery.ServerResourcesForGroupVersion(RouteGVR.GroupVersion().String())
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	for _, r := range list.APIResources {
		if r.Name == RouteGVR.Resource {
			return true, nil
		}
	}
	return false, nil
}

// startRoutes runs at the start of Run. It returns the informers' HasSynced
// when the API is served (Run waits for them with the others); otherwise
// it logs once and keeps asking in the background.
func (s *Source) startRoutes(ctx context.Context) []cache.InformerSynced {
	if s.rw.opts == nil {
		return nil
	}
	if s.rw.opts.Client == nil || s.rw.opts.Discovery == nil {
		s.log.Error("OpenShift Routes not watched: WatchRoutes needs a client and discovery")
		return nil
	}
	served, err := s.routesServed()
	if served {
		synced, listers := s.routeInformers(ctx)
		s.syncMu.Lock()
		s.routeListers = listers
		s.syncMu.Unlock()
		s.log.Info("watching OpenShift Routes", "api", RouteGVR.GroupVersion().String())
		return synced
	}
	s.log.Warn("OpenShift Routes API not served: serving Ingresses only, and checking again with backoff",
		"api", RouteGVR.GroupVersion().String(), "err", err)
	s.notice(NoticeRoutesAbsent, "OpenShift Routes ("+RouteGVR.GroupVersion().String()+") are not served by the API server: dcm serves Ingresses and watches Routes once they are")
	s.rw.wg.Go(func() { s.awaitRoutes(ctx) })
	return nil
}

// routeInformers starts one dynamic informer per watched namespace; they
// stop with ctx.
func (s *Source) routeInformers(ctx context.Context) ([]cache.InformerSynced, map[string]cache.GenericLister) {
	namespaces := s.opts.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	var synced []cache.InformerSynced
	listers := map[string]cache.GenericLister{}
	for _, ns := range slices.Compact(slices.Sorted(slices.Values(namespaces))) {
		f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(s.rw.opts.Client, s.opts.Resync, ns, selectorTweak(s.opts.RouteSelector))
		inf := f.ForResource(RouteGVR)
		if _, err := inf.Informer().AddEventHandler(s.handlers(prefixRoute, objectKey)); err != nil {
			s.log.Error("add route event handler", "err", err)
		}
		if s.opts.RouteSelector != nil {
			// A Route relabelled out of the shard arrives as a delete.
			if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: s.routeGone}); err != nil {
				s.log.Error("add route event handler", "err", err)
			}
		}
		listers[ns] = inf.Lister()
		synced = append(synced, inf.Informer().HasSynced)
		f.Start(ctx.Done())
		s.rw.wg.Go(func() {
			<-ctx.Done()
			f.Shutdown()
		})
	}
	return synced, listers
}

// awaitRoutes asks discovery with backoff until the Routes API is served,
// then watches Routes and syncs every Route once its caches are in.
func (s *Source) awaitRoutes(ctx context.Context) {
	wait := s.rw.opts.Recheck
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, s.rw.opts.MaxRecheck)
		served, err := s.routesServed()
		if err != nil {
			s.log.Debug("asking for the Routes API", "err", err)
		}
		if !served {
			continue
		}
		synced, listers := s.routeInformers(ctx)
		if !cache.WaitForCacheSync(ctx.Done(), synced...) {
			return
		}
		s.syncMu.Lock()
		s.routeListers = listers
		s.syncMu.Unlock()
		s.log.Info("OpenShift Routes API served now: watching Routes", "api", RouteGVR.GroupVersion().String())
		s.notice(NoticeRoutesServed, "OpenShift Routes ("+RouteGVR.GroupVersion().String()+") are served now: dcm watches them")
		// The informers' initial objects are not queued (handlers):
		// queue them all once the listers are in place.
		s.enqueue(prefixRoute, s.routeKeys()...)
		return
	}
}

// routeKeys lists the namespace/name of every Route in the caches.
func (s *Source) routeKeys() []string {
	s.syncMu.Lock()
	listers := maps.Clone(s.routeListers)
	s.syncMu.Unlock()
	var keys []string
	for _, ns := range slices.Sorted(maps.Keys(listers)) {
		objs, err := listers[ns].List(labels.Everything())
		if err != nil {
			s.log.Error("list routes", "err", err)
			continue
		}
		for _, o := range objs {
			keys = append(keys, objectKey(o)...)
		}
	}
	slices.Sort(keys)
	return keys
}

func (s *Source) routeLister(ns string) (cache.GenericNamespaceLister, bool) {
	if l, ok := s.routeListers[""]; ok {
		return l.ByNamespace(ns), true
	}
	l, ok := s.routeListers[ns]
	if !ok {
		return nil, false
	}
	return l.ByNamespace(ns), true
}

func (s *Source) syncRoute(t *txn, ns, name string) error {
	key := routeKey(ns, name)
	ref := dcm.ObjectRef{Kind: KindRoute, Namespace: ns, Name: name}
	var st *ingressState
	if l, ok := s.routeLister(ns); ok {
		obj, err := l.Get(name)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("get route: %w", err)
		default:
			u, ok := obj.(*unstructured.Unstructured)
			if !ok {
				return fmt.Errorf("route %s/%s: unexpected %T", ns, name, obj)
			}
			if s.inShard(ns, u.GetLabels()) && !s.servedByIngress(u) {
				st = s.convertRoute(u)
			}
		}
	}
	if st == nil {
		s.forgetPEMs(dcm.RouteCertRef(ns, name))
	}
	s.settle(t, key, ref, st)
	return nil
}

func (s *Source) convertRoute(u *unstructured.Unstructured) *ingressState {
	ref := dcm.ObjectRef{Kind: KindRoute, Namespace: u.GetNamespace(), Name: u.GetName()}
	st := &ingressState{key: routeKey(ref.Namespace, ref.Name), ref: ref, created: u.GetCreationTimestamp().Time, version: u.GetResourceVersion(), uid: string(u.GetUID())}
	c, err := RouteFromOpenShift(u, s.rw.opts.Convert)
	if err != nil {
		st.invalid = &dcm.Rejection{Object: ref, Reason: RejectReason(err), Message: RejectMessage(err)}
		return st
	}
	r := c.Route
	if r.Upstream != nil && r.Upstream.CA == CADefault && len(s.opts.DefaultBackendCA) == 0 {
		st.invalid = &dcm.Rejection{Object: ref, Reason: dcm.RejectUnsupported,
			Message: "unsupported: spec.tls.destinationCACertificate empty and no --default-backend-ca-file to verify the pods with"}
		return st
	}
	// Kept before the route is committed: the driver asks for the PEMs as
	// soon as the engine sees their versions.
	if c.CertPEM != nil {
		s.pems.keepCert(r.TLS.Secret, r.TLS.Version, c.CertPEM)
	}
	if c.CAPEM != nil {
		s.pems.keepCA(r.Upstream.CA, r.Upstream.Version, c.CAPEM)
	}
	st.routes = []dcm.Route{r}
	st.ids = s.routeIDs(st.routes)
	return st
}

// forgetPEMs drops a deleted Route's inline certificate and CA.
func (s *Source) forgetPEMs(key string) {
	s.pems.forget(key, key)
}

// routeEndpoints are the endpoints of the i-th service of r. An OpenShift
// Route's port is the endpoints' port (targetPort), an Ingress's the
// Service's: both end up as the name of the Service port, which is what
// EndpointSlices label their ports with.
func routeEndpoints(r dcm.Route, i int, v *serviceView) []dcm.Endpoint {
	port := r.Services[i].Port
	if r.Source == dcm.SourceRoute && port == "" {
		return everyPortEndpoints(v)
	}
	if r.Source == dcm.SourceRoute {
		var ok bool
		if port, ok = routePortName(v.svc, v.slices, port); !ok {
			return nil
		}
	}
	return validServiceEndpoints(v.svc, v.slices, port)
}

// routePortName resolves a Route's targetPort to a Service port name: a
// name is one already; a number is matched against the EndpointSlices'
// port numbers (the container ports), then against the Service's numeric
// targetPorts. A Route without spec.port never gets here: it serves every
// port (everyPortEndpoints).
func routePortName(svc *corev1.Service, sls []*discoveryv1.EndpointSlice, port string) (string, bool) {
	if svc == nil || len(svc.Spec.Ports) == 0 {
		return "", false
	}
	if port == "" {
		return svc.Spec.Ports[0].Name, true
	}
	n, err := parsePortNumber(port)
	if err != nil {
		return port, true
	}
	for _, sl := range sls {
		for _, p := range sl.Ports {
			if p.Port != nil && int(*p.Port) == n {
				return deref(p.Name), true
			}
		}
	}
	for _, p := range svc.Spec.Ports {
		if p.TargetPort.Type == intstr.Int && int(p.TargetPort.IntVal) == n || p.TargetPort.IntVal == 0 && p.TargetPort.StrVal == "" && int(p.Port) == n {
			return p.Name, true
		}
	}
	return "", false
}

func parsePortNumber(s string) (int, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("not a number: %q", s)
	}
	var n int
	_, err := fmt.Sscan(s, &n)
	return n, err
}
