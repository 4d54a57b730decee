package kube

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
	gwinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"
	gwlisters "sigs.k8s.io/gateway-api/pkg/client/listers/apis/v1"

	"github.com/dcm-router/dcm/dcm"
)

// GatewayWatchOptions turn on the Gateway API source.
type GatewayWatchOptions struct {
	// Client reads and writes the Gateway API's objects; Core reads
	// Namespaces (their labels select routes for listeners).
	Client gwclient.Interface
	Core   kubernetes.Interface
	// Discovery tells whether the API server serves gateway.networking.k8s.io/v1.
	Discovery discovery.DiscoveryInterface
	// Status writes the status of GatewayClasses, Gateways and HTTPRoutes
	// (only the leader, if there is an election).
	Status bool
	// Recheck and MaxRecheck: the backoff of discovery while the API is
	// not served (defaults 10s and 5m).
	Recheck, MaxRecheck time.Duration
}

// gatewayKey is the one queue key of the Gateway API: every change
// recomputes all of it (translateGateways), which keeps precedence,
// addresses and attachedRoutes consistent across objects.
const gatewayKey = prefixGateway + "_/_"

// gatewayWatch is the state of the Gateway API source.
type gatewayWatch struct {
	opts *GatewayWatchOptions
	wg   sync.WaitGroup
	// listers is nil until the API is served; set under syncMu.
	listers *gwListers
	// Under syncMu: what the last sync served and found.
	served   map[string]*dcm.Route // backend name →
	addrs    map[types.UID]string
	refs     map[string]bool // Services and Secrets (prefix + ns/name) referred to
	rejected map[dcm.ObjectRef]bool
	uids     map[dcm.ObjectRef]types.UID
	certs    map[string]certCheck // ns/name → its last check
	view     *dcm.GatewayAPI      // what the reporter last heard (GatewayViewer)
	// boundMu guards bound, the binds HAProxy has beyond the pre-bound
	// ones, as the engine last said (GatewayBound).
	boundMu sync.Mutex
	bound   []dcm.GatewayBind
	// statusMu guards desired, the status the last sync computed, by
	// status key (gatewayStatusKey).
	statusMu sync.Mutex
	desired  map[string]any
	// status queues status keys to write (nil: none written).
	status workqueue.TypedRateLimitingInterface[string]
}

// certCheck is a Secret's verdict as a listener certificate, by version.
type certCheck struct {
	version string
	err     error
}

// gwListers read the Gateway API's caches: one set per watched
// namespace (gatewayclasses are cluster-wide).
type gwListers struct {
	classes    gwlisters.GatewayClassLister
	gateways   []gwlisters.GatewayLister
	routes     []gwlisters.HTTPRouteLister
	grpcRoutes []gwlisters.GRPCRouteLister      // empty when GRPCRoutes are not served
	tlsRoutes  []gwlisters.TLSRouteLister       // empty when TLSRoutes are not served
	grants     []gwlisters.ReferenceGrantLister // empty when ReferenceGrants are not served
	namespaces corelisters.NamespaceLister
}

// WatchGateways makes Run serve the Gateway API too, when
// Options.GatewayBinds has addresses and the API server serves
// gateway.networking.k8s.io/v1; when it does not, Run says so once and
// asks discovery again with backoff, as for OpenShift Routes. Call
// before Run.
func (s *Source) WatchGateways(o GatewayWatchOptions) {
	if len(s.opts.GatewayBinds.Addresses) == 0 {
		return
	}
	if o.Recheck <= 0 {
		o.Recheck = 10 * time.Second
	}
	if o.MaxRecheck < o.Recheck {
		o.MaxRecheck = max(o.Recheck, 5*time.Minute)
	}
	s.gw.opts = &o
	s.gw.served, s.gw.addrs, s.gw.refs = map[string]*dcm.Route{}, map[types.UID]string{}, map[string]bool{}
	s.gw.rejected, s.gw.uids, s.gw.certs = map[dcm.ObjectRef]bool{}, map[dcm.ObjectRef]types.UID{}, map[string]certCheck{}
	s.gw.desired = map[string]any{}
	if o.Status && o.Client != nil {
		s.gw.status = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	}
}

// gatewayResources asks discovery which Gateway API resources are served:
// ok needs GatewayClasses, Gateways and HTTPRoutes; have says which are
// (referencegrants and grpcroutes are read when they are).
func (s *Source) gatewayResources() (ok bool, have map[string]bool, err error) {
	list, err := s.gw.opts.Discovery.ServerResourcesForGroupVersion(gwv1.GroupVersion.String())
	switch {
	case apierrors.IsNotFound(err):
		return false, nil, nil
	case err != nil:
		return false, nil, err
	}
	have = map[string]bool{}
	for _, r := range list.APIResources {
		have[r.Name] = true
	}
	return have["gatewayclasses"] && have["gateways"] && have["httproutes"], have, nil
}

// startGateways runs at the start of Run, as startRoutes does.
func (s *Source) startGateways(ctx context.Context) []cache.InformerSynced {
	if s.gw.opts == nil {
		return nil
	}
	if s.gw.opts.Client == nil || s.gw.opts.Discovery == nil || s.gw.opts.Core == nil {
		s.log.Error("Gateway API not watched: WatchGateways needs clients and discovery")
		return nil
	}
	ok, have, err := s.gatewayResources()
	if ok {
		synced, listers := s.gatewayInformers(ctx, have)
		s.syncMu.Lock()
		s.gw.listers = listers
		s.syncMu.Unlock()
		s.log.Info("watching the Gateway API", "api", gwv1.GroupVersion.String(), "controllerName", s.opts.GatewayControllerName,
			"addresses", len(s.opts.GatewayBinds.Addresses), "referenceGrants", have["referencegrants"], "grpcRoutes", have["grpcroutes"], "tlsRoutes", have["tlsroutes"])
		return synced
	}
	s.log.Warn("Gateway API not served: checking again with backoff", "api", gwv1.GroupVersion.String(), "err", err)
	s.notice(NoticeGatewaysAbsent, "the Gateway API ("+gwv1.GroupVersion.String()+") is not served by the API server: dcm serves Gateways once it is")
	s.gw.wg.Go(func() { s.awaitGateways(ctx) })
	return nil
}

// Reasons of the Gateway API's notices.
const (
	NoticeGatewaysAbsent = "gateway-api-absent"
	NoticeGatewaysServed = "gateway-api-served"
)

// gatewayInformers starts the Gateway API's informers (and one of
// Namespaces); they stop with ctx.
func (s *Source) gatewayInformers(ctx context.Context, have map[string]bool) ([]cache.InformerSynced, *gwListers) {
	namespaces := s.opts.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	h := s.handlers(prefixGateway, func(any) []string { return []string{"_/_"} })
	ls := &gwListers{}
	var synced []cache.InformerSynced
	var starts []interface{ Start(<-chan struct{}) }
	var stops []interface{ Shutdown() }
	add := func(inf cache.SharedIndexInformer) {
		if _, err := inf.AddEventHandler(h); err != nil {
			s.log.Error("add gateway event handler", "err", err)
		}
		synced = append(synced, inf.HasSynced)
	}
	cf := gwinformers.NewSharedInformerFactory(s.gw.opts.Client, s.opts.Resync)
	ls.classes = cf.Gateway().V1().GatewayClasses().Lister()
	add(cf.Gateway().V1().GatewayClasses().Informer())
	s.recheckStatus(cf.Gateway().V1().GatewayClasses().Informer(), statusClass)
	starts, stops = append(starts, cf), append(stops, cf)
	for _, ns := range slices.Compact(slices.Sorted(slices.Values(namespaces))) {
		f := gwinformers.NewSharedInformerFactoryWithOptions(s.gw.opts.Client, s.opts.Resync, gwinformers.WithNamespace(ns))
		v1 := f.Gateway().V1()
		ls.gateways = append(ls.gateways, v1.Gateways().Lister())
		ls.routes = append(ls.routes, v1.HTTPRoutes().Lister())
		add(v1.Gateways().Informer())
		add(v1.HTTPRoutes().Informer())
		s.recheckStatus(v1.Gateways().Informer(), statusGateway)
		s.recheckStatus(v1.HTTPRoutes().Informer(), statusRoute)
		if have["grpcroutes"] {
			s.grpcRouteInformer(v1, ls, add)
		}
		if have["tlsroutes"] {
			s.watchTLSRoutes(v1, ls, add)
		}
		if have["referencegrants"] {
			ls.grants = append(ls.grants, v1.ReferenceGrants().Lister())
			add(v1.ReferenceGrants().Informer())
		}
		starts, stops = append(starts, f), append(stops, f)
	}
	nf := informers.NewSharedInformerFactory(s.gw.opts.Core, s.opts.Resync)
	ls.namespaces = nf.Core().V1().Namespaces().Lister()
	add(nf.Core().V1().Namespaces().Informer())
	starts, stops = append(starts, nf), append(stops, nf)
	for _, f := range starts {
		f.Start(ctx.Done())
	}
	s.gw.wg.Go(func() {
		<-ctx.Done()
		for _, f := range stops {
			f.Shutdown()
		}
	})
	return synced, ls
}

// awaitGateways asks discovery with backoff until the Gateway API is
// served, then watches it.
func (s *Source) awaitGateways(ctx context.Context) {
	wait := s.gw.opts.Recheck
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, s.gw.opts.MaxRecheck)
		ok, have, err := s.gatewayResources()
		if err != nil {
			s.log.Debug("asking for the Gateway API", "err", err)
		}
		if !ok {
			continue
		}
		synced, listers := s.gatewayInformers(ctx, have)
		if !cache.WaitForCacheSync(ctx.Done(), synced...) {
			return
		}
		s.syncMu.Lock()
		s.gw.listers = listers
		s.syncMu.Unlock()
		s.log.Info("Gateway API served now: watching it", "api", gwv1.GroupVersion.String())
		s.notice(NoticeGatewaysServed, "the Gateway API ("+gwv1.GroupVersion.String()+") is served now: dcm watches it")
		s.enqueue(prefixGateway, "_/_")
		return
	}
}

// gatewayObjects lists what translateGateways reads; syncMu held.
func (s *Source) gatewayObjects() (gwInput, error) {
	ls := s.gw.listers
	in := gwInput{controller: s.opts.GatewayControllerName, binds: s.opts.GatewayBinds, prevAddr: maps.Clone(s.gw.addrs),
		reserved: s.opts.GatewayReserved, bound: s.gatewayBound()}
	var err error
	if in.classes, err = ls.classes.List(labels.Everything()); err != nil {
		return in, err
	}
	for _, l := range ls.gateways {
		gws, err := l.List(labels.Everything())
		if err != nil {
			return in, err
		}
		in.gateways = append(in.gateways, gws...)
	}
	for _, l := range ls.routes {
		rs, err := l.List(labels.Everything())
		if err != nil {
			return in, err
		}
		in.routes = append(in.routes, rs...)
	}
	if err := ls.listGRPCRoutes(&in); err != nil {
		return in, err
	}
	if in.tlsRoutes, err = ls.listTLSRoutes(); err != nil {
		return in, err
	}
	for _, l := range ls.grants {
		gs, err := l.List(labels.Everything())
		if err != nil {
			return in, err
		}
		in.grants = append(in.grants, gs...)
	}
	in.namespace = func(ns string) (labels.Set, bool) {
		n, err := ls.namespaces.Get(ns)
		if err != nil {
			return nil, false
		}
		return n.Labels, true
	}
	return in, nil
}
