package plan

import (
	"slices"
	"strconv"
	"strings"

	"github.com/dcm-router/dcm/dcm"
)

// Merge decides what dcm believes HAProxy holds, and so when a retired
// server is proven idle and its del server is planned: a planner rule. It
// lives here, pure, beside the planner that plans from the states it makes
// (the engine calls it with every read-back), so the what-if, which starts
// from those states, plans from the same beliefs.

// Merge takes HAProxy's figures and admin state as the truth. A server
// HAProxy lacks is dropped from the state (the planner adds it back); one dcm
// does not know is kept so the planner retires it. names are the backends
// obs was asked for (nil: all of them); obs and names use HAProxy's names
// (ProxyName), the state dcm's. One of them missing from obs is
// reported, since only a reload can bring a backend back. Without traffic,
// obs carries no sessions figures: the ones dcm had are kept, and a server
// changed since its last traffic observation stays unproven idle.
//
// obs is Merge's to use: the state it returns keeps obs's slices as the
// servers of the backends that changed, written over in place, so a
// caller must not read obs after. A read-back of every server is as large
// as the state: at 10,000 routes, holding both besides the state merged
// into took 23 MB more while the engine read HAProxy back.
func Merge(st dcm.State, obs map[string][]dcm.Server, names []string, traffic bool) (_ dcm.State, drift []string, missing bool) {
	out := dcm.State{Backends: slices.Clone(st.Backends), Pool: st.Pool, DefaultCert: st.DefaultCert, GatewayBinds: st.GatewayBinds}
	merge := func(i int) {
		b := out.Backends[i]
		seen, ok := obs[b.ProxyName()]
		if !ok {
			drift = append(drift, b.Name+": backend missing in HAProxy")
			missing = true
			return
		}
		out.Backends[i] = mergeBackend(b, seen, traffic, &drift)
	}
	if names == nil {
		for i := range out.Backends {
			merge(i)
		}
	} else {
		// A chunk of the periodic pass is 25 backends of 10,000: looked
		// up, not found by a walk of all (which cost most of a chunk).
		for _, i := range indexByProxy(st.Backends, names) {
			merge(i)
		}
	}
	slices.Sort(drift)
	return out, drift, missing
}

// indexByProxy gives the places in backends (sorted by Name) of those
// whose HAProxy name (ProxyName) is one of names, in order, once each.
// A backend on its own HAProxy backend is found by its name; one that
// rides a spare (its Slot) by a walk, made only when a name is left.
func indexByProxy(backends []*dcm.Backend, names []string) []int {
	out := make([]int, 0, len(names))
	var left map[string]bool
	for _, n := range names {
		i, ok := slices.BinarySearchFunc(backends, n, func(b *dcm.Backend, n string) int { return strings.Compare(b.Name, n) })
		if ok && backends[i].Slot == "" {
			out = append(out, i)
			continue
		}
		if left == nil {
			left = map[string]bool{}
		}
		left[n] = true
	}
	if left != nil {
		for i, b := range backends {
			if b.Slot != "" && left[b.Slot] {
				out = append(out, i)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// mergeBackend is b as HAProxy reported its servers (seen, written over in
// place), b itself when nothing changed; what differs is added to drift.
func mergeBackend(b *dcm.Backend, seen []dcm.Server, traffic bool, drift *[]string) *dcm.Backend {
	// b.Servers and seen are both sorted by name, as a rule: the next
	// known server is looked at first, and the used ones are marked.
	var usedBuf [64]bool
	var used []bool
	if len(b.Servers) > len(usedBuf) {
		used = make([]bool, len(b.Servers))
	} else {
		used = usedBuf[:len(b.Servers)]
	}
	next := 0
	servers := seen[:0] // in place: each is read before its place is written
	for _, o := range seen {
		k := knownServer(b.Servers, used, o.Name, next)
		if k < 0 {
			*drift = append(*drift, b.Name+"/"+o.Name+": unknown server")
			o.Origin = dcm.OriginRuntime
			o.Unobserved = !traffic
			servers = append(servers, o)
			continue
		}
		used[k], next = true, k+1
		s := b.Servers[k]
		if s.Addr != o.Addr && o.Addr != "" && s.Addr != "" || s.Port != o.Port && s.Addr != "" || s.Weight != o.Weight || s.State != o.State {
			*drift = append(*drift, b.Name+"/"+s.Name+": dcm has "+s.Addr+":"+strconv.Itoa(s.Port)+" w"+strconv.Itoa(s.Weight)+" "+string(s.State)+
				", HAProxy "+o.Addr+":"+strconv.Itoa(o.Port)+" w"+strconv.Itoa(o.Weight)+" "+string(o.State))
		}
		if (s.Addr != "" || o.Addr != "0.0.0.0") && s.Addr != o.Addr {
			s.Addr = o.Addr // else dcm's string: states share it, HAProxy's is one more copy
		}
		if s.Addr != "" || o.Addr != "0.0.0.0" {
			s.Port = o.Port
		}
		s.Weight, s.State, s.Health = o.Weight, o.State, o.Health
		if traffic {
			s.Sessions, s.Queued, s.UsedConn, s.IdleConn = o.Sessions, o.Queued, o.UsedConn, o.IdleConn
			s.Unobserved = false
		}
		servers = append(servers, s)
	}
	for k, s := range b.Servers {
		if !used[k] {
			*drift = append(*drift, b.Name+"/"+s.Name+": missing in HAProxy")
		}
	}
	dcm.SortServers(servers)
	if slices.Equal(servers, b.Servers) {
		return b // as it was: the state keeps sharing it
	}
	nb := *b // a copy: st shares its backends
	nb.Servers = servers
	return &nb
}

// knownServer is the index in servers of the one named name that is not
// used yet, looked for from next on and then from the start; -1 for none.
func knownServer(servers []dcm.Server, used []bool, name string, next int) int {
	for k := range servers {
		i := (next + k) % len(servers)
		if !used[i] && servers[i].Name == name {
			return i
		}
	}
	return -1
}

// DriftBackends takes the backend names out of Merge's drift lines
// ("backend/server: …" or "backend: …").
func DriftBackends(drift []string) []string {
	out := make([]string, 0, len(drift))
	for _, d := range drift {
		name, _, _ := strings.Cut(d, ": ")
		name, _, _ = strings.Cut(name, "/")
		out = append(out, name)
	}
	return out
}

// HealthChanged lists the backends where a server's admin state or health
// differs between two observations (sessions come and go too often to say).
// Both states are sorted by name and share unchanged backends (Merge
// keeps a backend whose servers HAProxy reported as they were), so a walk
// of both compares the replaced backends only.
func HealthChanged(a, b dcm.State) []string {
	var out []string
	i, j := 0, 0
	for i < len(a.Backends) && j < len(b.Backends) {
		ob, nb := a.Backends[i], b.Backends[j]
		switch {
		case ob == nb: // shared, so unchanged: most of them
			i++
			j++
		case ob.Name < nb.Name:
			i++
		case nb.Name < ob.Name:
			j++
		default:
			if ob != nb && !slices.EqualFunc(ob.Servers, nb.Servers, func(x, y dcm.Server) bool {
				return x.Name == y.Name && x.State == y.State && x.Health == y.Health
			}) {
				out = append(out, nb.Name)
			}
			i++
			j++
		}
	}
	return out
}
