package haproxy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dcm-router/dcm/dcm"
)

// splitMapOps cuts ops into the server ops before the map replaces, those
// replaces, and the server ops after them.
func splitMapOps(ops []dcm.Op) (pre, maps, post []dcm.Op, err error) {
	first := slices.IndexFunc(ops, versioned)
	if first < 0 {
		return ops, nil, nil, nil
	}
	end := first
	for end < len(ops) && versioned(ops[end]) {
		end++
	}
	if slices.ContainsFunc(ops[end:], versioned) {
		return nil, nil, nil, errors.New("map replaces are not contiguous")
	}
	return ops[:first], ops[first:end], ops[end:], nil
}

// versioned reports whether an op is a versioned transaction: a map
// replace.
func versioned(o dcm.Op) bool { return o.Kind == dcm.OpMapReplace }

// mapTx is one map replace: its prepare, and the lines of the new map.
type mapTx struct {
	table   dcm.MapTable
	prepare Command
	lines   [][2]string // key, value
}

// mapTransactions renders next and takes each replaced map's lines from it,
// validated now so that nothing is sent when one is wrong.
func (d *Driver) mapTransactions(ops []dcm.Op, next dcm.State) ([]mapTx, error) {
	if len(ops) == 0 {
		return nil, nil
	}
	files, err := d.render(next)
	if err != nil {
		return nil, err
	}
	txs := make([]mapTx, 0, len(ops))
	for _, op := range ops {
		if !d.loadsMap(op.Map) {
			continue
		}
		prepare, err := PrepareMapCommand(op.Map)
		if err != nil {
			return nil, err
		}
		tx := mapTx{table: op.Map, prepare: prepare}
		for _, line := range strings.Split(string(files.Maps[MapFile(op.Map)]), "\n") {
			if line == "" {
				continue
			}
			key, value, ok := strings.Cut(line, " ")
			if !ok {
				return nil, fmt.Errorf("map %s: line %q has no value", op.Map, line)
			}
			if _, err := AddMapCommand(0, op.Map, key, value); err != nil {
				return nil, err
			}
			tx.lines = append(tx.lines, [2]string{key, value})
		}
		txs = append(txs, tx)
	}
	return txs, nil
}

// loadsMap reports whether HAProxy loads a routing map: the SNI map is
// read by the HTTPS address's TCP frontend only, and the insecure maps by
// fe_http only when there is HTTPS to send plain HTTP to, so without one
// HAProxy does not know them and their replaces are skipped (passthrough
// routes are then not served, TLS routes are served as HTTP), as
// certificate ops are.
func (d *Driver) loadsMap(t dcm.MapTable) bool {
	return !t.HTTPSOnly() || d.cfg.Settings.HTTPSBind != ""
}

// commands fills the prepared version and commits it.
func (tx mapTx) commands(version uint32) ([]Command, error) {
	cmds := make([]Command, 0, len(tx.lines)+1)
	for _, l := range tx.lines {
		c, err := AddMapCommand(version, tx.table, l[0], l[1])
		if err != nil {
			return nil, err
		}
		cmds = append(cmds, c)
	}
	commit, err := CommitMapCommand(version, tx.table)
	if err != nil {
		return nil, err
	}
	return append(cmds, commit), nil
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
