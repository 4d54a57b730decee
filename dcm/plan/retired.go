package plan

import (
	"slices"
	"strings"

	"github.com/dcm-router/dcm/dcm"
)

// HasEndpoint reports whether Kubernetes still has the endpoint name in b
// (b's endpoints are sorted by name).
func HasEndpoint(b *dcm.DesiredBackend, name string) bool {
	_, ok := slices.BinarySearchFunc(b.Endpoints, name, func(e dcm.Endpoint, n string) int { return strings.Compare(e.Name, n) })
	return ok
}

// retired says whether s stands for an endpoint Kubernetes no longer has;
// db and ok are the desired backend of s's backend, as Desired.Backend
// returns them.
func retired(s dcm.Server, db *dcm.DesiredBackend, ok bool) bool {
	return s.Endpoint != "" && (!ok || !HasEndpoint(db, s.Endpoint))
}

// MarkRetired flags, for clients, the servers whose endpoint Kubernetes no
// longer has, and those whose endpoint is terminating: with it a snapshot
// says what Kubernetes asks, so the what-if planner can start from a
// snapshot alone (a terminating server that is ready because its service
// has no other, dcm.ServeTerminating, drains once one is). Backends are
// copied only when a flag changes.
func MarkRetired(backends []*dcm.Backend, d dcm.Desired) []*dcm.Backend {
	out := backends
	copied := false
	for i, b := range backends {
		db, ok := d.Backend(b.Name)
		var servers []dcm.Server
		for k := range b.Servers {
			s := &b.Servers[k]
			// retired and terminating, with one search: every applied
			// sync marks the backends it touched (a resync: all).
			found, term := false, false
			if ok && s.Endpoint != "" {
				j, f := slices.BinarySearchFunc(db.Endpoints, s.Endpoint, func(e dcm.Endpoint, n string) int { return strings.Compare(e.Name, n) })
				found, term = f, f && db.Endpoints[j].Terminating
			}
			gone := s.Endpoint != "" && !found
			if gone == s.Retired && term == s.Terminating {
				continue
			}
			if servers == nil {
				servers = slices.Clone(b.Servers)
			}
			servers[k].Retired, servers[k].Terminating = gone, term
		}
		if servers == nil {
			continue
		}
		if !copied {
			out, copied = slices.Clone(backends), true
		}
		nb := *b // a copy: backends are shared
		nb.Servers = servers
		out[i] = &nb
	}
	return out
}

// WaitingBackends lists (by HAProxy name) the backends of st with a retired
// server (its endpoint is gone from d, it is in maint) that HAProxy has not
// yet reported idle: the planner deletes it only once a read-back does, so
// the engine reads them back often for del server to follow the last
// request soon.
func WaitingBackends(st dcm.State, d dcm.Desired) []string {
	var names []string
	for _, b := range st.Backends {
		if Waiting(b, d) {
			names = append(names, b.ProxyName())
		}
	}
	return names
}

// Waiting reports whether b has a retired server (its endpoint gone from
// d, in maint) that HAProxy has not yet reported idle.
//
// The engine asks it of every backend a sync changed (a full resync: all
// of them), most of whose servers are not in maint: the server's own
// fields are read first, and the desired backend is looked up for the
// first server they leave in question only.
func Waiting(b *dcm.Backend, d dcm.Desired) bool {
	var db *dcm.DesiredBackend
	looked, desired := false, false
	for i := range b.Servers {
		s := &b.Servers[i]
		if s.State != dcm.StateMaint || s.Deletable() {
			continue
		}
		if !looked {
			db, desired = d.Backend(b.Name)
			looked = true
		}
		if retired(*s, db, desired) {
			return true
		}
	}
	return false
}
