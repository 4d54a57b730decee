package kube

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dcm-router/dcm/dcm"
)

func (s *Source) runStatusWorker(ctx context.Context) {
	for {
		key, shutdown := s.rw.status.Get()
		if shutdown {
			return
		}
		if !s.leading.Load() {
			// Another replica writes; winning the Lease queues every
			// Route again (queueAllStatus). A Route that left the cache
			// meanwhile is the leader's to clean.
			s.rw.gone.take(key)
			s.rw.status.Forget(key)
			s.rw.status.Done(key)
			continue
		}
		if err := s.writeStatus(ctx, key); err != nil {
			s.log.Warn("writing route status, retrying", "route", key, "err", err)
			s.rw.status.AddRateLimited(key)
		} else {
			s.rw.status.Forget(key)
		}
		s.rw.status.Done(key)
	}
}

// writeStatus makes dcm's entry of a Route's status.ingress say whether dcm
// serves it — condition Admitted True, or False with the rejection's reason
// and message — leaving other routers' entries alone; a Route outside the
// shard has no entry of dcm's. Nothing is written when the entry already
// says so, so the update event it causes ends here.
func (s *Source) writeStatus(ctx context.Context, key string) error {
	ns, name, _ := strings.Cut(key, "/")
	u, inShard, err := s.routeStatusObject(ns, name)
	switch {
	case err != nil:
		return err
	case u == nil:
		s.contention.forget("route:" + key)
		return nil
	case !inShard:
		return s.dropStatus(ctx, u)
	}
	s.syncMu.Lock()
	keptHost, kept := s.keptHost(routeKey(ns, name))
	s.syncMu.Unlock()
	s.mu.Lock()
	rej, rejected := s.rejections[dcm.ObjectRef{Kind: KindRoute, Namespace: ns, Name: name}]
	s.mu.Unlock()
	cond := map[string]any{"type": "Admitted", "status": "True"}
	host, _, _ := unstructured.NestedString(u.Object, "spec", "host")
	if c, err := RouteFromOpenShift(u, s.rw.opts.Convert); err == nil && !c.Route.Wildcard() {
		// A wildcard Route reports its own host, as OpenShift's router
		// does, not the *.<domain> it serves.
		host = c.Route.Host
	}
	switch {
	case rejected && kept:
		// Still admitted: the last version accepted serves. The reason
		// says an update was refused, the message why and which version.
		host = keptHost
		cond = map[string]any{"type": "Admitted", "status": "True", "reason": ReasonUpdateRefused, "message": rej.Reason + ": " + rej.Message}
	case rejected:
		cond = map[string]any{"type": "Admitted", "status": "False", "reason": rej.Reason, "message": rej.Message}
	}
	entries, _, _ := unstructured.NestedSlice(u.Object, "status", "ingress")
	mine := -1
	for i, e := range entries {
		if m, ok := e.(map[string]any); ok && m["routerName"] == s.routerName() {
			mine = i
		}
	}
	canonical := s.opts.RouterCanonicalHostname
	if mine >= 0 && sameAdmission(entries[mine], host, canonical, cond) {
		return nil
	}
	want := fmt.Sprint(host, "\x00", canonical, "\x00", cond)
	if wait := s.contention.hold("route:"+key, want, u.GetResourceVersion(), s.now()); wait > 0 {
		s.log.Warn("route status contended: another writer keeps changing this router's entry; leaving it alone for a while",
			"route", key, "routerName", s.routerName(), "for", wait)
		s.rw.status.AddAfter(key, wait)
		return nil
	}
	cond["lastTransitionTime"] = s.now().UTC().Format(time.RFC3339)
	entry := map[string]any{"host": host, "routerName": s.routerName(), "conditions": []any{cond}}
	if canonical != "" {
		entry["routerCanonicalHostname"] = canonical
	}
	if mine >= 0 {
		entries[mine] = entry
	} else {
		entries = append(entries, entry)
	}
	u = u.DeepCopy()
	if err := unstructured.SetNestedSlice(u.Object, entries, "status", "ingress"); err != nil {
		return fmt.Errorf("set status: %w", err)
	}
	out, err := s.rw.opts.Client.Resource(RouteGVR).Namespace(ns).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	switch {
	case apierrors.IsNotFound(err):
		s.contention.forget("route:" + key)
		return nil
	case err != nil:
		return fmt.Errorf("update status of route %s: %w", key, err)
	}
	s.statusWrites.Add(1)
	s.contention.wrote("route:"+key, want, out.GetResourceVersion(), s.now())
	return nil
}

// routerName is --router-name: the routerName of dcm's entry in
// status.ingress.
func (s *Source) routerName() string {
	if s.opts.RouterName == "" {
		return DefaultRouterName
	}
	return s.opts.RouterName
}

// sameAdmission compares an entry of status.ingress with what dcm would
// write, ignoring the transition time.
func sameAdmission(entry any, host, canonical string, cond map[string]any) bool {
	m, ok := entry.(map[string]any)
	if !ok || m["host"] != host {
		return false
	}
	if c, _ := m["routerCanonicalHostname"].(string); c != canonical {
		return false
	}
	conds, ok := m["conditions"].([]any)
	if !ok || len(conds) != 1 {
		return false
	}
	c, ok := conds[0].(map[string]any)
	if !ok {
		return false
	}
	for _, k := range []string{"type", "status", "reason", "message"} {
		if fmt.Sprint(c[k]) != fmt.Sprint(cond[k]) {
			return false
		}
	}
	return true
}
