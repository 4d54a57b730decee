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
// list from a file of the backend's own, replaced at runtime, so a list
// that comes, changes or goes never reloads and never re-renders the
// backend.

// MaxAllowlist bounds the entries of one allowlist: HAProxy holds a list
// in a tree, but every change sends the whole list over the admin socket.
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

// AllowEveryone is what the file of a backend without a list holds: every
// IPv4 and every IPv6 client. The backend's rule is the same either way,
// so a list comes and goes by replacing the file's contents alone.
var AllowEveryone = []string{"0.0.0.0/0", "::/0"}

// Sources is what the backend's allowlist file holds: the route's list,
// or AllowEveryone.
func (r Route) Sources() []string {
	if len(r.Allowlist) == 0 {
		return AllowEveryone
	}
	return r.Allowlist
}
