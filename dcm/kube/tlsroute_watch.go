package kube

import (
	"context"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwinformersv1 "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions/apis/v1"
)

// statusTLSRoute is the status key prefix of TLSRoutes.
const statusTLSRoute = "tlsroute/"

// tlsRoutesServed asks discovery whether the API server serves TLSRoutes
// in gateway.networking.k8s.io/v1 (the standard channel's CRDs from
// v1.5): without them dcm serves the rest of the Gateway API, and a TLS
// listener takes no route.
func (s *Source) tlsRoutesServed() bool {
	list, err := s.gw.opts.Discovery.ServerResourcesForGroupVersion(gwv1.GroupVersion.String())
	if err != nil {
		s.log.Warn("TLSRoutes not watched: discovery failed", "err", err)
		return false
	}
	for _, r := range list.APIResources {
		if r.Name == "tlsroutes" {
			return true
		}
	}
	s.log.Info("TLSRoutes not served by the API server: TLS listeners take no route")
	return false
}

// watchTLSRoutes adds the TLSRoutes of one namespace's informer factory.
func (s *Source) watchTLSRoutes(v1 gwinformersv1.Interface, ls *gwListers, add func(cache.SharedIndexInformer)) {
	ls.tlsRoutes = append(ls.tlsRoutes, v1.TLSRoutes().Lister())
	add(v1.TLSRoutes().Informer())
	s.recheckStatus(v1.TLSRoutes().Informer(), statusTLSRoute)
}

func (ls *gwListers) listTLSRoutes() ([]*gwv1.TLSRoute, error) {
	var out []*gwv1.TLSRoute
	for _, l := range ls.tlsRoutes {
		rs, err := l.List(labels.Everything())
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	return out, nil
}

func tlsRouteByName(ls *gwListers, ns, name string) (*gwv1.TLSRoute, error) {
	for _, l := range ls.tlsRoutes {
		r, err := l.TLSRoutes(ns).Get(name)
		if err == nil || !apierrors.IsNotFound(err) {
			return r, err
		}
	}
	return nil, apierrors.NewNotFound(gwv1.Resource("tlsroutes"), name)
}

// writeTLSRouteStatus replaces dcm's entries in a TLSRoute's
// status.parents and leaves other controllers' alone, as
// writeRouteStatus does for HTTPRoutes.
func (s *Source) writeTLSRouteStatus(ctx context.Context, ls *gwListers, ns, name string, want []gwv1.RouteParentStatus) error {
	r, err := tlsRouteByName(ls, ns, name)
	if err != nil {
		return err
	}
	parents := s.routeParents(r.Status.Parents, want)
	if reflect.DeepEqual(r.Status.Parents, parents) || len(r.Status.Parents) == 0 && len(parents) == 0 {
		s.dropRouteTombstone(statusTLSRoute+ns+"/"+name, want)
		return nil
	}
	r = r.DeepCopy()
	r.Status.Parents = parents
	if _, err := s.gw.opts.Client.GatewayV1().TLSRoutes(ns).UpdateStatus(ctx, r, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update status of TLSRoute %s/%s: %w", ns, name, err)
	}
	s.statusWrites.Add(1)
	s.dropRouteTombstone(statusTLSRoute+ns+"/"+name, want)
	return nil
}

// routeParents is a route's status.parents with dcm's entries replaced
// by want (their transition times kept where the status did not change).
func (s *Source) routeParents(current, want []gwv1.RouteParentStatus) []gwv1.RouteParentStatus {
	ctrl := gwv1.GatewayController(s.opts.GatewayControllerName)
	var parents []gwv1.RouteParentStatus
	for _, p := range current {
		if p.ControllerName != ctrl {
			parents = append(parents, p)
		}
	}
	for _, w := range want {
		w = *w.DeepCopy()
		var old []metav1.Condition
		for _, p := range current {
			if p.ControllerName == ctrl && reflect.DeepEqual(p.ParentRef, w.ParentRef) {
				old = p.Conditions
			}
		}
		w.Conditions = s.keepTransitions(old, w.Conditions)
		parents = append(parents, w)
	}
	return parents
}
