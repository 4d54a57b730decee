package plan

import (
	"fmt"
	"slices"

	"github.com/dcm-router/dcm/dcm"
)

// Allowlists (dcm.Route.Allowlist) are files HAProxy replaces at runtime,
// one per HAProxy backend, spares included: every backend is rendered with
// the same rule reading its own file, and a backend without a list holds
// dcm.AllowEveryone. A list that comes, changes or goes is one
// acl-replace of the backend it is served by, and so is a spare that
// returns to the pool (back to everyone) or that a route with a list
// takes: its list is in place before the maps send it traffic.

// allowlistReason is the reload a changed allowlist needs: none but in
// reload mode, which changes nothing at runtime by definition.
func allowlistReason(a, d dcm.Route, caps dcm.Caps) dcm.ReloadReason {
	if caps.Mode == dcm.ModeReload && !slices.Equal(a.Allowlist, d.Allowlist) {
		return dcm.ReasonRouteChanged
	}
	return ""
}

// aclsOf is what every HAProxy backend's allowlist file holds in st.
func aclsOf(st dcm.State) map[string][]string {
	out := make(map[string][]string, len(st.Backends)+len(st.Pool))
	for _, b := range st.Backends {
		out[b.ProxyName()] = b.Route.Sources()
	}
	for _, name := range st.Pool {
		out[name] = dcm.AllowEveryone
	}
	return out
}

// aclOps replaces the allowlist of every HAProxy backend whose file
// differs between two states, in after's order (backends, then spares).
// It allocates nothing per unchanged backend: Compute runs it on every
// sync of thousands of routes.
func aclOps(before, after dcm.State) []dcm.Op {
	var ops []dcm.Op
	for _, b := range after.Backends {
		if !slices.Equal(sourcesBefore(before, b.Name, b.ProxyName()), b.Route.Sources()) {
			ops = append(ops, dcm.Op{Kind: dcm.OpACLReplace, Backend: b.Name, Slot: b.Slot, Allowlist: b.Route.Allowlist})
		}
	}
	for _, name := range after.Pool {
		if !slices.Equal(sourcesBefore(before, "", name), dcm.AllowEveryone) {
			ops = append(ops, dcm.Op{Kind: dcm.OpACLReplace, Backend: name})
		}
	}
	return ops
}

// aclOpsOf is aclOps for a plan that touched the named backends only (and
// released the named spares): the same ops in the same order, looking at
// those alone.
func aclOpsOf(before, after dcm.State, touched, released []string) []dcm.Op {
	names := slices.Clone(touched)
	slices.Sort(names)
	names = slices.Compact(names)
	var ops []dcm.Op
	for _, name := range names {
		b, ok := after.Backend(name)
		if ok && !slices.Equal(sourcesBefore(before, b.Name, b.ProxyName()), b.Route.Sources()) {
			ops = append(ops, dcm.Op{Kind: dcm.OpACLReplace, Backend: b.Name, Slot: b.Slot, Allowlist: b.Route.Allowlist})
		}
	}
	if len(released) == 0 {
		return ops
	}
	for _, name := range after.Pool {
		if slices.Contains(released, name) && !slices.Equal(sourcesBefore(before, "", name), dcm.AllowEveryone) {
			ops = append(ops, dcm.Op{Kind: dcm.OpACLReplace, Backend: name})
		}
	}
	return ops
}

// sourcesBefore is what the file of HAProxy backend proxy held in before:
// the list of the backend named name when HAProxy knew it as proxy, else of
// the backend proxy carried (a spare released by this plan), else
// everyone's (a spare that was free).
func sourcesBefore(before dcm.State, name, proxy string) []string {
	if a, ok := before.Backend(name); ok && a.ProxyName() == proxy {
		return a.Route.Sources()
	}
	if a, ok := before.Backend(proxy); ok && a.Slot == "" {
		return a.Route.Sources()
	}
	if slices.Contains(before.Pool, proxy) {
		return dcm.AllowEveryone
	}
	for _, a := range before.Backends {
		if a.Slot == proxy {
			return a.Route.Sources()
		}
	}
	return nil // not in HAProxy before: a replace it cannot skip
}

// applyACLOp replaces a backend's allowlist, refusing what HAProxy
// refuses: a backend it does not have, a source it cannot read.
func applyACLOp(dp DataPlane, op dcm.Op) error {
	name := op.ProxyName()
	if _, ok := dp.Servers[name]; !ok {
		return fmt.Errorf("no such backend %s", name)
	}
	if err := dcm.ValidateAllowlist("allowlist", op.Allowlist); err != nil {
		return err
	}
	dp.ACLs[name] = dcm.Route{Allowlist: op.Allowlist}.Sources()
	return nil
}
