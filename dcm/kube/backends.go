package kube

import (
	"fmt"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/dcm-router/dcm/dcm"
)

func (s *Source) syncService(t *txn, ns, name string) error {
	svc := ns + "/" + name
	t.services[svc] = struct{}{}
	names := s.byService[svc]
	if names.len() == 0 {
		return nil
	}
	v := s.view(t, ns, name)
	if v.err != nil {
		return v.err
	}
	for n := range names.all() {
		b := s.backendFor(t, *s.routes[n].route)
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
	if s.isDefaultCert(key) {
		s.syncDefaultCert(t)
	}
	for n := range s.bySecret[key].all() {
		r := *s.routes[n].route
		b := s.backendFor(t, r)
		t.backends[n] = &b
	}
	return nil
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

	var rejects map[dcm.ObjectRef]dcm.Rejection // made for the first: a resync views 10,000 Services
	v.slices = make([]*discoveryv1.EndpointSlice, 0, len(all))
	for _, sl := range all {
		if err := ValidateEndpointSlice(sl); err != nil {
			ref := dcm.ObjectRef{Kind: KindEndpointSlice, Namespace: sl.Namespace, Name: sl.Name}
			r := dcm.Rejection{Object: ref, Reason: RejectReason(err), Message: RejectMessage(err)}
			if rejects == nil {
				rejects = map[dcm.ObjectRef]dcm.Rejection{}
			}
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
		views[i] = s.view(t, serviceNamespace(r, ref), ref.Name)
	}
	b := backendFor(r, views)
	if r.Upstream != nil && r.Upstream.Version == "" {
		b.Endpoints = []dcm.Endpoint{}
	}
	s.externalCertVerdict(t, r, &b)
	return b.WithProtoNames().WithUpstreamNames()
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
		// servedEndpoints' slice is this backend's own: no copy.
		if served := servedEndpoints(r, 0, views[0]); served != nil {
			eps = served
		}
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
		for _, e := range servedEndpoints(r, i, v) {
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

// serviceNamespace is the namespace of a route's Service: its own, or the
// one a Gateway API backendRef names (allowed by a ReferenceGrant).
func serviceNamespace(r dcm.Route, ref dcm.ServiceRef) string {
	if ref.Namespace != "" {
		return ref.Namespace
	}
	return r.Namespace
}
