package engine

import (
	"slices"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/plan"
)

func sortStrings(s []string) []string {
	slices.Sort(s)
	return s
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
		Updates:      e.updates,
		LastReload:   last,
		Routes:       routes,
		Backends:     plan.MarkRetired(e.actual.Backends, e.desired),
		Pool:         slices.Clone(e.actual.Pool),
		Rejected:     rejected,
		DefaultCert:  e.actual.DefaultCert,
		GatewayBinds: e.actual.GatewayBinds,
		Gateways:     e.gateways,
	}
}
