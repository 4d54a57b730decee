package kube

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Status keys of the Gateway API's status queue.
const (
	statusClass   = "gatewayclass/"
	statusGateway = "gateway/"
	statusRoute   = "httproute/"
	statusGRPC    = "grpcroute/"
)

// setGatewayStatus keeps the status a sync computed and queues the
// objects whose status changed. An HTTPRoute that no longer names a
// Gateway of dcm's keeps a nil entry until its dcm entries are gone.
// syncMu held.
func (s *Source) setGatewayStatus(out *gwOutput) {
	next := map[string]any{}
	for name, st := range out.classes {
		next[statusClass+name] = st
	}
	for nn, st := range out.gateways {
		next[statusGateway+nn.String()] = st
	}
	for nn, parents := range out.routes {
		next[statusRoute+nn.String()] = parents
	}
	for nn, parents := range out.grpcRoutes {
		next[statusGRPC+nn.String()] = parents
	}
	for nn, parents := range out.tlsRoutes {
		next[statusTLSRoute+nn.String()] = parents
	}
	s.gw.statusMu.Lock()
	var changed []string
	for k, v := range s.gw.desired {
		if _, still := next[k]; !still && (strings.HasPrefix(k, statusRoute) || strings.HasPrefix(k, statusGRPC) || strings.HasPrefix(k, statusTLSRoute)) {
			next[k] = []gwv1.RouteParentStatus(nil)
			if v != nil {
				changed = append(changed, k)
			}
		}
	}
	for k, v := range next {
		if old, ok := s.gw.desired[k]; !ok || !reflect.DeepEqual(old, v) {
			changed = append(changed, k)
		}
	}
	s.gw.desired = next
	s.gw.statusMu.Unlock()
	if s.gw.status != nil {
		for _, k := range changed {
			s.gw.status.Add(k)
		}
	}
}

// recheckStatus queues the status key of every object of inf that changes:
// the status worker compares what it wants with the informer's copy, and
// that copy can be older than dcm's own last write (the watch event of the
// write not there yet), so a write that the stale copy made look needless
// is made once the copy catches up. The worker writes only what differs,
// and only for objects it has a status for.
func (s *Source) recheckStatus(inf cache.SharedIndexInformer, prefix string) {
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, obj any) {
		o, ok := obj.(metav1.Object)
		if !ok || s.gw.status == nil {
			return
		}
		key := o.GetName()
		if prefix != statusClass {
			key = o.GetNamespace() + "/" + key
		}
		if _, want := s.desiredGatewayStatus(prefix + key); want {
			s.gw.status.Add(prefix + key)
		}
	}})
	if err != nil {
		s.log.Error("add gateway status event handler", "err", err)
	}
}

func (s *Source) desiredGatewayStatus(key string) (any, bool) {
	s.gw.statusMu.Lock()
	defer s.gw.statusMu.Unlock()
	v, ok := s.gw.desired[key]
	return v, ok
}

// runGatewayStatusWorker writes the Gateway API's status while this
// replica leads, one key at a time.
func (s *Source) runGatewayStatusWorker(ctx context.Context) {
	q := s.gw.status
	for {
		key, shutdown := q.Get()
		if shutdown {
			return
		}
		if !s.leading.Load() {
			q.Forget(key)
			q.Done(key)
			continue
		}
		if err := s.writeGatewayStatus(ctx, key); err != nil {
			s.log.Warn("writing Gateway API status, retrying", "key", key, "err", err)
			q.AddRateLimited(key)
		} else {
			q.Forget(key)
		}
		q.Done(key)
	}
}

// writeGatewayStatus writes one object's status when it differs from what
// dcm wants (conditions compared without their transition times).
func (s *Source) writeGatewayStatus(ctx context.Context, key string) error {
	want, ok := s.desiredGatewayStatus(key)
	if !ok {
		return nil
	}
	s.syncMu.Lock()
	ls := s.gw.listers
	s.syncMu.Unlock()
	if ls == nil {
		return nil
	}
	kind, rest, _ := strings.Cut(key, "/")
	ns, name, _ := strings.Cut(rest, "/")
	var err error
	switch kind + "/" {
	case statusClass:
		err = s.writeClassStatus(ctx, ls, rest, want.(*gwv1.GatewayClassStatus))
	case statusGateway:
		err = s.writeGatewayObjectStatus(ctx, ls, ns, name, want.(*gwv1.GatewayStatus))
	case statusRoute:
		err = s.writeRouteStatus(ctx, ls, ns, name, want.([]gwv1.RouteParentStatus))
	case statusGRPC:
		err = s.writeGRPCRouteStatus(ctx, ls, ns, name, want.([]gwv1.RouteParentStatus))
	case statusTLSRoute:
		err = s.writeTLSRouteStatus(ctx, ls, ns, name, want.([]gwv1.RouteParentStatus))
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (s *Source) writeClassStatus(ctx context.Context, ls *gwListers, name string, want *gwv1.GatewayClassStatus) error {
	c, err := ls.classes.Get(name)
	if err != nil {
		return err
	}
	next := want.DeepCopy()
	next.Conditions = s.keepTransitions(c.Status.Conditions, next.Conditions)
	if reflect.DeepEqual(c.Status, *next) {
		return nil
	}
	c = c.DeepCopy()
	c.Status = *next
	if _, err := s.gw.opts.Client.GatewayV1().GatewayClasses().UpdateStatus(ctx, c, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update status of GatewayClass %s: %w", name, err)
	}
	s.statusWrites.Add(1)
	return nil
}

func (s *Source) writeGatewayObjectStatus(ctx context.Context, ls *gwListers, ns, name string, want *gwv1.GatewayStatus) error {
	g, err := gatewayByName(ls, ns, name)
	if err != nil {
		return err
	}
	next := want.DeepCopy()
	next.Conditions = s.keepTransitions(g.Status.Conditions, next.Conditions)
	for i := range next.Listeners {
		var old []metav1.Condition
		for _, l := range g.Status.Listeners {
			if l.Name == next.Listeners[i].Name {
				old = l.Conditions
			}
		}
		next.Listeners[i].Conditions = s.keepTransitions(old, next.Listeners[i].Conditions)
	}
	if reflect.DeepEqual(g.Status, *next) {
		return nil
	}
	g = g.DeepCopy()
	g.Status = *next
	if _, err := s.gw.opts.Client.GatewayV1().Gateways(ns).UpdateStatus(ctx, g, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update status of Gateway %s/%s: %w", ns, name, err)
	}
	s.statusWrites.Add(1)
	return nil
}

// writeRouteStatus replaces dcm's entries in an HTTPRoute's
// status.parents and leaves other controllers' alone.
func (s *Source) writeRouteStatus(ctx context.Context, ls *gwListers, ns, name string, want []gwv1.RouteParentStatus) error {
	r, err := routeByName(ls, ns, name)
	if err != nil {
		return err
	}
	parents, same := s.routeParents(r.Status.Parents, want)
	if same {
		s.dropRouteTombstone(statusRoute+ns+"/"+name, want)
		return nil
	}
	r = r.DeepCopy()
	r.Status.Parents = parents
	if _, err := s.gw.opts.Client.GatewayV1().HTTPRoutes(ns).UpdateStatus(ctx, r, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update status of HTTPRoute %s/%s: %w", ns, name, err)
	}
	s.statusWrites.Add(1)
	s.dropRouteTombstone(statusRoute+ns+"/"+name, want)
	return nil
}

// routeParents is a route's status.parents with dcm's entries replaced by
// want (transition times kept) and other controllers' left alone; same:
// nothing to write.
func (s *Source) routeParents(have, want []gwv1.RouteParentStatus) (parents []gwv1.RouteParentStatus, same bool) {
	ctrl := gwv1.GatewayController(s.opts.GatewayControllerName)
	for _, p := range have {
		if p.ControllerName != ctrl {
			parents = append(parents, p)
		}
	}
	for _, w := range want {
		w = *w.DeepCopy()
		var old []metav1.Condition
		for _, p := range have {
			if p.ControllerName == ctrl && reflect.DeepEqual(p.ParentRef, w.ParentRef) {
				old = p.Conditions
			}
		}
		w.Conditions = s.keepTransitions(old, w.Conditions)
		parents = append(parents, w)
	}
	return parents, reflect.DeepEqual(have, parents) || len(have) == 0 && len(parents) == 0
}

// dropRouteTombstone forgets the nil entry of an HTTPRoute whose dcm
// entries are gone, unless a sync wanted some again meanwhile.
func (s *Source) dropRouteTombstone(key string, wrote []gwv1.RouteParentStatus) {
	if wrote != nil {
		return
	}
	s.gw.statusMu.Lock()
	defer s.gw.statusMu.Unlock()
	if v, ok := s.gw.desired[key]; ok && v.([]gwv1.RouteParentStatus) == nil {
		delete(s.gw.desired, key)
	}
}

// keepTransitions gives each wanted condition the transition time of the
// existing one of its type when its status did not change, else now.
func (s *Source) keepTransitions(old, want []metav1.Condition) []metav1.Condition {
	now := metav1.NewTime(s.now().UTC().Truncate(1e9))
	out := make([]metav1.Condition, len(want))
	for i, c := range want {
		c.LastTransitionTime = now
		for _, o := range old {
			if o.Type == c.Type && o.Status == c.Status && !o.LastTransitionTime.IsZero() {
				c.LastTransitionTime = o.LastTransitionTime
			}
		}
		out[i] = c
	}
	return out
}

func gatewayByName(ls *gwListers, ns, name string) (*gwv1.Gateway, error) {
	for _, l := range ls.gateways {
		g, err := l.Gateways(ns).Get(name)
		if err == nil || !apierrors.IsNotFound(err) {
			return g, err
		}
	}
	return nil, apierrors.NewNotFound(gwv1.Resource("gateways"), name)
}

func routeByName(ls *gwListers, ns, name string) (*gwv1.HTTPRoute, error) {
	for _, l := range ls.routes {
		r, err := l.HTTPRoutes(ns).Get(name)
		if err == nil || !apierrors.IsNotFound(err) {
			return r, err
		}
	}
	return nil, apierrors.NewNotFound(gwv1.Resource("httproutes"), name)
}
