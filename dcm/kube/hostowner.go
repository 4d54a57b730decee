package kube

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/dcm-router/dcm/dcm"
)

// hostClaimed refuses st when one of its hosts belongs to another
// namespace: that of the oldest object served on it, which resolve has
// put in taken under the host's owner identity. Namespace B cannot put
// /admin under namespace A's host; B's objects take over once A's are
// gone. OpenShift's router does the same (HostAlreadyClaimed). Without
// owner identities (--allow-cross-namespace-hosts) nothing is refused.
// Domains are domainOwners'.
func hostClaimed(st *ingressState, taken map[identity]*ingressState) *dcm.Rejection {
	for _, id := range st.ids {
		owner, ok := taken[id]
		if !id.owner || id.domain || !ok || owner.ref.Namespace == st.ref.Namespace {
			continue
		}
		return &dcm.Rejection{Object: st.ref, Reason: dcm.RejectHostClaimed,
			Message: fmt.Sprintf("%s belongs to namespace %s, whose %s %s/%s is older", id, owner.ref.Namespace,
				owner.ref.Kind, owner.ref.Namespace, owner.ref.Name)}
	}
	return nil
}

// domainOf is the domain a route's host lies in, when wildcard routes are
// on and namespaces own hosts: example.com for www.example.com and for
// *.example.com. Routes under one domain are linked through it.
func (s *Source) domainOf(r dcm.Route) (string, bool) {
	if !s.opts.AllowWildcardRoutes || s.opts.AllowCrossNamespaceHosts || r.Host == "" {
		return "", false
	}
	_, d, ok := strings.Cut(r.Host, ".")
	return d, ok
}

// domainOwners is who holds each domain within one resolve, oldest
// first: the first wildcard route served on it, and the first route of
// each namespace with a host under it. It follows OpenShift's host
// admission: a wildcard route claims its whole domain for its namespace,
// so a route of another namespace cannot take a host under it; and a
// route with a host under a domain blocks the wildcard of another
// namespace on that domain. Exact hosts of several namespaces under one
// domain do not block each other.
type domainOwners map[string]*domainOwner

type domainOwner struct {
	wild    *ingressState
	members map[string]*ingressState // namespace → its oldest route's object
}

// domainsOf are the domains st's routes lie in (their domain identities)
// and whether st has a wildcard route on each.
func domainsOf(st *ingressState) map[string]bool {
	out := map[string]bool{}
	for _, id := range st.ids {
		if id.domain {
			out[id.host] = false
		}
	}
	for _, r := range st.routes {
		if d := strings.TrimPrefix(r.Host, dcm.WildcardPrefix); r.Wildcard() {
			if _, ok := out[d]; ok {
				out[d] = true
			}
		}
	}
	return out
}

// claimed refuses st when another namespace holds one of its domains.
func (d domainOwners) claimed(st *ingressState) *dcm.Rejection {
	ns := st.ref.Namespace
	doms := domainsOf(st)
	for _, domain := range slices.Sorted(maps.Keys(doms)) {
		o, wild := d[domain], doms[domain]
		if o == nil {
			continue
		}
		if o.wild != nil && o.wild.ref.Namespace != ns {
			return domainClaimed(st, o.wild, "has host *."+domain+", blocking routes under it")
		}
		if !wild {
			continue
		}
		// The namespaces in order, so the message is the same every time.
		for _, other := range slices.Sorted(maps.Keys(o.members)) {
			if other != ns {
				return domainClaimed(st, o.members[other], "has a host under "+domain+", blocking *."+domain)
			}
		}
	}
	return nil
}

func domainClaimed(st, by *ingressState, what string) *dcm.Rejection {
	return &dcm.Rejection{Object: st.ref, Reason: dcm.RejectHostClaimed,
		Message: fmt.Sprintf("%s %s/%s in namespace %s, which is older, %s", by.ref.Kind, by.ref.Namespace, by.ref.Name,
			by.ref.Namespace, what)}
}

// take records st, served, as a holder of its domains.
func (d domainOwners) take(st *ingressState) {
	for domain, wild := range domainsOf(st) {
		o := d[domain]
		if o == nil {
			o = &domainOwner{members: map[string]*ingressState{}}
			d[domain] = o
		}
		if wild && o.wild == nil {
			o.wild = st
		}
		if o.members[st.ref.Namespace] == nil {
			o.members[st.ref.Namespace] = st
		}
	}
}
