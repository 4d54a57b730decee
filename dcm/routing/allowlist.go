package routing

import (
	"strconv"
	"strings"

	"github.com/dcm-router/dcm/dcm"
)

// Chunked reports whether a backend's allowlist is cut into chunks (its
// entries joined are longer than dcm.MaxAllowlistChunk): the ids of its
// chunks depend on every other list, so a change to it may change entries
// of other backends (chunks they share).
func Chunked(b *dcm.Backend) bool {
	n := len(b.Route.Allowlist) - 1
	for _, e := range b.Route.Allowlist {
		if n += len(e); n > dcm.MaxAllowlistChunk {
			return true
		}
	}
	return false
}

// Allowlist is the allowlist map of backends (dcm.MapAllowlist), sorted by
// key: Tables' entries of that map, without the routing maps.
func Allowlist(backends []*dcm.Backend) []dcm.MapEntry {
	es := allowlistEntries(backends)
	SortEntries(es)
	return es
}

// allowlistEntries is the allowlist map (dcm.MapAllowlist) of backends:
// an entry for every one whose route has a list, routed or retiring (a
// retiring backend still serves the connections it has, and keeps its
// list until it returns to the pool), keyed by the HAProxy backend's name;
// and the chunks of the lists too long for one value, each once, however
// many lists share it, attributed to the first backend that names it.
// The keys and values depend on the lists alone (barring a collision of
// chunk ids, resolved in the order of backends, which a State keeps by
// name); only that attribution, which HAProxy never sees, depends on the
// order.
func allowlistEntries(backends []*dcm.Backend) []dcm.MapEntry {
	var out []dcm.MapEntry
	chunks := map[string]string{} // id → text
	for _, b := range backends {
		if len(b.Route.Allowlist) == 0 {
			continue
		}
		value := strings.Join(b.Route.Allowlist, ",")
		if len(value) > dcm.MaxAllowlistChunk {
			parts := splitAllowlist(value)
			for i, c := range parts {
				id := chunkID(c, chunks)
				if _, ok := chunks[id]; !ok {
					chunks[id] = c
					out = append(out, dcm.MapEntry{Key: dcm.AllowlistChunkKey(id), Backend: b.Name, Slot: b.Slot, Action: c})
				}
				parts[i] = id
			}
			value = "@" + strings.Join(parts, ",")
		}
		out = append(out, dcm.MapEntry{Key: b.ProxyName(), Backend: b.Name, Slot: b.Slot, Action: value})
	}
	return out
}

// splitAllowlist cuts a list's value (its entries joined by commas) into
// chunks of at most dcm.MaxAllowlistChunk bytes, at commas. An entry is
// far shorter than a chunk; one that is not (a list no validator let
// through) stays whole, and the renderer refuses its value.
func splitAllowlist(value string) []string {
	var out []string
	for len(value) > dcm.MaxAllowlistChunk {
		cut := strings.LastIndexByte(value[:dcm.MaxAllowlistChunk+1], ',')
		if cut <= 0 {
			break
		}
		out = append(out, value[:cut])
		value = value[cut+1:]
	}
	return append(out, value)
}

// chunkID is the id of a chunk's text: its 64-bit FNV-1a in hex, so that
// equal chunks share one entry and a list that does not change keeps its
// ids. FNV is no cryptographic hash (crypto/sha256 would weigh on the
// browser's planner), so an id that another text in the map already has
// is hashed again with a counter until it is free: a collision, even one
// crafted in an annotation, never gives a list another's chunk. (The Lua
// script checks a cached list's chunks against the map for the same
// reason: an id names a text within one version of the map only.)
func chunkID(text string, taken map[string]string) string {
	const hexDigits = "0123456789abcdef"
	for n := 0; ; n++ {
		s := text
		if n > 0 {
			s += "#" + strconv.Itoa(n)
		}
		h := uint64(14695981039346656037)
		for i := 0; i < len(s); i++ {
			h ^= uint64(s[i])
			h *= 1099511628211
		}
		var id [16]byte
		for i := len(id) - 1; i >= 0; i-- {
			id[i] = hexDigits[h&15]
			h >>= 4
		}
		if t, ok := taken[string(id[:])]; !ok || t == text {
			return string(id[:])
		}
	}
}
