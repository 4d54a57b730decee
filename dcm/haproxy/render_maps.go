package haproxy

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/routing"
)

// mapLines are the entries of every map, sorted by key, as last rendered.
type mapLines map[dcm.MapTable][]dcm.MapEntry

// renderMaps writes every routing map (dcm.MapTables), a line per entry
// sorted by key (the runtime changes them entry by entry: they are sets),
// after validating every route and spare that reaches them.
func renderMaps(backends []*dcm.Backend) (map[string][]byte, mapLines, error) {
	if err := validateRouted(backends); err != nil {
		return nil, nil, err
	}
	tables := routing.Tables(backends)
	out := make(map[string][]byte, len(tables))
	lines := make(mapLines, len(tables))
	for _, t := range dcm.MapTables {
		for _, e := range tables[t] {
			if err := validateEntry(t, e); err != nil {
				return nil, nil, err
			}
		}
		lines[t] = tables[t]
		out[MapFile(t)] = mapText(tables[t])
	}
	return out, lines, nil
}

// patchMaps is renderMaps for a rendering where only the backends of ch
// moved: their entries, and those of the backends that share a host with
// one of them (a key's winner among several claimants is one of them:
// routing.Tables), are built before and after, and the maps patched. A
// route added among 10,000 then costs its host's entries and the rewrite
// of the maps it changes, not the entries of every route. ok is false
// when the whole maps must be built: nothing rendered yet, or a long
// allowlist's chunks, whose ids depend on every list.
func patchMaps(old mapLines, files map[string][]byte, backends []*dcm.Backend, ch changes) (map[string][]byte, mapLines, bool, error) {
	if old == nil {
		return nil, nil, false, nil
	}
	hosts := map[string]bool{}
	for _, b := range append(slices.Clone(ch.gone), ch.came...) {
		if routing.Chunked(b) {
			return nil, nil, false, nil
		}
		routing.Groups(b.Route, func(g string) { hosts[g] = true })
	}
	// A key the maps lose is one the moved backends held and no backend of
	// their hosts holds now; a key they gain or repoint is one a backend
	// of their hosts holds, the winner among all of them.
	before := ch.gone
	var after []*dcm.Backend
	for _, b := range backends {
		if routing.InGroups(b.Route, func(g string) bool { return hosts[g] }) {
			after = append(after, b)
		}
	}
	if err := validateRouted(after); err != nil {
		return nil, nil, false, err
	}
	bt, at := routing.Tables(before), routing.Tables(after)
	// A backend of a touched gateway key has others the subset builds in
	// part: those keep their entries (routing.Groups).
	for _, tt := range []map[dcm.MapTable][]dcm.MapEntry{bt, at} {
		tt[dcm.MapGateway] = slices.DeleteFunc(tt[dcm.MapGateway], func(e dcm.MapEntry) bool { return !hosts[routing.GatewayKeyGroup(e.Key)] })
	}
	lines := make(mapLines, len(old))
	out := make(map[string][]byte, len(files))
	for _, t := range dcm.MapTables {
		es, changed, err := patchEntries(t, old[t], bt[t], at[t])
		if err != nil {
			return nil, nil, false, err
		}
		lines[t] = es
		if changed {
			out[MapFile(t)] = mapText(es)
		} else {
			out[MapFile(t)] = files[MapFile(t)]
		}
	}
	return out, lines, true, nil
}

// patchEntries applies to all, a map's entries sorted by key, the change
// from before to after: the entries of the same keys, built from the
// backends that can hold them.
func patchEntries(t dcm.MapTable, all, before, after []dcm.MapEntry) ([]dcm.MapEntry, bool, error) {
	find := func(es []dcm.MapEntry, key string) (int, bool) {
		return slices.BinarySearchFunc(es, key, func(e dcm.MapEntry, k string) int { return strings.Compare(e.Key, k) })
	}
	out := all
	copied := false
	write := func() {
		if !copied {
			out, copied = slices.Clone(all), true
		}
	}
	for _, e := range before {
		if _, kept := find(after, e.Key); kept {
			continue
		}
		if i, ok := find(out, e.Key); ok {
			write()
			out = slices.Delete(out, i, i+1)
		}
	}
	for _, e := range after {
		i, ok := find(out, e.Key)
		if ok && out[i] == e {
			continue
		}
		if err := validateEntry(t, e); err != nil {
			return nil, false, err
		}
		write()
		if ok {
			out[i] = e
		} else {
			out = slices.Insert(out, i, e)
		}
	}
	return out, copied, nil
}

// validateRouted checks the routes and HAProxy names of the routed backends.
func validateRouted(backends []*dcm.Backend) error {
	for _, b := range backends {
		if !b.Routed() {
			continue // a retiring backend, or one that serves no route
		}
		r := b.Route
		if r.Balance == "" {
			r.Balance = dcm.BalanceRoundRobin
		}
		if err := dcm.ValidateRoute(r); err != nil {
			return fmt.Errorf("backend %q: route %s: %w", b.Name, r.Key(), err)
		}
		if err := validateBackendName(b.ProxyName()); err != nil {
			return err
		}
	}
	return nil
}

// validateEntry checks an entry of map t again, as it reaches the file.
func validateEntry(t dcm.MapTable, e dcm.MapEntry) error {
	if t.Insecure() || t.Setting() || t == dcm.MapAllowlist {
		if err := dcm.ValidateMapKey("map key", e.Key); err != nil {
			return fmt.Errorf("map %s: %w", t, err)
		}
	}
	if err := validateMapValue(t, e.Key, e.Value()); err != nil {
		return fmt.Errorf("map %s key %s: %w", t, e.Key, err)
	}
	return nil
}

// mapText is a map file: a line per entry.
func mapText(es []dcm.MapEntry) []byte {
	var buf bytes.Buffer
	for _, e := range es {
		buf.WriteString(e.Key + " " + e.Value() + "\n")
	}
	return buf.Bytes()
}
