package kube

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwinformersv1 "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions/apis/v1"
)

// statusTLSRoute is the status key prefix of TLSRoutes.
const statusTLSRoute = "tlsroute/"

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
	parents, same := s.routeParents(r.Status.Parents, want)
	if same {
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
