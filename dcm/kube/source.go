package kube

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/dcm-router/dcm/dcm"
)

// Options select what the Source watches.
type Options struct {
	// IngressClass is the class dcm serves; "" serves every Ingress.
	IngressClass string
	// Namespaces limits the watch; empty watches all namespaces.
	Namespaces []string
	// Workers is the number of queue workers (default 2).
	Workers int
	// Resync is the informers' resync period (0: none).
	Resync time.Duration
	// DefaultBackendCA is the destination CA (PEM, checked with ParseCA)
	// of reencrypt routes that name none (--default-backend-ca-file);
	// nil rejects such routes.
	DefaultBackendCA []byte
	// PEMs receives the certificates and CAs the routes name, for the
	// HAProxy driver; nil: a store of the Source's own (Source.PEMs).
	PEMs *PEMStore
}

// Reporter hears about objects dcm refuses to serve. Rejected is called once
// when an object becomes rejected or its reason or message changes, Accepted
// once when it is no longer rejected (valid again, deleted, or no longer used
// by any route) — never on a resync that changes nothing. Calls come in the
// order of the changes, from the Source's workers while they hold the sync
// lock: a Reporter must not block for long; it may call Desired and
// Rejections.
type Reporter interface {
	Rejected(obj dcm.ObjectRef, reason, message string)
	Accepted(obj dcm.ObjectRef)
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

// Queue keys: "ingress/<ns>/<name>" and "service/<ns>/<name>".
const (
	prefixIngress = "ingress/"
	prefixService = "service/"
	prefixSecret  = "secret/"
	prefixRoute   = "route/"
	// indexByService indexes EndpointSlices by "<ns>/<service>".
	indexByService = "dcm.io/by-service"
)

// listerSet reads one informer factory's caches.
type listerSet struct {
	ingresses networkinglisters.IngressLister
	services  corelisters.ServiceLister
	slices    cache.Indexer // EndpointSlices, indexed by indexByService
	secrets   corelisters.SecretLister
}

// identity is something only one Ingress may have served at a time: a
// host/path/pathType, or a backend name.
type identity struct {
	host     string
	path     string
	pathType dcm.PathType
	backend  string
}

func (id identity) String() string {
	if id.backend != "" {
		return fmt.Sprintf("backend %q", id.backend)
	}
	return fmt.Sprintf("host %q path %q (%s)", hostOrAny(id.host), id.path, id.pathType)
}

// ingressState is what the Source knows of one Ingress or OpenShift Route
// it serves or rejects: both claim host/paths under one rule.
type ingressState struct {
	key     string // ns/name for an Ingress, routeKey for a Route
	ref     dcm.ObjectRef
	created time.Time
	routes  []dcm.Route // nil when invalid
	ids     []identity
	invalid *dcm.Rejection
	served  []string // backend names currently in the desired state
}

// servedRoute is a route in the desired state and the Ingress it came from.
type servedRoute struct {
	route   dcm.Route // Workload unset: it comes from the Service
	ingress string
}

// Source turns Ingresses, Services and EndpointSlices into dcm.Desired. It
// follows kubernetes/sample-controller: informers feed a rate-limited queue
// of keys, workers recompute what a key affects from the listers. A sync is
// level-triggered and idempotent, so it can always be rerun.
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
	claims       map[identity]map[string]struct{} // → keys of valid Ingresses
	routes       map[string]servedRoute           // backend name →
	byService    map[string]map[string]struct{}   // ns/svc → backend names
	bySecret     map[string]map[string]struct{}   // ns/secret → backend names of edge routes
	sliceRejects map[string]map[dcm.ObjectRef]dcm.Rejection
	// routeListers read OpenShift Routes, by namespace as listers; empty
	// while the Routes API is not served (or not watched).
	routeListers map[string]cache.GenericLister

	rw routeWatch

	// pems receives the PEM of certificates and CAs for the driver.
	pems *PEMStore

	mu       sync.Mutex // guards the snapshot below
	backends map[string]dcm.DesiredBackend
	// sorted caches backends sorted by name; it is patched in place when a
	// backend changes and rebuilt (nil) when one comes or goes. Desired hands
	// out copies, never sorted itself.
	sorted     []dcm.DesiredBackend
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
		ing := f.Networking().V1().Ingresses()
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
		s.addHandlers(ing.Informer(), svc.Informer(), eps.Informer())
		if _, err := sec.Informer().AddEventHandler(s.handlers(prefixSecret, objectKey)); err != nil && s.initErr == nil {
			s.initErr = fmt.Errorf("kube: add secret event handler: %w", err)
		}
		s.factories = append(s.factories, f, sf)
		s.listers[ns] = listerSet{ingresses: ing.Lister(), services: svc.Lister(), slices: eps.Informer().GetIndexer(), secrets: sec.Lister()}
		s.hasSynced = append(s.hasSynced, ing.Informer().HasSynced, svc.Informer().HasSynced, eps.Informer().HasSynced, sec.Informer().HasSynced)
	}
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
	if opts.Workers <= 0 {
		opts.Workers = 2
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
		claims:       map[identity]map[string]struct{}{},
		routes:       map[string]servedRoute{},
		byService:    map[string]map[string]struct{}{},
		bySecret:     map[string]map[string]struct{}{},
		sliceRejects: map[string]map[dcm.ObjectRef]dcm.Rejection{},
		routeListers: map[string]cache.GenericLister{},
		backends:     map[string]dcm.DesiredBackend{},
		rejections:   map[dcm.ObjectRef]dcm.Rejection{},
	}
}

func sliceServiceIndex(obj any) ([]string, error) {
	sl, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return nil, nil
	}
	if svc := sl.Labels[discoveryv1.LabelServiceName]; svc != "" {
		return []string{sl.Namespace + "/" + svc}, nil
	}
	return nil, nil
}

// handlers queue the keys of an informer's objects. Objects of the initial
// list are not queued: Run reads the whole state from the caches once they
// are synced, which covers them.
func (s *Source) handlers(prefix string, key func(any) []string) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if !initial {
				s.enqueue(prefix, key(obj)...)
			}
		},
		UpdateFunc: func(old, obj any) {
			// A slice moved to another Service (label edit) affects both.
			s.enqueue(prefix, slices.Compact(append(key(old), key(obj)...))...)
		},
		DeleteFunc: func(obj any) { s.enqueue(prefix, key(obj)...) },
	}
}

func (s *Source) addHandlers(ing, svc, eps cache.SharedIndexInformer) {
	handlers := s.handlers
	for _, h := range []struct {
		inf    cache.SharedIndexInformer
		prefix string
		key    func(any) []string
	}{
		{ing, prefixIngress, objectKey},
		{svc, prefixService, objectKey},
		{eps, prefixService, sliceServiceKey},
	} {
		if _, err := h.inf.AddEventHandler(handlers(h.prefix, h.key)); err != nil && s.initErr == nil {
			s.initErr = fmt.Errorf("kube: add %s event handler: %w", strings.TrimSuffix(h.prefix, "/"), err)
		}
	}
}

func unwrapTombstone(obj any) any {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}

func objectKey(obj any) []string {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return nil
	}
	return []string{key}
}

func sliceServiceKey(obj any) []string {
	keys, _ := sliceServiceIndex(unwrapTombstone(obj))
	return keys
}

// enqueue records when an informer first saw a change for each key (for the
// event→applied latency) and queues the keys.
func (s *Source) enqueue(prefix string, keys ...string) {
	now := s.now()
	for _, k := range keys {
		k = prefix + k
		s.seenMu.Lock()
		if _, ok := s.seen[k]; !ok {
			s.seen[k] = now
		}
		s.seenMu.Unlock()
		s.queue.Add(k)
	}
}

func (s *Source) takeSeen(key string) time.Time {
	s.seenMu.Lock()
	defer s.seenMu.Unlock()
	t := s.seen[key]
	delete(s.seen, key)
	return t
}

// putBackSeen keeps the time of a change whose sync failed for the retry.
func (s *Source) putBackSeen(key string, t time.Time) {
	if t.IsZero() {
		return
	}
	s.seenMu.Lock()
	defer s.seenMu.Unlock()
	if old, ok := s.seen[key]; !ok || t.Before(old) {
		s.seen[key] = t
	}
}

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
	if s.sorted == nil {
		// Sorting names, not 250-byte structs, keeps this cheap at scale.
		names := make([]string, 0, len(s.backends))
		for n := range s.backends {
			names = append(names, n)
		}
		slices.Sort(names)
		s.sorted = make([]dcm.DesiredBackend, len(names))
		for i, n := range names {
			s.sorted[i] = s.backends[n]
		}
	}
	since := s.since
	s.since = time.Time{}
	return dcm.Desired{Backends: slices.Clone(s.sorted)}, since
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
// state, signals Changed and then processes events with Options.Workers
// workers until ctx is done. It returns an error if the caches cannot sync
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
	defer func() {
		// Informers stop with ctx; Shutdown waits for them.
		cancel()
		for _, f := range s.factories {
			f.Shutdown()
		}
		s.rw.wg.Wait()
	}()
	for _, f := range s.factories {
		f.Start(ctx.Done())
	}
	hasSynced := append(slices.Clip(s.hasSynced), s.startRoutes(ctx)...)
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
	for range s.opts.Workers {
		wg.Go(func() { wait.UntilWithContext(ctx, s.runWorker, time.Second) })
	}
	if s.rw.status != nil {
		wg.Go(func() { wait.UntilWithContext(ctx, s.runStatusWorker, time.Second) })
	}
	<-ctx.Done()
	s.queue.ShutDown()
	if s.rw.status != nil {
		s.rw.status.ShutDown()
	}
	wg.Wait()
	return nil
}

// initial syncs every Ingress in the caches; the Services and slices they
// reference are read along the way.
func (s *Source) initial() error {
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
	return nil
}

func (s *Source) runWorker(ctx context.Context) {
	for s.processNextWorkItem(ctx) {
	}
}

func (s *Source) processNextWorkItem(ctx context.Context) bool {
	key, shutdown := s.queue.Get()
	if shutdown {
		return false
	}
	defer s.queue.Done(key)
	seen := s.takeSeen(key)
	if err := s.sync(key, seen); err != nil {
		s.putBackSeen(key, seen)
		s.queue.AddRateLimited(key)
		s.log.ErrorContext(ctx, "sync failed, retrying", "key", key, "requeues", s.queue.NumRequeues(key), "err", err)
		return true
	}
	s.queue.Forget(key)
	return true
}

// txn collects what one sync changes; commit publishes it at once so
// Desired never sees half a sync.
type txn struct {
	backends   map[string]*dcm.DesiredBackend // nil: delete
	rejections map[dcm.ObjectRef]*dcm.Rejection
	views      map[string]*serviceView
	services   map[string]struct{} // ns/svc whose route count may have dropped to zero
	certs      map[string]string   // ns/secret → version read in this sync
	cas        map[string]string   // CA source → version read in this sync
	secrets    map[string]struct{} // ns/secret whose route count may have dropped to zero
}

func newTxn() *txn {
	return &txn{
		backends:   map[string]*dcm.DesiredBackend{},
		rejections: map[dcm.ObjectRef]*dcm.Rejection{},
		views:      map[string]*serviceView{},
		services:   map[string]struct{}{},
		certs:      map[string]string{},
		cas:        map[string]string{},
		secrets:    map[string]struct{}{},
	}
}

func (t *txn) reject(r dcm.Rejection)   { t.rejections[r.Object] = &r }
func (t *txn) accept(ref dcm.ObjectRef) { t.rejections[ref] = nil }

// sync recomputes what the key affects. seen is when an informer first saw
// the change (zero for the initial state).
func (s *Source) sync(key string, seen time.Time) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.syncs.Add(1)
	kind, rest, _ := strings.Cut(key, "/")
	ns, name, ok := strings.Cut(rest, "/")
	if !ok {
		s.log.Warn("dropping malformed queue key", "key", key)
		return nil
	}
	t := newTxn()
	var err error
	switch kind + "/" {
	case prefixIngress:
		err = s.syncIngress(t, ns, name)
	case prefixService:
		err = s.syncService(t, ns, name)
	case prefixSecret:
		err = s.syncSecret(t, ns, name)
	case prefixRoute:
		err = s.syncRoute(t, ns, name)
	default:
		s.log.Warn("dropping queue key of unknown kind", "key", key)
		return nil
	}
	if err == nil {
		for _, v := range t.views {
			if v.err != nil {
				err = v.err
				break
			}
		}
	}
	// Services no route uses any more: their slices are not dcm's concern.
	for svc := range t.services {
		if len(s.byService[svc]) == 0 {
			delete(s.byService, svc)
			for ref := range s.sliceRejects[svc] {
				t.accept(ref)
			}
			delete(s.sliceRejects, svc)
		}
	}
	// Secrets no route uses any more: forget their keys and verdicts.
	for sec := range t.secrets {
		if len(s.bySecret[sec]) == 0 {
			delete(s.bySecret, sec)
			ns, name, _ := strings.Cut(sec, "/")
			t.accept(dcm.ObjectRef{Kind: KindSecret, Namespace: ns, Name: name})
			s.pems.forget(sec, CASecretPrefix+sec)
		}
	}
	// Commit even after an error: what was computed is consistent with the
	// indexes already updated, and the retry recomputes the rest.
	s.commit(t, seen)
	if err != nil {
		return fmt.Errorf("sync %s: %w", key, err)
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

func (s *Source) syncIngress(t *txn, ns, name string) error {
	key := ns + "/" + name
	ref := dcm.ObjectRef{Kind: KindIngress, Namespace: ns, Name: name}
	var st *ingressState
	if ls, ok := s.lister(ns); ok {
		ing, err := ls.ingresses.Ingresses(ns).Get(name)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("get ingress: %w", err)
		case MatchesClass(ing, s.opts.IngressClass):
			st = s.convertIngress(ing)
		}
	}
	s.settle(t, key, ref, st)
	return nil
}

// settle puts what the Source now knows of one Ingress or Route (nil: gone
// or not dcm's) in place and decides again who serves what among the
// objects it competes with.
func (s *Source) settle(t *txn, key string, ref dcm.ObjectRef, st *ingressState) {
	old := s.ingresses[key]
	start := []string{key}
	if old != nil {
		start = append(start, s.release(old)...)
		if st != nil {
			st.served = old.served
		}
	}
	if st == nil {
		if old != nil {
			s.serve(t, old, nil)
			delete(s.ingresses, key)
		}
		t.accept(ref)
	} else {
		s.ingresses[key] = st
		start = append(start, s.claim(st)...)
	}
	s.resolve(t, s.component(start), key)
}

func (s *Source) convertIngress(ing *networkingv1.Ingress) *ingressState {
	ref := dcm.ObjectRef{Kind: KindIngress, Namespace: ing.Namespace, Name: ing.Name}
	st := &ingressState{key: ing.Namespace + "/" + ing.Name, ref: ref, created: ing.CreationTimestamp.Time}
	routes, err := IngressRoutes(ing)
	if err != nil {
		st.invalid = &dcm.Rejection{Object: ref, Reason: RejectReason(err), Message: RejectMessage(err)}
		return st
	}
	for _, r := range routes {
		if r.Upstream != nil && r.Upstream.CA == CADefault && len(s.opts.DefaultBackendCA) == 0 {
			st.invalid = &dcm.Rejection{Object: ref, Reason: dcm.RejectInvalidValue,
				Message: "reencrypt route " + r.Name + ": no " + AnnotationBackendCA + " annotation and no --default-backend-ca-file"}
			return st
		}
	}
	st.routes = routes
	for _, r := range routes {
		st.ids = append(st.ids,
			identity{host: r.Host, path: r.Path, pathType: r.PathType},
			identity{backend: r.BackendName()})
	}
	return st
}

// release drops the claims of an Ingress and returns the other Ingresses
// that claimed the same things: they may win now.
func (s *Source) release(st *ingressState) []string {
	var others []string
	for _, id := range st.ids {
		delete(s.claims[id], st.key)
		if len(s.claims[id]) == 0 {
			delete(s.claims, id)
		}
		for k := range s.claims[id] {
			others = append(others, k)
		}
	}
	return others
}

func (s *Source) claim(st *ingressState) []string {
	var others []string
	for _, id := range st.ids {
		set := s.claims[id]
		if set == nil {
			set = map[string]struct{}{}
			s.claims[id] = set
		}
		for k := range set {
			others = append(others, k)
		}
		set[st.key] = struct{}{}
	}
	return others
}

// component returns the Ingresses linked to start through shared claims:
// who serves a contested host/path can change only among them.
func (s *Source) component(start []string) []*ingressState {
	done := map[string]bool{}
	var out []*ingressState
	queue := start
	for len(queue) > 0 {
		k := queue[0]
		queue = queue[1:]
		if done[k] {
			continue
		}
		done[k] = true
		st := s.ingresses[k]
		if st == nil {
			continue
		}
		out = append(out, st)
		for _, id := range st.ids {
			for other := range s.claims[id] {
				if !done[other] {
					queue = append(queue, other)
				}
			}
		}
	}
	return out
}

// resolve decides who serves what within a component: oldest object first
// (then namespace/name, then Ingress before Route), each taking its
// host/paths and backend names unless an older one already has one of them,
// in which case the whole Ingress or Route is rejected — OpenShift's router
// rule, applied to Ingresses and Routes alike. The answer depends only on
// the objects, never on event order.
func (s *Source) resolve(t *txn, comp []*ingressState, changed string) {
	slices.SortFunc(comp, func(a, b *ingressState) int {
		return cmp.Or(a.created.Compare(b.created), strings.Compare(a.ref.Namespace, b.ref.Namespace),
			strings.Compare(a.ref.Name, b.ref.Name), strings.Compare(a.ref.Kind, b.ref.Kind))
	})
	taken := map[identity]*ingressState{}
	for _, st := range comp {
		if st.invalid != nil {
			t.reject(*st.invalid)
			s.serve(t, st, nil)
			continue
		}
		var conflict *dcm.Rejection
		for _, id := range st.ids {
			if owner, ok := taken[id]; ok {
				conflict = &dcm.Rejection{Object: st.ref, Reason: dcm.RejectConflict,
					Message: fmt.Sprintf("%s is already served by %s %s/%s, which is older", id, owner.ref.Kind, owner.ref.Namespace, owner.ref.Name)}
				break
			}
		}
		if conflict != nil {
			t.reject(*conflict)
			s.serve(t, st, nil)
			continue
		}
		for _, id := range st.ids {
			taken[id] = st
		}
		t.accept(st.ref)
		// An Ingress that kept its routes and its place needs no work.
		if st.key == changed || len(st.served) != len(st.routes) {
			s.serve(t, st, st.routes)
		}
	}
}

// serve makes routes the backends an Ingress has in the desired state.
func (s *Source) serve(t *txn, st *ingressState, routes []dcm.Route) {
	keep := make(map[string]bool, len(routes))
	for _, r := range routes {
		keep[r.BackendName()] = true
	}
	for _, name := range st.served {
		// The backend may have passed to an older Ingress in this same
		// resolve; then it is no longer ours to remove.
		if !keep[name] && s.routes[name].ingress == st.key {
			s.unroute(t, name)
			t.backends[name] = nil
		}
	}
	served := make([]string, 0, len(routes))
	for _, r := range routes {
		name := r.BackendName()
		s.unroute(t, name)
		s.routes[name] = servedRoute{route: r, ingress: st.key}
		for _, ref := range r.Services {
			svc := r.Namespace + "/" + ref.Name
			if s.byService[svc] == nil {
				s.byService[svc] = map[string]struct{}{}
			}
			s.byService[svc][name] = struct{}{}
		}
		for _, sec := range routeSecrets(r) {
			if s.bySecret[sec] == nil {
				s.bySecret[sec] = map[string]struct{}{}
			}
			s.bySecret[sec][name] = struct{}{}
		}
		b := s.backendFor(t, r)
		t.backends[name] = &b
		served = append(served, name)
	}
	st.served = served
}

// unroute forgets which Service a backend uses.
func (s *Source) unroute(t *txn, name string) {
	old, ok := s.routes[name]
	if !ok {
		return
	}
	delete(s.routes, name)
	for _, ref := range old.route.Services {
		svc := old.route.Namespace + "/" + ref.Name
		delete(s.byService[svc], name)
		t.services[svc] = struct{}{}
	}
	for _, sec := range routeSecrets(old.route) {
		delete(s.bySecret[sec], name)
		t.secrets[sec] = struct{}{}
	}
}

// routeSecrets are the Secrets (ns/name) a route reads: its certificate's
// and its destination CA's.
func routeSecrets(r dcm.Route) []string {
	var out []string
	if r.TLS != nil && !dcm.InlineCert(r.TLS.Secret) {
		// A Route's inline certificate comes with the Route.
		out = append(out, r.TLS.Secret)
	}
	if r.Upstream != nil {
		if sec, ok := strings.CutPrefix(r.Upstream.CA, CASecretPrefix); ok && (len(out) == 0 || out[0] != sec) {
			out = append(out, sec)
		}
	}
	return out
}

func (s *Source) syncService(t *txn, ns, name string) error {
	svc := ns + "/" + name
	t.services[svc] = struct{}{}
	names := s.byService[svc]
	if len(names) == 0 {
		return nil
	}
	v := s.view(t, ns, name)
	if v.err != nil {
		return v.err
	}
	for n := range names {
		b := s.backendFor(t, s.routes[n].route)
		t.backends[n] = &b
	}
	return nil
}

// syncSecret recomputes the edge routes that use a Secret: a new version
// is a certificate rotation, a deleted Secret leaves its hosts to the
// default certificate (certVersion says what an invalid one does).
func (s *Source) syncSecret(t *txn, ns, name string) error {
	key := ns + "/" + name
	t.secrets[key] = struct{}{}
	for n := range s.bySecret[key] {
		r := s.routes[n].route
		b := s.backendFor(t, r)
		t.backends[n] = &b
	}
	return nil
}

// secretSelector keeps the Secret informer to TLS Secrets.
const secretSelector = "type=" + string(corev1.SecretTypeTLS)

// certVersion reads a route's Secret (once per sync) and returns the
// version of its certificate. A missing Secret gives "": its hosts get the
// default certificate. An invalid one is rejected with its reason and its
// hosts keep the last valid version dcm has seen of it, so a botched
// rotation does not turn into clients refusing the default certificate
// (after a restart of dcm there is none: they get the default one).
func (s *Source) certVersion(t *txn, secret string) string {
	if v, ok := t.certs[secret]; ok {
		return v
	}
	t.secrets[secret] = struct{}{}
	ns, name, _ := strings.Cut(secret, "/")
	ref := dcm.ObjectRef{Kind: KindSecret, Namespace: ns, Name: name}
	version := ""
	if ls, ok := s.lister(ns); ok && ls.secrets != nil {
		sec, err := ls.secrets.Secrets(ns).Get(name)
		switch {
		case apierrors.IsNotFound(err):
			t.reject(dcm.Rejection{Object: ref, Reason: dcm.RejectInvalidValue,
				Message: "no kubernetes.io/tls Secret " + secret + ": its hosts get the default certificate"})
		case err != nil:
			s.log.Warn("reading secret", "secret", secret, "err", err)
		default:
			pem, v, err := SecretCert(sec)
			if err != nil {
				t.reject(dcm.Rejection{Object: ref, Reason: RejectReason(err), Message: RejectMessage(err)})
				version = s.pems.newestCert(secret)
				break
			}
			t.accept(ref)
			version = v
			s.pems.keepCert(secret, v, pem)
		}
	}
	t.certs[secret] = version
	return version
}

// serviceView is a Service and its usable slices, read once per sync.
type serviceView struct {
	svc      *corev1.Service
	slices   []*discoveryv1.EndpointSlice // valid ones only
	workload *dcm.WorkloadRef
	err      error
}

func (s *Source) view(t *txn, ns, name string) *serviceView {
	key := ns + "/" + name
	if v, ok := t.views[key]; ok {
		return v
	}
	v := &serviceView{}
	t.views[key] = v
	ls, ok := s.lister(ns)
	if !ok {
		return v
	}
	svc, err := ls.services.Services(ns).Get(name)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		v.err = fmt.Errorf("get service %s: %w", key, err)
		return v
	default:
		v.svc = svc
	}
	objs, err := ls.slices.ByIndex(indexByService, key)
	if err != nil {
		v.err = fmt.Errorf("list endpointslices of %s: %w", key, err)
		return v
	}
	all := make([]*discoveryv1.EndpointSlice, 0, len(objs))
	for _, o := range objs {
		if sl, ok := o.(*discoveryv1.EndpointSlice); ok {
			all = append(all, sl)
		}
	}
	slices.SortFunc(all, func(a, b *discoveryv1.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })

	rejects := map[dcm.ObjectRef]dcm.Rejection{}
	for _, sl := range all {
		ref := dcm.ObjectRef{Kind: KindEndpointSlice, Namespace: sl.Namespace, Name: sl.Name}
		if err := ValidateEndpointSlice(sl); err != nil {
			r := dcm.Rejection{Object: ref, Reason: RejectReason(err), Message: RejectMessage(err)}
			rejects[ref] = r
			t.reject(r)
			continue
		}
		v.slices = append(v.slices, sl)
	}
	for ref := range s.sliceRejects[key] {
		if _, still := rejects[ref]; !still {
			t.accept(ref)
		}
	}
	if len(rejects) > 0 {
		s.sliceRejects[key] = rejects
	} else {
		delete(s.sliceRejects, key)
	}

	w, err := Workload(v.svc, v.slices)
	if err != nil {
		s.log.Warn("ignoring workload annotation", "service", key, "err", err)
	}
	v.workload = w
	return v
}

// backendFor is the desired backend of a route: its Services' endpoints
// and, for an edge or reencrypt route, its Secret's version; a reencrypt
// route's destination CA version too, and its servers named after it
// (dcm.DesiredBackend.WithUpstreamNames). A reencrypt route whose CA is
// missing has no servers: HAProxy answers 503 rather than talk to pods it
// cannot verify.
func (s *Source) backendFor(t *txn, r dcm.Route) dcm.DesiredBackend {
	if r.TLS != nil && !dcm.InlineCert(r.TLS.Secret) {
		// An inline certificate's version comes with its Route.
		tls := *r.TLS // shared with s.routes: never written in place
		tls.Version = s.certVersion(t, tls.Secret)
		r.TLS = &tls
	}
	if r.Upstream != nil {
		up := *r.Upstream
		up.Version = s.caVersion(t, up.CA, up.Version)
		r.Upstream = &up
	}
	views := make([]*serviceView, len(r.Services))
	for i, ref := range r.Services {
		views[i] = s.view(t, r.Namespace, ref.Name)
	}
	b := backendFor(r, views)
	if r.Upstream != nil && r.Upstream.Version == "" {
		b.Endpoints = []dcm.Endpoint{}
	}
	return b.WithUpstreamNames()
}

// caVersion reads a reencrypt route's destination CA (once per sync) and
// returns its version. A CA from a Secret's ca.crt: a missing Secret gives
// "" (the route gets no servers), an invalid one is rejected with its
// reason and the route keeps the last valid version dcm has seen of it,
// as certVersion does. The default CA is the one checked at start. Other
// sources (an OpenShift Route's inline CA) bring their version along and
// register their PEM in the PEMStore.
func (s *Source) caVersion(t *txn, ca, given string) string {
	if v, ok := t.cas[ca]; ok {
		return v
	}
	version := given
	switch {
	case ca == CADefault:
		version = ""
		if len(s.opts.DefaultBackendCA) > 0 {
			if v, err := ParseCA(s.opts.DefaultBackendCA); err == nil {
				version = v
				s.pems.keepCA(ca, v, s.opts.DefaultBackendCA)
			}
		}
	case strings.HasPrefix(ca, CASecretPrefix):
		secret := strings.TrimPrefix(ca, CASecretPrefix)
		t.secrets[secret] = struct{}{}
		ns, name, _ := strings.Cut(secret, "/")
		ref := dcm.ObjectRef{Kind: KindSecret, Namespace: ns, Name: name}
		version = ""
		if ls, ok := s.lister(ns); ok && ls.secrets != nil {
			sec, err := ls.secrets.Secrets(ns).Get(name)
			switch {
			case apierrors.IsNotFound(err):
				t.reject(dcm.Rejection{Object: ref, Reason: dcm.RejectInvalidValue,
					Message: "no kubernetes.io/tls Secret " + secret + " with " + CAKey + ": its reencrypt routes get no servers (503)"})
			case err != nil:
				s.log.Warn("reading secret", "secret", secret, "err", err)
			default:
				pem, v, err := SecretCA(sec)
				if err != nil {
					t.reject(dcm.Rejection{Object: ref, Reason: RejectReason(err), Message: "destination CA: " + RejectMessage(err)})
					if last := s.pems.newestCA(ca); last != "" {
						version = last
					}
					break
				}
				t.accept(ref)
				version = v
				s.pems.keepCA(ca, v, pem)
			}
		}
	}
	t.cas[ca] = version
	return version
}

// backendFor builds a route's backend from the views of its services, in
// the order of r.Services. A route with several services weighs each
// server so that every service gets its share (dcm.ServerWeights); as
// endpoints come and go the weights of all the route's servers follow.
func backendFor(r dcm.Route, views []*serviceView) dcm.DesiredBackend {
	eps := []dcm.Endpoint{} // JSON [] rather than null
	if len(views) > 0 {
		r.Workload = views[0].workload
	}
	if len(views) == 1 {
		eps = append(eps, routeEndpoints(r, 0, views[0])...)
		return dcm.DesiredBackend{Name: r.BackendName(), Route: r, Endpoints: eps}
	}
	// Two Services may select the same pods: one server per name and per
	// address, the first service's (the primary comes first), and it counts
	// for that service only.
	names, addrs := map[string]bool{}, map[string]bool{}
	service := map[string]int{} // endpoint name → index in r.Services
	shares, ready := make([]int, len(views)), make([]int, len(views))
	for i, v := range views {
		shares[i] = r.Services[i].Weight
		for _, e := range routeEndpoints(r, i, v) {
			addr := net.JoinHostPort(e.Addr, strconv.Itoa(e.Port))
			if names[e.Name] || addrs[addr] {
				continue
			}
			names[e.Name], addrs[addr] = true, true
			service[e.Name] = i
			if e.State == dcm.StateReady {
				ready[i]++
			}
			e.Service = r.Services[i].Name
			eps = append(eps, e)
		}
	}
	weights := dcm.ServerWeights(shares, ready)
	for k := range eps {
		eps[k].Weight = weights[service[eps[k].Name]]
	}
	slices.SortFunc(eps, func(a, b dcm.Endpoint) int { return strings.Compare(a.Name, b.Name) })
	return dcm.DesiredBackend{Name: r.BackendName(), Route: r, Endpoints: eps}
}

func equalBackend(a, b dcm.DesiredBackend) bool {
	// Endpoints are the bulk and compare cheaply; Route is compared deeply so
	// a field added to the model later cannot be missed.
	return a.Name == b.Name && slices.Equal(a.Endpoints, b.Endpoints) && reflect.DeepEqual(a.Route, b.Route)
}

type report struct {
	ref dcm.ObjectRef
	rej *dcm.Rejection
}

// commit publishes a sync's result, signals Changed if the desired state
// moved and tells the Reporter about rejections that changed.
func (s *Source) commit(t *txn, seen time.Time) {
	var reports []report
	s.mu.Lock()
	changed := false
	for name, b := range t.backends {
		old, had := s.backends[name]
		switch {
		case b == nil && had:
			delete(s.backends, name)
			s.sorted = nil
			changed = true
		case b != nil && !had:
			s.backends[name] = *b
			s.sorted = nil
			changed = true
		case b != nil && !equalBackend(old, *b):
			s.backends[name] = *b
			if i, ok := slices.BinarySearchFunc(s.sorted, name, func(e dcm.DesiredBackend, n string) int {
				return strings.Compare(e.Name, n)
			}); ok {
				s.sorted[i] = *b
			}
			changed = true
		}
	}
	for ref, r := range t.rejections {
		if ref.Kind == KindRoute && s.rw.status != nil {
			// Its admission may have changed: status.ingress says so.
			s.rw.status.Add(ref.Namespace + "/" + ref.Name)
		}
		old, had := s.rejections[ref]
		switch {
		case r == nil && had:
			delete(s.rejections, ref)
			reports = append(reports, report{ref: ref})
		case r != nil && (!had || old != *r):
			s.rejections[ref] = *r
			reports = append(reports, report{ref: ref, rej: r})
		}
	}
	if changed {
		if !seen.IsZero() && (s.since.IsZero() || seen.Before(s.since)) {
			s.since = seen
		}
	}
	s.mu.Unlock()
	// Still under syncMu: reports leave in the order of the commits.
	slices.SortFunc(reports, func(a, b report) int {
		return cmp.Or(strings.Compare(a.ref.Kind, b.ref.Kind), strings.Compare(a.ref.Namespace, b.ref.Namespace), strings.Compare(a.ref.Name, b.ref.Name))
	})
	for _, r := range reports {
		if r.rej != nil {
			s.log.Info("rejected", "object", r.ref.String(), "reason", r.rej.Reason, "message", r.rej.Message)
			s.reporter.Rejected(r.ref, r.rej.Reason, r.rej.Message)
		} else {
			s.log.Info("accepted", "object", r.ref.String())
			s.reporter.Accepted(r.ref)
		}
	}
	// The initial state is signalled once, when it is complete.
	if changed && s.synced.Load() {
		s.notify()
	}
}

func (s *Source) notify() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}
