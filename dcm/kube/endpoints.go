package kube

import (
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/dcm-router/dcm/dcm"
)

// candidate is an endpoint with what decides between duplicates.
type candidate struct {
	ep   dcm.Endpoint
	ipv4 bool
	// best is the best state any candidate of the same name reports.
	best dcm.AdminState
	// key is the address and port, which one server only may have.
	key netip.AddrPort
}

// better reports whether a should be kept over b when both describe the same
// server: IPv4 over IPv6 (dual-stack pod listed twice), then the better state
// (during a slice handoff the newer slice is usually the more advanced one),
// then the smaller address so the choice does not depend on slice order.
func better(a, b candidate) bool {
	if a.ipv4 != b.ipv4 {
		return a.ipv4
	}
	if ra, rb := stateRank(a.ep.State), stateRank(b.ep.State); ra != rb {
		return ra > rb
	}
	if a.ep.Addr != b.ep.Addr {
		return a.ep.Addr < b.ep.Addr
	}
	return a.ep.Port < b.ep.Port
}

// ServiceEndpoints lists the servers of a route: the endpoints of the Service
// port the route names, from every valid slice of the Service's primary IP
// family, deduplicated and sorted by name. Invalid slices are skipped (the
// caller reports them through ValidateEndpointSlice). A nil Service, an
// unknown port or no slices give no endpoints: HAProxy then answers 503.
func ServiceEndpoints(svc *corev1.Service, endpointSlices []*discoveryv1.EndpointSlice, port string) []dcm.Endpoint {
	valid := make([]*discoveryv1.EndpointSlice, 0, len(endpointSlices))
	for _, sl := range endpointSlices {
		if ValidateEndpointSlice(sl) == nil {
			valid = append(valid, sl)
		}
	}
	return validServiceEndpoints(svc, valid, port)
}

// validServiceEndpoints is ServiceEndpoints of slices that are valid
// (the Source's view keeps only those): validating them again was a fifth
// of an EndpointSlice's sync.
//
// A full resync at 10,000 routes runs it for every slice, so it works on
// one slice of candidates, sorted, rather than maps, and names the servers
// in one buffer: three allocations for a Service of 10 endpoints where the
// maps and names took 16 and 14 KB.
func validServiceEndpoints(svc *corev1.Service, endpointSlices []*discoveryv1.EndpointSlice, port string) []dcm.Endpoint {
	if svc == nil {
		return nil
	}
	portName, ok := ServicePortName(svc, port)
	if !ok {
		return nil
	}
	v4, v6 := true, true
	if len(svc.Spec.IPFamilies) > 0 {
		v4 = svc.Spec.IPFamilies[0] == corev1.IPv4Protocol
		v6 = svc.Spec.IPFamilies[0] == corev1.IPv6Protocol
	}
	used := func(sl *discoveryv1.EndpointSlice) (int, bool) {
		if !(v4 && sl.AddressType == discoveryv1.AddressTypeIPv4 || v6 && sl.AddressType == discoveryv1.AddressTypeIPv6) {
			return 0, false
		}
		return slicePort(sl, portName)
	}
	n, size := 0, 0
	for _, sl := range endpointSlices {
		num, ok := used(sl)
		if !ok {
			continue
		}
		for k := range sl.Endpoints {
			if ep := &sl.Endpoints[k]; len(ep.Addresses) > 0 {
				n++
				size += serverNameSize(podName(ep), portName, ep.Addresses[0], num)
			}
		}
	}
	if n == 0 {
		return []dcm.Endpoint{}
	}
	cands := make([]candidate, 0, n)
	names := make([]byte, 0, size)
	ends := make([]int, 0, n) // where each candidate's name ends in names
	for _, sl := range endpointSlices {
		num, ok := used(sl)
		if !ok {
			continue
		}
		for k := range sl.Endpoints {
			ep := &sl.Endpoints[k]
			if len(ep.Addresses) == 0 {
				continue
			}
			// The API calls the addresses of one endpoint fungible; the
			// first is the one consumers are told to use.
			addr := ep.Addresses[0]
			pod := podName(ep)
			names = dcm.AppendServerName(names, pod, portName, addr, num)
			ends = append(ends, len(names))
			cands = append(cands, candidate{
				ep:   dcm.Endpoint{Addr: addr, Port: num, Weight: 1, State: EndpointState(ep.Conditions), Pod: pod},
				ipv4: sl.AddressType == discoveryv1.AddressTypeIPv4,
				key:  netip.AddrPortFrom(netip.MustParseAddr(addr), uint16(num)),
			})
		}
	}
	all := string(names)
	for i := range cands {
		from := 0
		if i > 0 {
			from = ends[i-1]
		}
		cands[i].ep.Name = all[from:ends[i]]
	}
	return dedupeEndpoints(cands)
}

// dedupeEndpoints keeps one candidate per name (better's; a pod listed in
// an IPv4 and an IPv6 slice keeps its IPv4 address but the best state
// either slice reports: readiness is the pod's, not the address family's),
// then one per address and port (betterSameAddr's: a pod listed once with
// and once without its targetRef must not become two servers either), and
// returns their endpoints sorted by name.
func dedupeEndpoints(cands []candidate) []dcm.Endpoint {
	slices.SortStableFunc(cands, func(a, b candidate) int { return strings.Compare(a.ep.Name, b.ep.Name) })
	kept := cands[:0]
	for _, c := range cands {
		c.best = c.ep.State
		if k := len(kept) - 1; k >= 0 && kept[k].ep.Name == c.ep.Name {
			best := kept[k].best
			if stateRank(c.ep.State) > stateRank(best) {
				best = c.ep.State
			}
			if better(c, kept[k]) {
				kept[k] = c
			}
			kept[k].best = best
			continue
		}
		kept = append(kept, c)
	}
	for i := range kept {
		kept[i].ep.State = kept[i].best
	}
	dupAddr := false
	for i := 1; i < len(kept) && !dupAddr; i++ {
		for j := range i {
			if kept[i].key == kept[j].key {
				dupAddr = true
				break
			}
		}
		if i > 64 { // too many for pairs: let the sort find them
			dupAddr = true
		}
	}
	if dupAddr {
		slices.SortFunc(kept, func(a, b candidate) int {
			if c := a.key.Compare(b.key); c != 0 {
				return c
			}
			if betterSameAddr(a, b) {
				return -1
			}
			return 1
		})
		kept = slices.CompactFunc(kept, func(a, b candidate) bool { return a.key == b.key })
		slices.SortFunc(kept, func(a, b candidate) int { return strings.Compare(a.ep.Name, b.ep.Name) })
	}
	eps := make([]dcm.Endpoint, len(kept))
	for i, c := range kept {
		eps[i] = c.ep
	}
	return eps
}

// serverNameSize is the length of dcm.ServerName's name, or near it.
func serverNameSize(pod, portName, addr string, port int) int {
	n := len(pod)
	if pod == "" {
		n = len("ip-") + len(addr)
	}
	if portName == "" {
		return n + 1 + 5 // at most 65535
	}
	return n + 1 + len(portName)
}

// betterSameAddr decides between two names for one address:port: the better
// state, then the one that knows its pod, then the smaller name.
func betterSameAddr(a, b candidate) bool {
	if ra, rb := stateRank(a.ep.State), stateRank(b.ep.State); ra != rb {
		return ra > rb
	}
	if (a.ep.Pod != "") != (b.ep.Pod != "") {
		return a.ep.Pod != ""
	}
	return a.ep.Name < b.ep.Name
}

// slicePort finds the slice port carrying the Service port name; the
// EndpointSlice controller has already resolved the target port (numeric or
// named) to the container's number.
func slicePort(slice *discoveryv1.EndpointSlice, name string) (int, bool) {
	for _, p := range slice.Ports {
		if deref(p.Name) == name && p.Port != nil {
			return int(*p.Port), true
		}
	}
	return 0, false
}
