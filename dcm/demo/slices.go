package demo

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const (
	// managedBy is the value the real endpointslice controller puts in
	// endpointslice.kubernetes.io/managed-by; consumers may filter on it.
	managedBy = "endpointslice-controller.k8s.io"
	// maxEndpointsPerSlice is the real controller's default.
	maxEndpointsPerSlice = 100
)

// wantEndpoint is one endpoint a Service should have, with the ports its pod
// resolves the Service's target ports to (slices group endpoints by ports).
type wantEndpoint struct {
	ports []discoveryv1.EndpointPort
	ep    discoveryv1.Endpoint
}

// slicePlan is the writes that bring a Service's slices to the wanted state.
type slicePlan struct {
	create []*discoveryv1.EndpointSlice
	update []*discoveryv1.EndpointSlice
	delete []*discoveryv1.EndpointSlice
}

func (p slicePlan) empty() bool { return len(p.create)+len(p.update)+len(p.delete) == 0 }

// syncService writes the EndpointSlices of one Service from the pods it
// selects, the way the endpointslice controller does.
func (s *simulator) syncService(ctx context.Context, ns, name string) error {
	slicesClient := s.client.DiscoveryV1().EndpointSlices(ns)
	sel := labels.Set{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: managedBy}
	// Listed from the API, not an informer: the simulator is the only writer
	// and must see its own last write, or it would create a slice twice.
	list, err := slicesClient.List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return fmt.Errorf("list endpointslices of %s/%s: %w", ns, name, err)
	}
	existing := make([]*discoveryv1.EndpointSlice, len(list.Items))
	for i := range list.Items {
		existing[i] = &list.Items[i]
	}

	var plan slicePlan
	svc, err := s.client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case isNotFound(err):
		// The garbage collector would delete them through their owner reference.
		plan.delete = existing
	case err != nil:
		return fmt.Errorf("get service %s/%s: %w", ns, name, err)
	case len(svc.Spec.Selector) == 0 || svc.Spec.Type == corev1.ServiceTypeExternalName:
		// Slices of selector-less Services are their owner's business.
		plan.delete = existing
	default:
		plan = planSlices(svc, s.serviceEndpoints(svc), existing, maxEndpointsPerSlice)
	}
	if plan.empty() {
		return nil
	}
	// Creates and updates before deletes, so that no endpoint is missing
	// from every slice while it moves.
	for _, es := range plan.create {
		if _, err := slicesClient.Create(ctx, es, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create endpointslice for %s/%s: %w", ns, name, err)
		}
	}
	for _, es := range plan.update {
		if _, err := slicesClient.Update(ctx, es, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update endpointslice %s/%s: %w", ns, es.Name, err)
		}
	}
	for _, es := range plan.delete {
		if err := slicesClient.Delete(ctx, es.Name, metav1.DeleteOptions{}); err != nil && !isNotFound(err) {
			return fmt.Errorf("delete endpointslice %s/%s: %w", ns, es.Name, err)
		}
	}
	s.log.Debug("endpointslices written", "service", ns+"/"+name,
		"created", len(plan.create), "updated", len(plan.update), "deleted", len(plan.delete))
	return nil
}

// serviceEndpoints lists the endpoints of the pods a Service selects that have
// an address: ready ones, not yet ready ones and terminating ones, sorted by
// pod name.
func (s *simulator) serviceEndpoints(svc *corev1.Service) []wantEndpoint {
	selector := labels.SelectorFromSet(svc.Spec.Selector)
	var out []wantEndpoint
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.pods {
		if p.namespace != svc.Namespace || !p.ip.IsValid() || !selector.Matches(labels.Set(p.labels)) {
			continue
		}
		out = append(out, wantEndpoint{
			ports: endpointPorts(svc, p.object),
			ep: discoveryv1.Endpoint{
				Addresses:  []string{p.ip.String()},
				Conditions: endpointConditions(svc, p.ready, p.terminating),
				TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: p.namespace, Name: p.name, UID: p.uid},
				NodeName:   ptrTo(nodeName),
			},
		})
	}
	slices.SortFunc(out, func(a, b wantEndpoint) int { return compareEndpoints(a.ep, b.ep) })
	return out
}

// endpointConditions are the conditions the endpointslice controller
// writes for a pod: serving is its Ready condition, which stays true while
// a terminating pod still serves; ready is serving and not terminating,
// unless the Service publishes not-ready addresses. Consumers such as
// kube-proxy (and dcm) serve the serving and terminating ones while no
// endpoint is ready.
func endpointConditions(svc *corev1.Service, podReady, terminating bool) discoveryv1.EndpointConditions {
	return discoveryv1.EndpointConditions{
		Ready:       ptrTo(svc.Spec.PublishNotReadyAddresses || podReady && !terminating),
		Serving:     ptrTo(podReady),
		Terminating: ptrTo(terminating),
	}
}

// endpointPorts resolves each Service port's target port against the pod's
// containers; a named port the pod does not declare leaves that port out, as
// in the real controller.
func endpointPorts(svc *corev1.Service, pod *corev1.Pod) []discoveryv1.EndpointPort {
	var out []discoveryv1.EndpointPort
	for _, sp := range svc.Spec.Ports {
		proto := cmp.Or(sp.Protocol, corev1.ProtocolTCP)
		var port int32
		switch {
		case sp.TargetPort.Type == intstr.String:
			for _, c := range pod.Spec.Containers {
				for _, cp := range c.Ports {
					if cp.Name == sp.TargetPort.StrVal && cmp.Or(cp.Protocol, corev1.ProtocolTCP) == proto {
						port = cp.ContainerPort
					}
				}
			}
		case sp.TargetPort.IntVal != 0:
			port = sp.TargetPort.IntVal
		default:
			port = sp.Port
		}
		if port == 0 {
			continue
		}
		out = append(out, discoveryv1.EndpointPort{
			Name: ptrTo(sp.Name), Port: ptrTo(port), Protocol: ptrTo(proto), AppProtocol: sp.AppProtocol,
		})
	}
	return out
}

func endpointKey(ep discoveryv1.Endpoint) string {
	if ep.TargetRef != nil {
		return ep.TargetRef.Namespace + "/" + ep.TargetRef.Name
	}
	if len(ep.Addresses) > 0 {
		return ep.Addresses[0]
	}
	return ""
}

func compareEndpoints(a, b discoveryv1.Endpoint) int {
	return cmp.Or(cmp.Compare(endpointKey(a), endpointKey(b)),
		cmp.Compare(strings.Join(a.Addresses, ","), strings.Join(b.Addresses, ",")))
}

func portsKey(ports []discoveryv1.EndpointPort) string {
	var b strings.Builder
	for _, p := range ports {
		b.WriteString(deref(p.Name))
		b.WriteByte('/')
		b.WriteString(string(deref(p.Protocol)))
		b.WriteByte('/')
		b.WriteString(strconv.Itoa(int(deref(p.Port))))
		b.WriteByte('/')
		b.WriteString(deref(p.AppProtocol))
		b.WriteByte(',')
	}
	return b.String()
}

func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// sliceLabels are the Service's own labels plus the two that say whose slice
// it is, as the real controller sets them.
func sliceLabels(svc *corev1.Service) map[string]string {
	out := map[string]string{}
	for k, v := range svc.Labels {
		switch k {
		case discoveryv1.LabelServiceName, discoveryv1.LabelManagedBy, corev1.IsHeadlessService:
		default:
			out[k] = v
		}
	}
	out[discoveryv1.LabelServiceName] = svc.Name
	out[discoveryv1.LabelManagedBy] = managedBy
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		out[corev1.IsHeadlessService] = ""
	}
	return out
}

// planSlices decides the writes that turn existing into slices holding
// exactly want, changing as few slices as it can: an endpoint stays in the
// slice it is in, new endpoints fill slices with room before new slices are
// made, an emptied slice is reused before a new one is created, and a Service
// without endpoints keeps one empty placeholder slice. want must be sorted
// (serviceEndpoints sorts it); the plan is then deterministic.
func planSlices(svc *corev1.Service, want []wantEndpoint, existing []*discoveryv1.EndpointSlice, maxPerSlice int) slicePlan {
	groups, groupKeys := groupByPorts(want)
	works, free := keepPlaced(groups, existing, maxPerSlice)
	for _, k := range groupKeys {
		works, free = placeRest(groups[k], works, free, maxPerSlice)
	}
	if len(want) == 0 {
		w := &sliceWork{}
		if len(free) > 0 {
			w.orig, free = free[0].orig, free[1:]
		}
		works = append(works, w)
	}
	return sliceWrites(svc, works, free)
}

// portGroup is the wanted endpoints that share ports, and so slices.
type portGroup struct {
	ports  []discoveryv1.EndpointPort
	eps    []discoveryv1.Endpoint
	byKey  map[string]int
	placed []bool // eps[i] is in a slice already
}

// sliceWork is one slice as it will be: an existing one (orig set) or a new
// one.
type sliceWork struct {
	orig    *discoveryv1.EndpointSlice
	group   *portGroup
	eps     []discoveryv1.Endpoint
	changed bool // its endpoints differ from orig's
}

// groupByPorts groups want by ports, and returns the groups' keys sorted.
func groupByPorts(want []wantEndpoint) (map[string]*portGroup, []string) {
	groups := map[string]*portGroup{}
	for _, w := range want {
		k := portsKey(w.ports)
		g := groups[k]
		if g == nil {
			g = &portGroup{ports: w.ports, byKey: map[string]int{}}
			groups[k] = g
		}
		g.byKey[endpointKey(w.ep)] = len(g.eps)
		g.eps = append(g.eps, w.ep)
		g.placed = append(g.placed, false)
	}
	return groups, slices.Sorted(maps.Keys(groups))
}

// keepPlaced keeps each wanted endpoint in the existing slice it is in (up
// to maxPerSlice a slice), by slice name. The slices left empty are free.
// The others come back changed ones first: new endpoints go to slices that
// are written anyway before they touch an unchanged one, as the real
// controller does.
func keepPlaced(groups map[string]*portGroup, existing []*discoveryv1.EndpointSlice, maxPerSlice int) (works, free []*sliceWork) {
	existing = slices.Clone(existing)
	slices.SortFunc(existing, func(a, b *discoveryv1.EndpointSlice) int { return cmp.Compare(a.Name, b.Name) })
	for _, es := range existing {
		w := &sliceWork{orig: es, group: groups[portsKey(es.Ports)]}
		if w.group != nil {
			for _, ep := range es.Endpoints {
				i, ok := w.group.byKey[endpointKey(ep)]
				if ok && !w.group.placed[i] && len(w.eps) < maxPerSlice {
					w.group.placed[i] = true
					w.eps = append(w.eps, w.group.eps[i])
				}
			}
		}
		if len(w.eps) == 0 {
			free = append(free, w)
			continue
		}
		w.changed = !sameEndpoints(w.eps, es.Endpoints)
		works = append(works, w)
	}
	slices.SortStableFunc(works, func(a, b *sliceWork) int { return boolFirst(a.changed, b.changed) })
	return works, free
}

// placeRest puts g's endpoints not placed yet into its slices with room,
// then into new slices, which take the names of free ones while any are
// left.
func placeRest(g *portGroup, works, free []*sliceWork, maxPerSlice int) ([]*sliceWork, []*sliceWork) {
	var rest []discoveryv1.Endpoint
	for i, ep := range g.eps {
		if !g.placed[i] {
			rest = append(rest, ep)
		}
	}
	for _, w := range works {
		if len(rest) == 0 {
			break
		}
		if w.group != g || len(w.eps) >= maxPerSlice {
			continue
		}
		n := min(maxPerSlice-len(w.eps), len(rest))
		w.eps, rest = append(w.eps, rest[:n]...), rest[n:]
	}
	for len(rest) > 0 {
		n := min(maxPerSlice, len(rest))
		w := &sliceWork{group: g, eps: rest[:n:n]}
		rest = rest[n:]
		if len(free) > 0 {
			w.orig, free = free[0].orig, free[1:]
		}
		works = append(works, w)
	}
	return works, free
}

// sliceWrites renders the slices as they will be and keeps those that differ
// from what exists: creates, updates, and deletes of the free ones left.
func sliceWrites(svc *corev1.Service, works, free []*sliceWork) slicePlan {
	var plan slicePlan
	for _, w := range works {
		es := &discoveryv1.EndpointSlice{}
		if w.orig != nil {
			es = w.orig.DeepCopy()
		} else {
			es.GenerateName = svc.Name + "-"
			es.Namespace = svc.Namespace
		}
		es.Labels = sliceLabels(svc)
		es.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(svc, corev1.SchemeGroupVersion.WithKind("Service"))}
		es.AddressType = discoveryv1.AddressTypeIPv4
		es.Ports = nil
		es.Endpoints = nil
		if w.group != nil {
			for _, p := range w.group.ports {
				es.Ports = append(es.Ports, *p.DeepCopy())
			}
		}
		for _, ep := range w.eps {
			es.Endpoints = append(es.Endpoints, *ep.DeepCopy())
		}
		slices.SortFunc(es.Endpoints, compareEndpoints)
		switch {
		case w.orig == nil:
			plan.create = append(plan.create, es)
		case !sameSlice(w.orig, es):
			plan.update = append(plan.update, es)
		}
	}
	for _, w := range free {
		plan.delete = append(plan.delete, w.orig)
	}
	return plan
}

// sameEndpoints compares two endpoint lists in any order.
func sameEndpoints(a, b []discoveryv1.Endpoint) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.SortFunc(a, compareEndpoints)
	slices.SortFunc(b, compareEndpoints)
	return apiequality.Semantic.DeepEqual(a, b)
}

// sameSlice compares what the controller owns of a slice.
func sameSlice(a, b *discoveryv1.EndpointSlice) bool {
	return a.AddressType == b.AddressType &&
		apiequality.Semantic.DeepEqual(a.Labels, b.Labels) &&
		apiequality.Semantic.DeepEqual(a.OwnerReferences, b.OwnerReferences) &&
		apiequality.Semantic.DeepEqual(a.Ports, b.Ports) &&
		apiequality.Semantic.DeepEqual(a.Endpoints, b.Endpoints)
}
