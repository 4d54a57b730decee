package plan

import (
	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/routing"
)

// mapOps changes every routing map that differs between two states, each
// op listing the entries that change: those the map gains (New) or
// repoints, and those it loses. HAProxy takes them one command each, so a
// route added among 10,000 costs its own few entries, not the maps.
//
// ok is false when a chunk's key would hold another text: two lists'
// chunks whose ids collide (64-bit FNV-1a, so crafted) and whose order
// changed. A value naming that key could then be read against the wrong
// text while the entries change one by one, so such a change reloads
// instead (the caller's rule).
func mapOps(before, after dcm.State) (ops []dcm.Op, ok bool) {
	bt, at := routing.Tables(before.Backends), routing.Tables(after.Backends)
	for _, t := range dcm.MapTables {
		set, del, rewritten := diffEntries(bt[t], at[t])
		if rewritten {
			return nil, false
		}
		if len(set) == 0 && len(del) == 0 {
			continue
		}
		ops = append(ops, dcm.Op{Kind: dcm.OpMapReplace, Map: t, Set: set, Del: del})
	}
	return ops, true
}

// diffEntries lists, of two maps sorted by key, the entries of after that
// before lacks (New) or has otherwise, and the entries of before whose key
// after lacks, both by key. rewritten says that an allowlist chunk's key
// holds another text in after (mapOps).
func diffEntries(before, after []dcm.MapEntry) (set, del []dcm.MapEntry, rewritten bool) {
	i, j := 0, 0
	for i < len(before) || j < len(after) {
		switch {
		case j == len(after) || (i < len(before) && before[i].Key < after[j].Key):
			del = append(del, before[i])
			i++
		case i == len(before) || after[j].Key < before[i].Key:
			e := after[j]
			e.New = true
			set = append(set, e)
			j++
		default:
			if before[i] != after[j] {
				set = append(set, after[j])
				rewritten = rewritten || dcm.IsAllowlistChunkKey(after[j].Key) && before[i].Action != after[j].Action
			}
			i++
			j++
		}
	}
	return set, del, rewritten
}
