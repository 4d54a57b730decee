package engine

import (
	"slices"

	"github.com/dcm-router/dcm/dcm"
)

// backendsNamed picks backends of st by name (names sorted, as backendsOf
// gives them), marked for clients as markRetired does.
func backendsNamed(st dcm.State, d dcm.Desired, names []string) []dcm.Backend {
	out := make([]dcm.Backend, 0, len(names))
	for _, n := range names {
		if b, ok := st.Backend(n); ok {
			out = append(out, b)
		}
	}
	return markRetired(out, d)
}

// markRetired flags, for clients, the servers whose endpoint Kubernetes no
// longer has: with it a snapshot says what Kubernetes asks, so the what-if
// planner can start from a snapshot alone. Backends are copied only when a
// flag changes.
func markRetired(backends []dcm.Backend, d dcm.Desired) []dcm.Backend {
	out := backends
	copied := false
	for i, b := range backends {
		db, ok := d.Backend(b.Name)
		var servers []dcm.Server
		for k, s := range b.Servers {
			retired := s.Endpoint != "" && (!ok || !hasEndpoint(db, s.Endpoint))
			if retired == s.Retired {
				continue
			}
			if servers == nil {
				servers = slices.Clone(b.Servers)
			}
			servers[k].Retired = retired
		}
		if servers == nil {
			continue
		}
		if !copied {
			out, copied = slices.Clone(backends), true
		}
		b.Servers = servers
		out[i] = b
	}
	return out
}

func sortStrings(s []string) []string {
	slices.Sort(s)
	return s
}

// backendsOf lists the backends ops touch: a server op's, and those whose
// entries a map replace changes.
func backendsOf(ops []dcm.Op) []string {
	var out []string
	for _, o := range ops {
		if o.Kind != dcm.OpMapReplace {
			out = append(out, o.Backend)
			continue
		}
		for _, e := range o.Set {
			out = append(out, e.Backend)
		}
		for _, e := range o.Del {
			out = append(out, e.Backend)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Snapshot is the whole picture at the current seq.
func (e *Engine) Snapshot() dcm.Snapshot {
	e.mu.Lock()
	defer e.mu.Unlock()
	routes := make([]dcm.Route, 0, len(e.desired.Backends))
	for _, b := range e.desired.Backends {
		routes = append(routes, b.Route)
	}
	rejected := make([]dcm.Rejection, 0, len(e.rejected))
	for _, r := range e.rejected {
		rejected = append(rejected, r)
	}
	slices.SortFunc(rejected, func(a, b dcm.Rejection) int {
		switch {
		case a.Object.String() < b.Object.String():
			return -1
		case a.Object.String() > b.Object.String():
			return 1
		}
		return 0
	})
	var last *dcm.ReloadInfo
	if e.lastReload != nil {
		c := *e.lastReload
		last = &c
	}
	return dcm.Snapshot{
		Seq:  e.hub.Seq(),
		Mode: e.cfg.Caps.Mode,
		Caps: e.cfg.Caps,
		HAProxy: dcm.HAProxyInfo{
			Version: e.driver.Version().String(), PID: e.pid, Started: e.started, Reloads: e.reloads, Running: e.running,
		},
		Updates:    e.updates,
		LastReload: last,
		Routes:     routes,
		Backends:   markRetired(e.actual.Backends, e.desired),
		Pool:       slices.Clone(e.actual.Pool),
		Rejected:   rejected,
	}
}
