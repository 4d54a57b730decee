package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"
)

// Queue keys: "ingress/<ns>/<name>" and "service/<ns>/<name>".
const (
	prefixIngress = "ingress/"
	prefixService = "service/"
	prefixSecret  = "secret/"
	prefixRoute   = "route/"
	prefixGateway = "gateway/"
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

// sync recomputes what the key affects. seen is when an informer first saw
// the change (zero for the initial state).
func (s *Source) sync(key string, seen time.Time) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.syncs.Add(1)
	kind, rest, _ := strings.Cut(key, "/")
	ns, name, ok := strings.Cut(rest, "/")
	if kind+"/" == prefixNamespace {
		// A namespace is cluster-scoped: its key is its name alone.
		ns, name, ok = rest, rest, rest != ""
	}
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
		s.gatewayTouched(prefixService, ns, name)
	case prefixSecret:
		err = s.syncSecret(t, ns, name)
		s.gatewayTouched(prefixSecret, ns, name)
	case prefixGateway:
		err = s.syncGateways(t)
	case prefixRoute:
		err = s.syncRoute(t, ns, name)
	case prefixNamespace:
		err = s.syncNamespace(t, ns)
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
	s.forgetUnused(t)
	// Commit even after an error: what was computed is consistent with the
	// indexes already updated, and the retry recomputes the rest.
	s.commit(t, seen)
	if err != nil {
		return fmt.Errorf("sync %s: %w", key, err)
	}
	return nil
}
