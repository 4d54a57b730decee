package haproxy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dcm-router/dcm/dcm"
)

// splitMapOps cuts ops into the server ops before the map ops, those map
// ops, and the server ops after them.
func splitMapOps(ops []dcm.Op) (pre, maps, post []dcm.Op, err error) {
	first := slices.IndexFunc(ops, isMapOp)
	if first < 0 {
		return ops, nil, nil, nil
	}
	end := first
	for end < len(ops) && isMapOp(ops[end]) {
		end++
	}
	if slices.ContainsFunc(ops[end:], isMapOp) {
		return nil, nil, nil, errors.New("map ops are not contiguous")
	}
	return ops[:first], ops[first:end], ops[end:], nil
}

// isMapOp reports whether an op changes a routing map.
func isMapOp(o dcm.Op) bool { return o.Kind == dcm.OpMapReplace }

// mapCommands spells the changed entries of map ops, validated now so that
// nothing is sent when one is wrong: first every entry added or repointed
// (add map, set map), the maps in the ops' order (dcm.MapTables: what
// describes a backend before the keys that send it traffic), then every
// entry deleted (del map), the maps in the reverse order; an allowlist's
// chunks are added before the values that name them and deleted after.
// The entries are the planner's, as the maps of the state the ops lead to
// hold them: the runtime map and the file Write writes next are the same
// set of lines.
//
// A request between two commands sees some of the changes and not the
// others. That is safe: an entry added or repointed names a backend whose
// servers, settings, list and policy are already in place (servers come
// before the map ops, backend-keyed maps before host-keyed ones), a key
// deleted sends traffic to no backend that is gone (a deleted route's
// servers retire after the map ops), and a request that finds a key
// deleted an instant early gets what it would get an instant later.
func (d *Driver) mapCommands(ops []dcm.Op) ([]Command, error) {
	var adds, dels []Command
	for i, op := range ops {
		if !d.loadsMap(op.Map) {
			continue
		}
		set := append(chunksOf(op.Map, op.Set, true), chunksOf(op.Map, op.Set, false)...)
		for _, e := range set {
			cons := SetMapCommand
			if e.New {
				cons = AddMapCommand
			}
			c, err := cons(op.Map, e.Key, e.Value())
			if err != nil {
				return nil, fmt.Errorf("op %d (%s): %w", i, op, err)
			}
			adds = append(adds, c)
		}
		var these []Command
		for _, e := range append(chunksOf(op.Map, op.Del, false), chunksOf(op.Map, op.Del, true)...) {
			c, err := DelMapCommand(op.Map, e.Key)
			if err != nil {
				return nil, fmt.Errorf("op %d (%s): %w", i, op, err)
			}
			these = append(these, c)
		}
		dels = append(these, dels...)
	}
	return append(adds, dels...), nil
}

// chunksOf picks the entries that are allowlist chunks (or, with chunks
// false, those that are not), in their order.
func chunksOf(t dcm.MapTable, es []dcm.MapEntry, chunks bool) []dcm.MapEntry {
	var out []dcm.MapEntry
	for _, e := range es {
		if (t == dcm.MapAllowlist && strings.HasPrefix(e.Key, dcm.AllowlistChunkPrefix)) == chunks {
			out = append(out, e)
		}
	}
	return out
}

// loadsMap reports whether HAProxy loads a routing map: the SNI map is
// read by the HTTPS address's TCP frontend only, and the insecure maps by
// fe_http only when there is HTTPS to send plain HTTP to, so without one
// HAProxy does not know them and their replaces are skipped (passthrough
// routes are then not served, TLS routes are served as HTTP), as
// certificate ops are.
func (d *Driver) loadsMap(t dcm.MapTable) bool {
	if t.Gateway() {
		return gatewayServed(d.cfg.Settings.Gateway)
	}
	return !t.HTTPSOnly() || d.cfg.Settings.HTTPSBind != ""
}

// RuntimeMaps reads the routing maps HAProxy uses, as file bytes keyed
// like Files.Maps, to compare the runtime with the files: their lines
// sorted, as the files list them (by key: a line is the key, a space and
// the value, and no key holds a space or anything below it). HAProxy lists
// a map in the order its entries came in, which no lookup depends on.
func (d *Driver) RuntimeMaps(ctx context.Context) (map[string][]byte, error) {
	tables := slices.DeleteFunc(slices.Clone(dcm.MapTables), func(t dcm.MapTable) bool { return !d.loadsMap(t) })
	cmds := make([]Command, 0, len(tables))
	for _, t := range tables {
		c, err := ShowMapCommand(t)
		if err != nil {
			return nil, err
		}
		cmds = append(cmds, c)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.ready(); err != nil {
		return nil, err
	}
	replies, err := d.client.Exec(ctx, cmds)
	if err != nil {
		return nil, fmt.Errorf("show map: %w", err)
	}
	out := make(map[string][]byte, len(cmds))
	for i, t := range tables {
		text, err := ParseShowMap(replies[i].Text)
		if err != nil {
			return nil, err
		}
		lines := strings.SplitAfter(text, "\n")
		slices.Sort(lines)
		out[MapFile(t)] = []byte(strings.Join(lines, ""))
	}
	return out, nil
}
