package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
)

// A shard is what one dcm serves when several routers share a cluster, as
// OpenShift's router shards do: Ingresses and Routes whose labels match
// Options.RouteSelector, in namespaces whose labels match
// Options.NamespaceSelector. Both selectors go to the API server, so a
// relabelled object or namespace arrives as an add or a delete, and the
// caches hold only the shard.

// prefixNamespace keys a namespace whose place in the shard may have
// changed: "namespace/<name>".
const prefixNamespace = "namespace/"

// ParseSelector parses a label selector flag (labels.Parse syntax); ""
// selects everything and gives nil.
func ParseSelector(flag, s string) (labels.Selector, error) {
	if s == "" {
		return nil, nil
	}
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", flag, s, err)
	}
	return sel, nil
}

// selectorTweak narrows an informer's list and watch to sel.
func selectorTweak(sel labels.Selector) func(*metav1.ListOptions) {
	if sel == nil {
		return nil
	}
	return func(o *metav1.ListOptions) { o.LabelSelector = sel.String() }
}

// watchNamespaces starts nothing yet: it adds the informer of the
// namespaces the selector picks, whose events queue their namespace.
func (s *Source) watchNamespaces(client kubernetes.Interface) {
	if s.opts.NamespaceSelector == nil {
		return
	}
	f := informers.NewSharedInformerFactoryWithOptions(client, s.opts.Resync,
		informers.WithTweakListOptions(selectorTweak(s.opts.NamespaceSelector)))
	inf := f.Core().V1().Namespaces()
	name := func(obj any) []string {
		if ns, ok := unwrapTombstone(obj).(*corev1.Namespace); ok {
			return []string{ns.Name}
		}
		return nil
	}
	if _, err := inf.Informer().AddEventHandler(s.handlers(prefixNamespace, name)); err != nil && s.initErr == nil {
		s.initErr = fmt.Errorf("kube: add namespace event handler: %w", err)
	}
	s.namespaces = inf.Lister()
	s.factories = append(s.factories, f)
	s.hasSynced = append(s.hasSynced, inf.Informer().HasSynced)
}

// inShard says whether dcm serves an object of namespace ns with these
// labels. The API server filters Ingresses and Routes already; checking
// again costs little and keeps one rule for both. It reads only options
// and the namespace cache, so it needs no lock.
func (s *Source) inShard(ns string, objLabels map[string]string) bool {
	if sel := s.opts.RouteSelector; sel != nil && !sel.Matches(labels.Set(objLabels)) {
		return false
	}
	if s.opts.NamespaceSelector == nil {
		return true
	}
	if s.namespaces == nil {
		return false
	}
	n, err := s.namespaces.Get(ns)
	return err == nil && s.opts.NamespaceSelector.Matches(labels.Set(n.Labels))
}

// syncNamespace syncs every Ingress and Route of a namespace that joined
// or left the shard, in one commit.
func (s *Source) syncNamespace(t *txn, ns string) error {
	var keys []string
	if ls, ok := s.lister(ns); ok {
		ings, err := ls.ingresses.Ingresses(ns).List(labels.Everything())
		if err != nil {
			return fmt.Errorf("list ingresses: %w", err)
		}
		for _, ing := range ings {
			keys = append(keys, prefixIngress+ing.Name)
		}
	}
	if l, ok := s.routeLister(ns); ok {
		objs, err := l.List(labels.Everything())
		if err != nil {
			return fmt.Errorf("list routes: %w", err)
		}
		for _, o := range objs {
			if u, ok := o.(*unstructured.Unstructured); ok {
				keys = append(keys, prefixRoute+u.GetName())
			}
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		var err error
		if name, ok := strings.CutPrefix(k, prefixIngress); ok {
			err = s.syncIngress(t, ns, name)
		} else if name, ok := strings.CutPrefix(k, prefixRoute); ok {
			err = s.syncRoute(t, ns, name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// routeGone keeps the last state of a Route that left the Routes cache,
// so that the status writer can take dcm's entry out of its
// status.ingress: a Route relabelled out of the shard is no longer dcm's
// to admit (OpenShift's router does the same). The API server's delete
// event of a relabel carries the object with its new resourceVersion,
// which is what the status update needs.
func (s *Source) routeGone(obj any) {
	u, ok := unwrapTombstone(obj).(*unstructured.Unstructured)
	if !ok || s.rw.status == nil {
		return
	}
	key := u.GetNamespace() + "/" + u.GetName()
	s.rw.gone.put(key, u)
	s.rw.status.Add(key)
}

// routeStatusObject is the Route whose status.ingress the status writer
// works on, and whether dcm admits anything of it (false: it is outside
// the shard, or gone from the cache after a relabel, and dcm's entry must
// go). nil: nothing to write.
func (s *Source) routeStatusObject(ns, name string) (*unstructured.Unstructured, bool, error) {
	s.syncMu.Lock()
	l, ok := s.routeLister(ns)
	s.syncMu.Unlock()
	key := ns + "/" + name
	if !ok {
		return s.rw.gone.take(key), false, nil
	}
	obj, err := l.Get(name)
	if apierrors.IsNotFound(err) {
		return s.rw.gone.take(key), false, nil
	}
	if err != nil {
		return nil, false, err
	}
	s.rw.gone.take(key)
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, false, nil
	}
	s.syncMu.Lock()
	mine := s.inShard(ns, u.GetLabels()) && !s.servedByIngress(u)
	s.syncMu.Unlock()
	return u, mine, nil
}

// dropStatus takes dcm's entry out of a Route's status.ingress, if it has
// one.
func (s *Source) dropStatus(ctx context.Context, u *unstructured.Unstructured) error {
	entries, _, _ := unstructured.NestedSlice(u.Object, "status", "ingress")
	kept := slices.DeleteFunc(slices.Clone(entries), func(e any) bool {
		m, ok := e.(map[string]any)
		return ok && m["routerName"] == s.routerName()
	})
	if len(kept) == len(entries) {
		return nil
	}
	u = u.DeepCopy()
	if err := unstructured.SetNestedSlice(u.Object, kept, "status", "ingress"); err != nil {
		return fmt.Errorf("set status: %w", err)
	}
	_, err := s.rw.opts.Client.Resource(RouteGVR).Namespace(u.GetNamespace()).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	switch {
	case err == nil:
		s.statusWrites.Add(1)
		return nil
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		// The Route changed since: dcm cannot read it (no get), and the
		// state it has is stale. Its next event brings it back here if it
		// is still dcm's to clean.
		s.log.Warn("route left the shard but changed before dcm's status entry could be removed", "route", u.GetNamespace()+"/"+u.GetName())
		return nil
	}
	return err
}
