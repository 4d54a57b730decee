package plan

import (
	"slices"
	"strings"

	"github.com/dcm-router/dcm/dcm"
)

// KeepBusy is where dcm's rule for a del server HAProxy refused lives (it
// refuses while a connection is still attached: a request that arrived
// between the read-back that found the server idle and the command). The
// driver only recognises the refusal and sends nothing the plan ordered
// after the refused batch (haproxy.BusyError); the engine applies what
// KeepBusy returns, with no reload.
//
// It puts back into next the servers whose del server HAProxy refused
// ("<proxy>/<server>"), as they were in actual but in maint and not yet
// observed idle, and drops their del ops: they are deleted once a later
// read-back finds them idle. Of the ops the driver did not send (unsent),
// the ca-del ops of a CA a kept server still uses are dropped too (planned
// again with its last server's deletion), since the server may come back
// into use and needs the file; the others are returned to send. It
// reports false when a server's backend is not in next any more (its
// spare went back to the pool): that state cannot hold the server, and a
// reload converges.
func KeepBusy(actual dcm.State, ops []dcm.Op, next dcm.State, servers []string, unsent []dcm.Op) (_ []dcm.Op, _ dcm.State, send []dcm.Op, ok bool) {
	next.Backends = slices.Clone(next.Backends)
	kept := map[[2]string]bool{}
	for _, ref := range servers {
		proxy, name, _ := strings.Cut(ref, "/")
		ai := slices.IndexFunc(actual.Backends, func(b *dcm.Backend) bool { return b.ProxyName() == proxy })
		if ai < 0 {
			return nil, dcm.State{}, nil, false
		}
		ab := actual.Backends[ai]
		si := slices.IndexFunc(ab.Servers, func(s dcm.Server) bool { return s.Name == name })
		ni := slices.IndexFunc(next.Backends, func(b *dcm.Backend) bool { return b.Name == ab.Name && b.ProxyName() == proxy })
		if si < 0 || ni < 0 {
			return nil, dcm.State{}, nil, false
		}
		srv := ab.Servers[si]
		srv.State, srv.Unobserved = dcm.StateMaint, true
		pos, found := slices.BinarySearchFunc(next.Backends[ni].Servers, name, func(s dcm.Server, n string) int { return strings.Compare(s.Name, n) })
		if !found {
			nb := *next.Backends[ni] // a copy: next shares its backends
			nb.Servers = slices.Insert(slices.Clone(nb.Servers), pos, srv)
			next.Backends[ni] = &nb
		}
		kept[[2]string{ab.Name, name}] = true
	}
	used := map[string]bool{}
	for _, c := range dcm.CAsOf(next.Backends) {
		used[c.Version] = true
	}
	held := map[string]bool{} // unsent ca-del ops whose CA a kept server uses
	for _, o := range unsent {
		if o.Kind == dcm.OpCADel && o.Upstream != nil && used[o.Upstream.Version] {
			held[o.Upstream.Version] = true
		} else {
			send = append(send, o)
		}
	}
	ops = slices.DeleteFunc(slices.Clone(ops), func(o dcm.Op) bool {
		return o.Kind == dcm.OpDelServer && kept[[2]string{o.Backend, o.Server}] ||
			o.Kind == dcm.OpCADel && o.Upstream != nil && held[o.Upstream.Version]
	})
	return ops, next, send, true
}
