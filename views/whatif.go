package views

import (
	"slices"
	"strconv"
	"strings"

	"github.com/dcm-router/dcm/dcm"
)

// Workload is a scalable workload behind one or more routes, as the what-if
// page offers it.
type Workload struct {
	Namespace, Kind, Name string
	Backends              []string
	// Pods counts the pods that count as replicas now: those of its routes'
	// servers that are not terminating.
	Pods int
}

// Key is the workload's form value: namespace/Kind/name.
func (w Workload) Key() string { return w.Namespace + "/" + w.Kind + "/" + w.Name }

// Label is how the page names it.
func (w Workload) Label() string {
	return w.Kind + " " + w.Namespace + "/" + w.Name + " · " + plural(w.Pods, "1 pod", "%d pods")
}

// Workloads lists the workloads behind the backends' routes, sorted.
func Workloads(backends []*dcm.Backend) []Workload {
	byKey := map[string]*Workload{}
	pods := map[string]map[string]bool{}
	for _, b := range backends {
		ref := b.Route.Workload
		if ref == nil {
			continue
		}
		w := Workload{Namespace: b.Route.Namespace, Kind: ref.Kind, Name: ref.Name}
		k := w.Key()
		if byKey[k] == nil {
			byKey[k], pods[k] = &w, map[string]bool{}
		}
		byKey[k].Backends = append(byKey[k].Backends, b.Name)
		for _, s := range b.Servers {
			if s.Pod != "" && !s.Retired && s.State != dcm.StateDrain {
				pods[k][s.Pod] = true
			}
		}
	}
	out := make([]Workload, 0, len(byKey))
	for k, w := range byKey {
		w.Pods = len(pods[k])
		out = append(out, *w)
	}
	slices.SortFunc(out, func(a, b Workload) int { return strings.Compare(a.Key(), b.Key()) })
	return out
}

// ParseWorkloadKey splits a Key; ok is false for anything else.
func ParseWorkloadKey(key string) (namespace, kind, name string, ok bool) {
	parts := strings.Split(key, "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}

// CertRoute is a route that serves a certificate of its own (its TLS
// field: edge routes, and any kind that terminates TLS with a Secret), as
// the what-if page offers it for a rotation.
type CertRoute struct {
	Backend string
	// HostPath is how the route reads (host and path).
	HostPath string
	// Secret is the kubernetes.io/tls Secret the certificate comes from, as
	// namespace/name: rotating it means updating that Secret.
	Secret string
	// Sharing counts the routes served from the same Secret, this one
	// included: a rotation changes the certificate of every one.
	Sharing int
}

// Label is how the page names it.
func (c CertRoute) Label() string {
	return c.HostPath + " · " + c.Backend + " · Secret " + c.Secret
}

// Note says where the certificate comes from and how a rotation is made,
// for the route chosen in the form.
func (c CertRoute) Note() string {
	shared := ""
	if c.Sharing > 1 {
		shared = plural(c.Sharing-1, " (and of 1 other route)", " (and of %d other routes)")
	}
	return "The certificate of " + c.HostPath + shared + " comes from Secret " + c.Secret +
		". This preview is not applied from here: to rotate it, update that Secret; dcm then does what the preview shows."
}

// CertRoutes lists the routes with a certificate of their own, by backend
// name. A retiring backend has no route any more.
func CertRoutes(backends []*dcm.Backend) []CertRoute {
	var out []CertRoute
	sharing := map[string]int{}
	for _, b := range backends {
		if b.Retiring || b.Route.TLS == nil || b.Route.TLS.Secret == "" {
			continue
		}
		sharing[b.Route.TLS.Secret]++
		out = append(out, CertRoute{Backend: b.Name, HostPath: b.Route.HostPath(), Secret: b.Route.TLS.Secret})
	}
	for i := range out {
		out[i].Sharing = sharing[out[i].Secret]
	}
	slices.SortFunc(out, func(a, b CertRoute) int { return strings.Compare(a.Backend, b.Backend) })
	return out
}

// WhatIfView is what the what-if page shows.
type WhatIfView struct {
	Workloads []Workload
	// Selected and Replicas are the form's values (a preview asked
	// without JavaScript).
	Selected string
	Replicas int
	// CertRoutes can have their certificate rotated; Cert is the backend
	// of the one chosen in the form (a preview asked without JavaScript).
	CertRoutes []CertRoute
	Cert       string
	// Sim is the server's preview of them, nil when none was asked.
	Sim *dcm.Simulation
	// Worker is the URL of the planner's Web Worker; "" when this build
	// carries no WebAssembly, and the page asks POST /api/v1/plan instead.
	Worker string
}

// ChosenCert is the CertRoute the form names, if any.
func (v WhatIfView) ChosenCert() (CertRoute, bool) {
	i := slices.IndexFunc(v.CertRoutes, func(c CertRoute) bool { return c.Backend == v.Cert })
	if i < 0 {
		return CertRoute{}, false
	}
	return v.CertRoutes[i], true
}

// Verdict is a preview's headline: whether HAProxy reloads, and why.
func Verdict(s dcm.Simulation) string {
	if len(s.Errors) > 0 && s.Ops == 0 && s.Reloads == 0 {
		return "Nothing to do"
	}
	if s.Reloads == 0 {
		return "No reload · " + plural(s.Ops, "1 runtime command", "%d runtime commands")
	}
	return "Reload (" + Reasons(s.Reasons) + ") · " + plural(s.Ops, "1 runtime command", "%d runtime commands")
}

// Percent shows a share.
func Percent(f float64) string { return strconv.FormatFloat(f*100, 'f', 1, 64) + "%" }

// Bytes shows a memory estimate in MiB, or KiB when small.
func Bytes(n int64) string {
	if n < 1<<20 {
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KiB"
	}
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
}

// TotalRow is one line of a preview's before/after table.
type TotalRow struct {
	Key, Label    string
	Before, After string
}

// TotalRows lines up a preview's totals.
func TotalRows(s *dcm.Simulation) []TotalRow {
	var b, a dcm.SimTotals
	if s != nil {
		b, a = s.Before, s.After
	}
	n := strconv.Itoa
	return []TotalRow{
		{"backends", "Backends", n(b.Backends), n(a.Backends)},
		// Apart, as a passthrough backend costs about twice the memory.
		{"tcpBackends", "of which passthrough (TCP)", n(b.TCPBackends), n(a.TCPBackends)},
		{"ready", "Servers ready", n(b.Ready), n(a.Ready)},
		{"drain", "Servers draining", n(b.Drain), n(a.Drain)},
		{"maint", "Servers in maint", n(b.Maint), n(a.Maint)},
		{"cfgServers", "Servers in haproxy.cfg", n(b.CfgServers), n(a.CfgServers)},
		{"runtimeServers", "Servers added at runtime", n(b.RuntimeServers), n(a.RuntimeServers)},
		{"slotsFree", "Free slots", n(b.SlotsFree), n(a.SlotsFree)},
		{"spareBackends", "Spare backends (pool)", n(b.SpareBackends), n(a.SpareBackends)},
		{"memory", "Memory (estimate)", Bytes(b.MemoryBytes), Bytes(a.MemoryBytes)},
	}
}
