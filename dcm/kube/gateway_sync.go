package kube

import (
	"maps"
	"reflect"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dcm-router/dcm/dcm"
)

// gatewayOwner is the owner of Gateway routes in Source.routes: no
// Ingress or Route key has a '!'.
const gatewayOwner = "gateway!"

// Prefixes of gatewayWatch.refs.
const (
	gwRefService = "service/"
	gwRefSecret  = "secret/"
)

// syncGateways recomputes the whole Gateway API: routes, rejections and
// the status to write. syncMu held.
func (s *Source) syncGateways(t *txn) error {
	if s.gw.listers == nil {
		return nil
	}
	in, err := s.gatewayObjects()
	if err != nil {
		return err
	}
	in.service = func(ns, name string) bool {
		ls, ok := s.lister(ns)
		if !ok {
			return false
		}
		_, err := ls.services.Services(ns).Get(name)
		return err == nil
	}
	in.cert = s.listenerCertError
	out := translateGateways(in)
	s.serveGateways(t, out.served)
	s.gw.addrs = out.addrs
	s.gw.refs = map[string]bool{}
	for k := range out.services {
		s.gw.refs[gwRefService+k] = s.serviceExists(k)
	}
	for k := range out.secrets {
		s.gw.refs[gwRefSecret+k] = true
	}
	for k := range s.gw.certs {
		if !out.secrets[k] {
			delete(s.gw.certs, k)
		}
	}
	rejected := map[dcm.ObjectRef]bool{}
	for _, r := range out.rejected {
		t.reject(r)
		rejected[r.Object] = true
	}
	for ref := range s.gw.rejected {
		if !rejected[ref] {
			t.accept(ref)
		}
	}
	s.gw.rejected, s.gw.uids = rejected, out.uids
	s.setGatewayStatus(out)
	if v, ok := s.reporter.(GatewayViewer); ok && !reflect.DeepEqual(s.gw.view, out.view) {
		s.gw.view = out.view
		v.GatewayView(*out.view)
	}
	return nil
}

// serveGateways makes routes the Gateway routes of the desired state.
func (s *Source) serveGateways(t *txn, routes []dcm.Route) {
	next := make(map[string]*dcm.Route, len(routes))
	for i := range routes {
		next[routes[i].BackendName()] = &routes[i]
	}
	for name := range s.gw.served {
		if next[name] == nil {
			s.unroute(t, name)
			t.backends[name] = nil
		}
	}
	for name, r := range next {
		if old := s.gw.served[name]; old != nil && reflect.DeepEqual(*old, *r) {
			next[name] = old
			continue
		}
		s.unroute(t, name)
		s.routes[name] = servedRoute{route: r, ingress: gatewayOwner}
		for _, ref := range r.Services {
			addName(s.byService, serviceNamespace(*r, ref)+"/"+ref.Name, name)
		}
		for _, sec := range routeSecrets(*r) {
			addName(s.bySecret, sec, name)
		}
		b := s.backendFor(t, *r)
		t.backends[name] = &b
	}
	s.gw.served = next
}

// serviceExists reports whether the Service ns/name is in the caches.
func (s *Source) serviceExists(key string) bool {
	ns, name, _ := strings.Cut(key, "/")
	ls, ok := s.lister(ns)
	if !ok {
		return false
	}
	_, err := ls.services.Services(ns).Get(name)
	return err == nil
}

// listenerCertError checks a Secret as a listener's certificate, once per
// version of it.
func (s *Source) listenerCertError(ns, name string) error {
	key := ns + "/" + name
	ls, ok := s.lister(ns)
	if !ok || ls.secrets == nil {
		return errNotWatched
	}
	sec, err := ls.secrets.Secrets(ns).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		return errNoTLSSecret
	case err != nil:
		return err
	}
	if c, ok := s.gw.certs[key]; ok && c.version == sec.ResourceVersion {
		return c.err
	}
	_, _, err = SecretCert(sec)
	s.gw.certs[key] = certCheck{version: sec.ResourceVersion, err: err}
	return err
}

type gwError string

func (e gwError) Error() string { return string(e) }

const (
	errNotWatched  gwError = "not in a namespace dcm watches"
	errNoTLSSecret gwError = "no such kubernetes.io/tls Secret"
)

// gatewayTouched queues the Gateway API again when a Service or Secret it
// refers to came or went (or the Secret changed): ResolvedRefs and
// unresolved rules follow. syncMu held.
func (s *Source) gatewayTouched(prefix, ns, name string) {
	if s.gw.listers == nil {
		return
	}
	key := ns + "/" + name
	switch prefix {
	case prefixService:
		if had, ok := s.gw.refs[gwRefService+key]; ok && had != s.serviceExists(key) {
			s.queue.Add(gatewayKey)
		}
	case prefixSecret:
		if s.gw.refs[gwRefSecret+key] {
			s.queue.Add(gatewayKey)
		}
	}
}

// gatewayUID is the UID of a Gateway API object dcm reported on.
func (s *Source) gatewayUID(ref dcm.ObjectRef) (types.UID, bool) {
	uid, ok := s.gw.uids[ref]
	return uid, ok
}

// gatewayStatusKeys lists the status keys of the last sync.
func (s *Source) gatewayStatusKeys() []string {
	s.gw.statusMu.Lock()
	defer s.gw.statusMu.Unlock()
	return slices.Sorted(maps.Keys(s.gw.desired))
}

// recordGatewayEvent writes the Event of a report about a Gateway or an
// HTTPRoute, as recordEvent does for Ingresses and Routes.
func (s *Source) recordGatewayEvent(r report, uid types.UID) {
	regarding, eventType, reason, note := eventOf(r, &ingressState{uid: string(uid)})
	s.opts.Events.recorder.Eventf(regarding, nil, eventType, reason, eventAction, "%s", note)
}
