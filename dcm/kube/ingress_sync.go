package kube

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/dcm-router/dcm/dcm"
)

// identity is something only one Ingress may have served at a time: a
// host/path/pathType, or a backend name.
type identity struct {
	host     string
	path     string
	pathType dcm.PathType
	backend  string
	// owner marks a host that one namespace owns: every object with a
	// route on it is linked to the others, none excludes another by it.
	owner bool
	// domain (with owner) marks the domain of a host when wildcard routes
	// are on: it links every object under the domain, so that
	// domainOwners can see who blocks whose wildcard.
	domain bool
}

func (id identity) String() string {
	if id.domain {
		return fmt.Sprintf("domain %q", id.host)
	}
	if id.owner {
		return fmt.Sprintf("host %q", id.host)
	}
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
	// version is the resourceVersion routes were converted from: the
	// object's own, or that of the version kept when an update is refused.
	version string
	uid     string // a new object of the same name keeps nothing
	// refused is set when an update was refused and routes are those of
	// the last version accepted (see keepServing).
	refused *dcm.Rejection
}

// servedRoute is a route in the desired state and the Ingress it came from.
type servedRoute struct {
	// route is one of its ingressState's routes, which are never written
	// in place: at 10,000 routes a copy here was 4 MB more. Workload is
	// unset: it comes from the Service.
	route   *dcm.Route
	ingress string
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
		case MatchesClass(ing, s.opts.IngressClass) && s.inShard(ns, ing.Labels):
			st = s.convertIngress(ing)
		}
	}
	s.settle(t, key, ref, st)
	return s.syncOwnedRoutes(t, ns, name)
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
			st = keepServing(old, st)
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
	st := &ingressState{key: ing.Namespace + "/" + ing.Name, ref: ref, created: ing.CreationTimestamp.Time, version: ing.ResourceVersion, uid: string(ing.UID)}
	routes, err := IngressRoutes(ing)
	if err == nil && !s.opts.AllowWildcardRoutes {
		err = refuseWildcards(routes)
	}
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
	st.ids = s.routeIDs(routes)
	return st
}

// routeIDs are what routes claim: their host/paths and backend names, and
// their hosts when namespaces own hosts.
func (s *Source) routeIDs(routes []dcm.Route) []identity {
	var ids []identity
	for _, r := range routes {
		ids = append(ids,
			identity{host: r.Host, path: r.Path, pathType: r.PathType},
			identity{backend: r.BackendName()})
		if r.Host != "" && !s.opts.AllowCrossNamespaceHosts {
			ids = append(ids, identity{host: r.Host, owner: true})
		}
		if d, ok := s.domainOf(r); ok {
			ids = append(ids, identity{host: d, domain: true, owner: true})
		}
	}
	return ids
}

// release drops the claims of an Ingress and returns the other Ingresses
// that claimed the same things: they may win now.
func (s *Source) release(st *ingressState) []string {
	var others []string
	for _, id := range st.ids {
		set := s.claims[id]
		if set == nil {
			continue
		}
		set.remove(st.key)
		if set.len() == 0 {
			delete(s.claims, id)
		}
		for k := range set.all() {
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
			set = &nameSet{}
			s.claims[id] = set
		}
		for k := range set.all() {
			others = append(others, k)
		}
		set.add(st.key)
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
			for other := range s.claims[id].all() {
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
// or its host belongs to another namespace (hostClaimed), in which case
// the whole Ingress or Route is rejected — OpenShift's router rules,
// applied to Ingresses and Routes alike. The answer depends only on
// the objects, never on event order.
func (s *Source) resolve(t *txn, comp []*ingressState, changed string) {
	slices.SortFunc(comp, func(a, b *ingressState) int {
		return cmp.Or(a.created.Compare(b.created), strings.Compare(a.ref.Namespace, b.ref.Namespace),
			strings.Compare(a.ref.Name, b.ref.Name), strings.Compare(a.ref.Kind, b.ref.Kind))
	})
	taken := map[identity]*ingressState{}
	domains := domainOwners{}
	for _, st := range comp {
		if st.invalid != nil {
			t.reject(*st.invalid)
			s.serve(t, st, nil)
			continue
		}
		conflict := hostClaimed(st, taken)
		if conflict == nil {
			conflict = domains.claimed(st)
		}
		if conflict == nil {
			conflict = claimConflict(st, taken)
		}
		if conflict != nil {
			t.reject(*conflict)
			s.serve(t, st, nil)
			continue
		}
		for _, id := range st.ids {
			if taken[id] == nil {
				taken[id] = st
			}
		}
		domains.take(st)
		if st.refused != nil {
			t.reject(*st.refused)
		} else {
			t.accept(st.ref)
		}
		// An Ingress that kept its routes and its place needs no work.
		if st.key == changed || len(st.served) != len(st.routes) {
			s.serve(t, st, st.routes)
		}
	}
}

// claimConflict refuses st when an older object in taken serves one of
// its host/paths or backend names.
func claimConflict(st *ingressState, taken map[identity]*ingressState) *dcm.Rejection {
	for _, id := range st.ids {
		if owner, ok := taken[id]; ok && !id.owner {
			return &dcm.Rejection{Object: st.ref, Reason: dcm.RejectConflict,
				Message: fmt.Sprintf("%s is already served by %s %s/%s, which is older", id, owner.ref.Kind, owner.ref.Namespace, owner.ref.Name)}
		}
	}
	return nil
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
	for i := range routes {
		r := &routes[i]
		name := r.BackendName()
		s.unroute(t, name)
		s.routes[name] = servedRoute{route: r, ingress: st.key}
		for _, ref := range r.Services {
			addName(s.byService, serviceNamespace(*r, ref)+"/"+ref.Name, name)
		}
		for _, sec := range routeSecrets(*r) {
			addName(s.bySecret, sec, name)
		}
		b := s.backendFor(t, *r)
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
		svc := serviceNamespace(*old.route, ref) + "/" + ref.Name
		if set := s.byService[svc]; set != nil {
			set.remove(name)
		}
		t.services[svc] = struct{}{}
	}
	for _, sec := range routeSecrets(*old.route) {
		if set := s.bySecret[sec]; set != nil {
			set.remove(name)
		}
		t.secrets[sec] = struct{}{}
	}
}

// addName adds name to the set of key in sets.
func addName(sets map[string]*nameSet, key, name string) {
	set := sets[key]
	if set == nil {
		set = &nameSet{}
		sets[key] = set
	}
	set.add(name)
}

// forgetUnused drops what the sync left unused among the Services and
// Secrets it touched (t.services, t.secrets): their indexes, their
// verdicts and, for a Secret, its PEM.
func (s *Source) forgetUnused(t *txn) {
	// Services no route uses any more: their slices are not dcm's concern.
	for svc := range t.services {
		if s.byService[svc].len() == 0 {
			delete(s.byService, svc)
			for ref := range s.sliceRejects[svc] {
				t.accept(ref)
			}
			delete(s.sliceRejects, svc)
		}
	}
	// Secrets no route uses any more: forget their keys and verdicts.
	for sec := range t.secrets {
		if s.bySecret[sec].len() == 0 && !s.isDefaultCert(sec) {
			delete(s.bySecret, sec)
			ns, name, _ := strings.Cut(sec, "/")
			t.accept(dcm.ObjectRef{Kind: KindSecret, Namespace: ns, Name: name})
			s.pems.forget(sec, CASecretPrefix+sec)
		}
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
