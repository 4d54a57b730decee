package kube

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/util/workqueue"

	"github.com/dcm-router/dcm/dcm"
)

// Options select what the Source watches.
type Options struct {
	// IngressClass is the class dcm serves; "" serves every Ingress.
	IngressClass string
	// Namespaces limits the watch; empty watches all namespaces.
	Namespaces []string
	// Resync is the informers' resync period (0: none).
	Resync time.Duration
	// DefaultBackendCA is the destination CA (PEM, checked with ParseCA)
	// of reencrypt routes that name none (--default-backend-ca-file);
	// nil rejects such routes.
	DefaultBackendCA []byte
	// PEMs receives the certificates and CAs the routes name, for the
	// HAProxy driver; nil: a store of the Source's own (Source.PEMs).
	PEMs *PEMStore
	// AllowCrossNamespaceHosts lets objects of any namespace serve paths
	// of one host (--allow-cross-namespace-hosts); by default a host
	// belongs to the namespace of its oldest object.
	AllowCrossNamespaceHosts bool
	// AllowWildcardRoutes serves Ingress hosts "*.<domain>"
	// (--allow-wildcard-routes); without it such an Ingress is refused.
	AllowWildcardRoutes bool
	// RouteSelector and NamespaceSelector make a shard (--route-selector,
	// --namespace-selector): only Ingresses and Routes whose labels match
	// RouteSelector, in namespaces whose labels match NamespaceSelector,
	// are served. nil selects everything.
	RouteSelector, NamespaceSelector labels.Selector
	// DefaultCertificate is the kubernetes.io/tls Secret (ns/name) served
	// to hosts without a certificate of their own (--default-ssl-certificate);
	// "": dcm's self-signed one.
	DefaultCertificate string
	// Events writes Kubernetes Events on the Ingresses and Routes dcm
	// rejects (NewEvents); nil writes none.
	Events *Events
	// RouterName is the routerName of dcm's entry in a Route's
	// status.ingress (--router-name; "": DefaultRouterName), and
	// RouterCanonicalHostname its routerCanonicalHostname ("": none).
	RouterName, RouterCanonicalHostname string
	// GatewayControllerName is the controllerName of the GatewayClasses
	// dcm serves (--gateway-controller-name), and GatewayBinds what
	// HAProxy binds for their Gateways ahead of time; without addresses
	// no Gateway is served (WatchGateways).
	GatewayControllerName string
	GatewayBinds          dcm.GatewayBinds
	// GatewayReserved are the binds ("host:port", "" or 0.0.0.0 for any
	// address) of dcm's other frontends: a listener on one of them is
	// refused (PortUnavailable), HAProxy cannot bind it twice.
	GatewayReserved []string
	// ContentionWindow is how long a status another writer keeps
	// changing is left alone (contention; 0: a minute).
	ContentionWindow time.Duration
}

// Reporter hears about objects dcm refuses to serve. Rejected is called once
// when an object becomes rejected or its reason or message changes, Accepted
// once when it is no longer rejected (valid again, deleted, or no longer used
// by any route) — never on a resync that changes nothing. An object whose
// update is refused while its last accepted version serves is Rejected
// too, with a message that says so. Calls come in the
// order of the changes, from Run and its worker while they hold the sync
// lock: a Reporter must not block for long; it may call Desired and
// Rejections.
type Reporter interface {
	Rejected(obj dcm.ObjectRef, reason, message string)
	Accepted(obj dcm.ObjectRef)
}

// GatewayViewer is what a Reporter may also be: it hears the Gateway
// API dcm serves and the status it computed, whole, each time they change.
type GatewayViewer interface {
	GatewayView(dcm.GatewayAPI)
}

// Noticer is what a Reporter may also be: it hears what the Source says
// about what it watches as a whole, once per change (the OpenShift Routes
// API not served, then served).
type Noticer interface {
	Notice(reason, message string)
}

// Reasons of notices.
const (
	NoticeRoutesAbsent = "routes-api-absent"
	NoticeRoutesServed = "routes-api-served"
)

func (s *Source) notice(reason, message string) {
	if n, ok := s.reporter.(Noticer); ok {
		n.Notice(reason, message)
	}
}

type nopReporter struct{}

func (nopReporter) Rejected(dcm.ObjectRef, string, string) {}
func (nopReporter) Accepted(dcm.ObjectRef)                 {}

// Source turns Ingresses, Services and EndpointSlices into dcm.Desired. It
// follows kubernetes/sample-controller: informers feed a rate-limited queue
// of keys, a worker recomputes what a key affects from the listers. A sync
// is level-triggered and idempotent, so it can always be rerun.
//
// One worker, not a pool: a sync reads and updates indexes shared by every
// key (claims, routes, byService, bySecret), so syncs run one at a time
// under syncMu whatever the number of workers, and a second worker would
// only wait on it.
//
// Lock order: syncMu, then mu; seenMu and the PEMStore's lock are leaves.
//   - syncMu is held for a whole sync, and by whoever sets or reads
//     routeListers outside one; a sync takes mu in commit to publish, and
//     the PEMStore's lock to keep or forget PEM.
//   - mu is held only to read or write the snapshot (backends, sorted,
//     since, rejections); nothing is taken under it but the status
//     queue's own lock (commit queues Routes whose admission may change).
//   - seenMu is taken alone (enqueue, takeSeen, putBackSeen), never with
//     another lock held: informer handlers call enqueue, and a handler
//     blocked on syncMu would stall the informer.
//   - The Reporter is called under syncMu and not under mu, so it may call
//     Desired and Rejections (mu) but nothing that takes syncMu.
type Source struct {
	opts      Options
	reporter  Reporter
	log       *slog.Logger
	factories []informers.SharedInformerFactory
	listers   map[string]listerSet // by namespace, "" for all namespaces
	hasSynced []cache.InformerSynced
	initErr   error
	queue     workqueue.TypedRateLimitingInterface[string]
	changed   chan struct{}
	now       func() time.Time

	ran    atomic.Bool
	synced atomic.Bool
	syncs  atomic.Int64 // syncs that ran, for tests and benchmarks

	seenMu sync.Mutex
	seen   map[string]time.Time // queue key → first informer event not yet synced

	// syncMu serializes syncs: every sync reads the listers and updates the
	// indexes under it, so a result computed from an older cache can never
	// overwrite one computed from a newer cache.
	syncMu       sync.Mutex
	ingresses    map[string]*ingressState
	claims       map[identity]*nameSet  // → keys of valid Ingresses
	routes       map[string]servedRoute // backend name →
	byService    map[string]*nameSet    // ns/svc → backend names
	bySecret     map[string]*nameSet    // ns/secret → backend names of edge routes
	sliceRejects map[string]map[dcm.ObjectRef]dcm.Rejection
	// routeListers read OpenShift Routes, by namespace as listers; empty
	// while the Routes API is not served (or not watched).
	routeListers map[string]cache.GenericLister
	// namespaces lists the namespaces of the shard (nil without
	// Options.NamespaceSelector); set before Run, never written after.
	namespaces corelisters.NamespaceLister

	rw routeWatch
	gw gatewayWatch
	dc defaultCertWatch
	// is writes Ingress status (nil: none written).
	is *ingressStatus
	// election is set by ElectLeader; leading says whether this replica
	// writes status (always, without an election).
	election     *leaderelection.LeaderElector
	leading      atomic.Bool
	contention   *contention
	statusWrites atomic.Int64 // status updates that succeeded, for tests

	// pems receives the PEM of certificates and CAs for the driver.
	pems *PEMStore

	mu       sync.Mutex // guards the snapshot below
	backends map[string]*dcm.DesiredBackend
	// sorted holds backends sorted by name, patched (a backend replaced,
	// inserted or removed) as they change: at 10,000 routes, sorting or
	// copying the structs on every change would cost milliseconds. Desired
	// hands sorted itself out (handedOut), so the next patch copies the
	// slice first; the backends are never modified, only replaced.
	sorted     []*dcm.DesiredBackend
	handedOut  bool
	since      time.Time
	rejections map[dcm.ObjectRef]dcm.Rejection
}

// NewSource watches Ingresses, Services and EndpointSlices through client.
// Nothing runs until Run. reporter and logger may be nil.
func NewSource(client kubernetes.Interface, opts Options, reporter Reporter, logger *slog.Logger) *Source {
	s := newSource(opts, reporter, logger)
	namespaces := opts.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	for _, ns := range slices.Compact(slices.Sorted(slices.Values(namespaces))) {
		var f informers.SharedInformerFactory
		if ns == "" {
			f = informers.NewSharedInformerFactory(client, opts.Resync)
		} else {
			f = informers.NewSharedInformerFactoryWithOptions(client, opts.Resync, informers.WithNamespace(ns))
		}
		// Ingresses from a factory of their own: the shard's selector
		// must not narrow Services and slices.
		inf := informers.NewSharedInformerFactoryWithOptions(client, opts.Resync, informers.WithNamespace(ns),
			informers.WithTweakListOptions(selectorTweak(opts.RouteSelector)))
		ing := inf.Networking().V1().Ingresses()
		svc := f.Core().V1().Services()
		eps := f.Discovery().V1().EndpointSlices()
		if err := eps.Informer().AddIndexers(cache.Indexers{indexByService: sliceServiceIndex}); err != nil {
			s.initErr = fmt.Errorf("kube: index EndpointSlices by service: %w", err)
		}
		// Secrets of type kubernetes.io/tls only, from a factory of their
		// own: the field selector must not apply to the other informers,
		// and dcm has no business caching other Secrets.
		sf := informers.NewSharedInformerFactoryWithOptions(client, opts.Resync, informers.WithNamespace(ns),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = secretSelector }))
		sec := sf.Core().V1().Secrets()
		if err := transformed(ing.Informer(), svc.Informer(), eps.Informer(), sec.Informer()); err != nil && s.initErr == nil {
			s.initErr = fmt.Errorf("kube: informer transform: %w", err)
		}
		s.addHandlers(ing.Informer(), svc.Informer(), eps.Informer())
		if opts.RouteSelector != nil {
			// An Ingress relabelled out of the shard arrives as a delete:
			// its status is no longer dcm's (ingressGone).
			if _, err := ing.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: s.ingressGone}); err != nil && s.initErr == nil {
				s.initErr = fmt.Errorf("kube: add ingress event handler: %w", err)
			}
		}
		if _, err := sec.Informer().AddEventHandler(s.handlers(prefixSecret, objectKey)); err != nil && s.initErr == nil {
			s.initErr = fmt.Errorf("kube: add secret event handler: %w", err)
		}
		s.factories = append(s.factories, f, sf, inf)
		s.listers[ns] = listerSet{ingresses: ing.Lister(), services: svc.Lister(), slices: eps.Informer().GetIndexer(), secrets: sec.Lister()}
		s.hasSynced = append(s.hasSynced, ing.Informer().HasSynced, svc.Informer().HasSynced, eps.Informer().HasSynced, sec.Informer().HasSynced)
	}
	s.watchNamespaces(client)
	s.watchDefaultCert(client)
	return s
}

// newSource builds a Source without informers; tests and benchmarks fill
// listers themselves.
func newSource(opts Options, reporter Reporter, logger *slog.Logger) *Source {
	if reporter == nil {
		reporter = nopReporter{}
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if opts.PEMs == nil {
		opts.PEMs = NewPEMStore()
	}
	return &Source{
		opts:         opts,
		reporter:     reporter,
		log:          logger,
		listers:      map[string]listerSet{},
		queue:        workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		pems:         opts.PEMs,
		changed:      make(chan struct{}, 1),
		now:          time.Now,
		seen:         map[string]time.Time{},
		ingresses:    map[string]*ingressState{},
		claims:       map[identity]*nameSet{},
		routes:       map[string]servedRoute{},
		byService:    map[string]*nameSet{},
		bySecret:     map[string]*nameSet{},
		sliceRejects: map[string]map[dcm.ObjectRef]dcm.Rejection{},
		routeListers: map[string]cache.GenericLister{},
		backends:     map[string]*dcm.DesiredBackend{},
		rejections:   map[dcm.ObjectRef]dcm.Rejection{},
		contention:   newContention(opts.ContentionWindow),
	}
}

// StatusWrites counts the status updates (Routes and Ingresses) this
// Source made.
func (s *Source) StatusWrites() int64 { return s.statusWrites.Load() }

// PEMs is where the Source keeps the PEM the HAProxy driver asks for.
func (s *Source) PEMs() *PEMStore { return s.pems }

// Changed signals that Desired has changed. The channel holds one signal, so
// a burst of changes reads as one and a lone change is seen at once.
func (s *Source) Changed() <-chan struct{} { return s.changed }

// Synced reports whether the caches are synced and the initial state built.
func (s *Source) Synced() bool { return s.synced.Load() }

// Desired returns the desired state, backends sorted by name, and when an
// informer first saw the oldest change that this call is the first to
// return (zero if none). The backends are shared and never modified: callers
// must treat them as read-only.
func (s *Source) Desired() (dcm.Desired, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	since := s.since
	s.since = time.Time{}
	s.handedOut = true
	return dcm.Desired{Backends: s.sorted, DefaultCert: s.dc.served}, since
}

// Current is the desired state as Desired returns it, for a reader that
// is not the engine (the fleet view's pending check): it leaves when the
// oldest change was seen for the engine's next Desired.
func (s *Source) Current() dcm.Desired {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handedOut = true
	return dcm.Desired{Backends: s.sorted, DefaultCert: s.dc.served}
}

// setBackend puts b (nil: none) under name in backends and sorted; mu
// held.
func (s *Source) setBackend(name string, b *dcm.DesiredBackend) {
	if s.handedOut {
		s.sorted = slices.Clone(s.sorted)
		s.handedOut = false
	}
	i, found := slices.BinarySearchFunc(s.sorted, name, func(e *dcm.DesiredBackend, n string) int { return strings.Compare(e.Name, n) })
	switch {
	case b == nil && found:
		delete(s.backends, name)
		s.sorted = slices.Delete(s.sorted, i, i+1)
	case b == nil:
	case found:
		s.backends[name] = b
		s.sorted[i] = b
	default:
		s.backends[name] = b
		s.sorted = slices.Insert(s.sorted, i, b)
	}
}

// Rejections lists the objects currently refused, sorted.
func (s *Source) Rejections() []dcm.Rejection {
	s.mu.Lock()
	out := make([]dcm.Rejection, 0, len(s.rejections))
	for _, r := range s.rejections {
		out = append(out, r)
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b dcm.Rejection) int {
		return cmp.Or(
			strings.Compare(a.Object.Kind, b.Object.Kind),
			strings.Compare(a.Object.Namespace, b.Object.Namespace),
			strings.Compare(a.Object.Name, b.Object.Name))
	})
	return out
}

// Run starts the informers, waits for their caches, builds the initial
// state, signals Changed and then processes events with one worker (see
// Source) until ctx is done. It returns an error if the caches cannot sync
// (ctx cancelled first) and nil on a normal shutdown. Run may be called once.
func (s *Source) Run(ctx context.Context) error {
	if !s.ran.CompareAndSwap(false, true) {
		return errors.New("kube: Source.Run called twice")
	}
	if s.initErr != nil {
		return s.initErr
	}
	defer s.queue.ShutDown()
	ctx, cancel := context.WithCancel(ctx)
	if s.opts.Events != nil {
		// Before the first sync, whose rejections would be lost otherwise.
		if err := s.opts.Events.start(ctx); err != nil {
			cancel()
			return err
		}
	}
	defer func() {
		// Informers stop with ctx; Shutdown waits for them.
		cancel()
		for _, f := range s.factories {
			f.Shutdown()
		}
		s.rw.wg.Wait()
		s.gw.wg.Wait()
	}()
	for _, f := range s.factories {
		f.Start(ctx.Done())
	}
	hasSynced := append(slices.Clip(s.hasSynced), s.startRoutes(ctx)...)
	hasSynced = append(hasSynced, s.startGateways(ctx)...)
	s.log.Info("waiting for informer caches", "namespaces", s.opts.Namespaces, "ingressClass", s.opts.IngressClass)
	if !cache.WaitForCacheSync(ctx.Done(), hasSynced...) {
		return fmt.Errorf("kube: waiting for informer caches: %w", context.Cause(ctx))
	}
	start := s.now()
	if err := s.initial(); err != nil {
		return err
	}
	s.synced.Store(true)
	s.notify()
	s.mu.Lock()
	backends, rejected := len(s.backends), len(s.rejections)
	s.mu.Unlock()
	s.log.Info("initial state built", "backends", backends, "rejected", rejected, "took", s.now().Sub(start))

	var wg sync.WaitGroup
	wg.Go(func() { wait.UntilWithContext(ctx, s.runWorker, time.Second) })
	s.startStatus(ctx, &wg)
	<-ctx.Done()
	s.queue.ShutDown()
	if s.rw.status != nil {
		s.rw.status.ShutDown()
	}
	if s.is != nil {
		s.is.queue.ShutDown()
	}
	if s.gw.status != nil {
		s.gw.status.ShutDown()
	}
	wg.Wait()
	return nil
}

// initial syncs every Ingress in the caches; the Services and slices they
// reference are read along the way.
func (s *Source) initial() error {
	if s.opts.DefaultCertificate != "" {
		if err := s.sync(prefixSecret+s.opts.DefaultCertificate, time.Time{}); err != nil {
			return fmt.Errorf("kube: initial sync: %w", err)
		}
	}
	for _, ns := range slices.Sorted(maps.Keys(s.listers)) {
		ings, err := s.listers[ns].ingresses.List(labels.Everything())
		if err != nil {
			return fmt.Errorf("kube: list ingresses: %w", err)
		}
		for _, ing := range ings {
			if err := s.sync(prefixIngress+ing.Namespace+"/"+ing.Name, time.Time{}); err != nil {
				return fmt.Errorf("kube: initial sync: %w", err)
			}
		}
	}
	for _, key := range s.routeKeys() {
		if err := s.sync(prefixRoute+key, time.Time{}); err != nil {
			return fmt.Errorf("kube: initial sync: %w", err)
		}
	}
	if s.gw.opts != nil {
		if err := s.sync(gatewayKey, time.Time{}); err != nil {
			return fmt.Errorf("kube: initial sync: %w", err)
		}
	}
	return nil
}

func (s *Source) lister(ns string) (listerSet, bool) {
	if ls, ok := s.listers[""]; ok {
		return ls, true
	}
	ls, ok := s.listers[ns]
	return ls, ok
}

// secretSelector keeps the Secret informer to TLS Secrets.
const secretSelector = "type=" + string(corev1.SecretTypeTLS)

func (s *Source) notify() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}
