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
// touched names the backends whose entries may differ (of before, after or
// both): a route bound, re-keyed, moved or unbound, a backend that retires
// or comes back. Only they, and the backends that share a host with one of
// them, are looked at (a Gateway route's groups are its gateway keys:
// routing.Groups): a key is claimed by routes of one host only
// (routing.Tables), so its winner among several claimants is found among
// them, and every other entry is the same on both sides. (The other maps
// are keyed by HAProxy backend, which no two backends of a state share:
// the renderer refuses such a state.) Finding them is a comparison of
// strings per backend; building and comparing entries is for them only.
// The one exception is the chunks of long allowlists, whose ids depend on
// every list: when a touched backend has such a list, the allowlist map of
// both states is built whole.
//
// ok is false when a chunk's key would hold another text: two lists'
// chunks whose ids collide (64-bit FNV-1a, so crafted) and whose order
// changed. A value naming that key could then be read against the wrong
// text while the entries change one by one, so such a change reloads
// instead (the caller's rule).
func mapOps(before, after dcm.State, touched []string) (ops []dcm.Op, ok bool) {
	if len(touched) == 0 {
		return nil, true
	}
	var hosts []string
	seen := map[string]bool{}
	chunked := false
	for _, name := range touched {
		for _, st := range []dcm.State{before, after} {
			b, found := st.Backend(name)
			if !found {
				continue
			}
			routing.Groups(b.Route, func(g string) {
				if !seen[g] {
					seen[g] = true
					hosts = append(hosts, g)
				}
			})
			chunked = chunked || routing.Chunked(b)
		}
	}
	// One pass over before: a backend not touched is the same on both
	// sides (the very pointer, or one whose entries did not change).
	hostSet, touchedSet := newSet(hosts), newSet(touched)
	var relBefore, relAfter []*dcm.Backend
	for _, b := range before.Backends {
		if routing.InGroups(b.Route, hostSet.has) {
			relBefore = append(relBefore, b)
			if !touchedSet.has(b.Name) {
				relAfter = append(relAfter, b)
			}
		}
	}
	added := map[string]bool{}
	for _, name := range touched {
		if b, found := after.Backend(name); found && !added[name] {
			added[name] = true
			relAfter = append(relAfter, b)
		}
	}
	dcm.SortBackends(relAfter)
	bt, at := routing.Tables(relBefore), routing.Tables(relAfter)
	if chunked {
		bt[dcm.MapAllowlist], at[dcm.MapAllowlist] = routing.Allowlist(before.Backends), routing.Allowlist(after.Backends)
	}
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

// set is a small set of strings: most syncs touch a backend or two, whose
// hosts are looked for among thousands of backends.
type set struct {
	list []string
	m    map[string]bool
}

func newSet(items []string) set {
	if len(items) <= 8 {
		return set{list: items}
	}
	m := make(map[string]bool, len(items))
	for _, s := range items {
		m[s] = true
	}
	return set{m: m}
}

func (s set) has(x string) bool {
	if s.m != nil {
		return s.m[x]
	}
	for _, y := range s.list {
		if y == x {
			return true
		}
	}
	return false
}
