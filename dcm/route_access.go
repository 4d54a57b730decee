package dcm

import (
	"net/netip"
	"slices"
	"strings"
)

// A route's client allowlist (OpenShift's ip_allowlist): the addresses and
// networks whose connections its backend serves; any other client's
// connection is closed without an answer, as OpenShift's router closes it
// (tcp-request content reject). Empty serves everyone. HAProxy reads the
// lists from one map, MapAllowlist, keyed by the HAProxy backend's name,
// through a rule every backend has alike, so a list that comes, changes
// or goes is a map replace: it never reloads and never re-renders a
// backend.

// MaxAllowlist bounds the entries of one allowlist: every change of any
// list sends the whole allowlist map over the admin socket.
const MaxAllowlist = 1000

// maxAllowlistText bounds the annotation's text before it is split.
const maxAllowlistText = 64 << 10

// ParseAllowlist reads an allowlist: IPv4 and IPv6 addresses and CIDR
// networks separated by spaces (and by commas too when commas is set, as
// Ingress annotations write lists). It returns the canonical list
// (CanonicalSource of each, sorted, without duplicates), or a refusal
// naming the first entry that is not one: no zone, no hostname, at most
// MaxAllowlist entries. An empty value is an empty list.
func ParseAllowlist(field, v string, commas bool) ([]string, error) {
	if len(v) > maxAllowlistText {
		return nil, invalid(RejectInvalidValue, field, v[:64]+"…")
	}
	sep := func(r rune) bool { return r == ' ' || r == '\t' || (commas && r == ',') }
	words := strings.FieldsFunc(v, sep)
	if len(words) > MaxAllowlist {
		return nil, invalid(RejectInvalidValue, field, v[:64]+"…")
	}
	out := make([]string, 0, len(words))
	for _, w := range words {
		c, ok := CanonicalSource(w)
		if !ok {
			return nil, invalid(RejectInvalidValue, field, w)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, nil
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// CanonicalSource reads one allowlist entry, an address or a network, and
// writes it as HAProxy gets it: an address as netip prints it, a network
// with its host bits cleared (10.1.2.3/8 is 10.0.0.0/8), a /32 or /128 as
// the address. False for anything else, zones included.
func CanonicalSource(s string) (string, bool) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil || p.Addr().Zone() != "" {
			return "", false
		}
		p = p.Masked()
		if p.IsSingleIP() {
			return p.Addr().String(), true
		}
		return p.String(), true
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return "", false
	}
	return a.String(), true
}

// ValidateAllowlist checks a list as ParseAllowlist writes it: every entry
// canonical, sorted, none twice, at most MaxAllowlist. The renderer and
// the command builder check again whatever reaches HAProxy.
func ValidateAllowlist(field string, list []string) error {
	if len(list) > MaxAllowlist {
		return invalid(RejectInvalidValue, field, strings.Join(list[:3], " ")+"…")
	}
	for i, s := range list {
		if c, ok := CanonicalSource(s); !ok || c != s {
			return invalid(RejectInvalidValue, field, s)
		}
		if i > 0 && list[i-1] >= s {
			return invalid(RejectInvalidValue, field, s)
		}
	}
	return nil
}

// MapAllowlist maps the HAProxy backend of a route with an allowlist to
// its list, and the chunks of long lists (AllowlistChunkPrefix) to their
// text. A backend without an entry serves everyone.
const MapAllowlist MapTable = "allowlist"

// A list's value is its entries joined by commas, when that fits in
// MaxAllowlistChunk bytes; a longer one is cut, between entries, into
// chunks of at most that, each stored under a key of its own
// (AllowlistChunkPrefix and the 16 hex digits of its id), and the
// backend's value is "@" and the chunks' ids joined by commas. A command
// carries one entry, and HAProxy 2.6's CLI hangs on a line longer than
// its buffer less the rewrite reserve (24,576 bytes as dcm tunes it:
// measured, an add map of 24,036 bytes answers, one of 28,041 never
// does), so chunks leave a margin of six.
const (
	MaxAllowlistChunk = 4096
	// AllowlistChunkPrefix sorts before every backend's name (be_…): in
	// the map file the chunks come before the values that name them. At
	// runtime, where the map changes entry by entry, a chunk is added
	// before the values that name it and deleted after them, and a
	// chunk's key never holds another text (dcm/plan reloads instead), so
	// no request reads a value against a chunk that is not its own.
	AllowlistChunkPrefix = "_chunk."
	allowlistIDLen       = 16
)

// AllowlistChunkKey is the key of the chunk with the given id.
func AllowlistChunkKey(id string) string { return AllowlistChunkPrefix + id }

// validChunkID reports whether id is 16 lower-case hex digits.
func validChunkID(id string) bool {
	if len(id) != allowlistIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// IsAllowlistChunkKey reports whether a key of MapAllowlist names a chunk,
// well formed.
func IsAllowlistChunkKey(key string) bool {
	id, ok := strings.CutPrefix(key, AllowlistChunkPrefix)
	return ok && validChunkID(id)
}

// ValidateAllowlistValue checks a value of MapAllowlist as HAProxy gets
// it: at most MaxAllowlistChunk bytes of canonical entries, in order and
// each once, joined by commas; or, unless chunk (the value of a chunk's
// key), "@" and chunk ids joined by commas.
func ValidateAllowlistValue(field, value string, chunk bool) error {
	if value == "" || len(value) > MaxAllowlistChunk {
		return invalid(RejectInvalidValue, field, truncateValue(value))
	}
	if refs, ok := strings.CutPrefix(value, "@"); ok && !chunk {
		for _, id := range strings.Split(refs, ",") {
			if !validChunkID(id) {
				return invalid(RejectInvalidValue, field, truncateValue(value))
			}
		}
		return nil
	}
	prev := ""
	for _, s := range strings.Split(value, ",") {
		if c, ok := CanonicalSource(s); !ok || c != s || (prev != "" && prev >= s) {
			return invalid(RejectInvalidValue, field, truncateValue(s))
		}
		prev = s
	}
	return nil
}

// truncateValue keeps a refusal's message short.
func truncateValue(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
