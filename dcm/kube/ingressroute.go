package kube

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// On OpenShift, route-controller-manager makes a Route for each host/path
// of an Ingress, owned by it (an ownerReference of kind Ingress with
// controller: true). dcm serves the pair once, from the Ingress, and
// treats such a Route as not its own — no route, no conflict, no status
// entry, no event — while it serves the Ingress:
//   - the Ingress is what the user wrote: its annotations (dcm's and
//     route.openshift.io/termination alike), its class and its status are
//     the ones the user reads, and it is served the same on a cluster
//     without route-controller-manager;
//   - dcm follows the Ingress's TLS Secret itself, so a rotation is served
//     as soon as the Secret changes, not once the controller has copied
//     the key into the Route;
//   - the Route is a derived copy that lags the Ingress and is rewritten
//     whenever it drifts: serving it would serve a stale translation.
// A Route whose Ingress dcm does not take (another class, another shard,
// or gone) is served as any other Route.

// ownerAPIVersions are the Ingress API versions route-controller-manager
// names its owner by.
var ownerAPIVersions = []string{"networking.k8s.io/v1", "networking.k8s.io/v1beta1", "extensions/v1beta1"}

// ingressOwner is the Ingress that owns a Route as its controller, by name
// and UID, as route-controller-manager sets it.
func ingressOwner(u *unstructured.Unstructured) (name, uid string, ok bool) {
	for _, ref := range u.GetOwnerReferences() {
		if ref.Kind == KindIngress && slices.Contains(ownerAPIVersions, ref.APIVersion) && ref.Controller != nil && *ref.Controller {
			return ref.Name, string(ref.UID), true
		}
	}
	return "", "", false
}

// servedByIngress reports whether a Route is route-controller-manager's
// copy of an Ingress dcm serves itself: that Ingress, the same object
// (UID), of dcm's class and shard. Call under syncMu.
func (s *Source) servedByIngress(u *unstructured.Unstructured) bool {
	name, uid, ok := ingressOwner(u)
	if !ok {
		return false
	}
	ls, ok := s.lister(u.GetNamespace())
	if !ok {
		return false
	}
	ing, err := ls.ingresses.Ingresses(u.GetNamespace()).Get(name)
	if err != nil || (uid != "" && string(ing.UID) != uid) {
		return false
	}
	return MatchesClass(ing, s.opts.IngressClass) && s.inShard(ing.Namespace, ing.Labels)
}

// syncOwnedRoutes syncs again the Routes an Ingress owns: they pass from
// served to skipped when dcm takes the Ingress, and back when it no longer
// does.
func (s *Source) syncOwnedRoutes(t *txn, ns, ingress string) error {
	l, ok := s.routeLister(ns)
	if !ok {
		return nil
	}
	objs, err := l.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list routes of %s: %w", ns, err)
	}
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		if name, _, owned := ingressOwner(u); owned && name == ingress {
			if err := s.syncRoute(t, ns, u.GetName()); err != nil {
				return err
			}
		}
	}
	return nil
}
