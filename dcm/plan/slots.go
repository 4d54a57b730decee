package plan

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/dcm-router/dcm/dcm"
)

// Slots mode keeps the servers of a backend fixed (slot1…slotN, rendered in
// the configuration) and moves endpoints in and out of them with set server
// addr/state. It reloads only when a backend has no free slot left.

const slotPrefix = "slot"

func slotName(n int) string { return slotPrefix + strconv.Itoa(n) }

// slotIndex orders slots by number rather than by name (slot2 before slot10).
func slotIndex(name string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(name, slotPrefix))
	if err != nil {
		return 0
	}
	return n
}

func freeSlot(n int, r dcm.Route) dcm.Server {
	return dcm.Server{Name: slotName(n), Weight: 1, State: dcm.StateMaint, Origin: dcm.OriginCfg, Check: r.Check, MaxConn: r.MaxConn, CheckInterMillis: dcm.CheckInterOf(r), Upstream: upstreamOf(r), Unobserved: true}
}

func bind(s dcm.Server, r dcm.Route, e dcm.Endpoint) dcm.Server {
	s.Addr, s.Port, s.Weight, s.State = e.Addr, e.Port, e.Weight, e.State
	s.Endpoint, s.Pod, s.Service, s.Terminating = e.Name, e.Pod, e.Service, e.Terminating
	s.Proto, s.Upstream = e.Proto, upstreamFor(r, e)
	return s
}

func planSlots(a dcm.Backend, d dcm.DesiredBackend) backendPlan {
	out := backendPlan{next: a}
	out.next.Route = d.Route

	// Work on the slots in number order; the result is re-sorted by name.
	order := make([]int, len(a.Servers))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int {
		return cmp.Compare(slotIndex(a.Servers[x].Name), slotIndex(a.Servers[y].Name))
	})

	wanted := make(map[string]int, len(d.Endpoints)) // endpoint name → index in d.Endpoints
	for k, e := range d.Endpoints {
		wanted[e.Name] = k
	}
	boundSlot := make([]int, len(d.Endpoints)) // endpoint index → server index, -1 if none
	for k := range boundSlot {
		boundSlot[k] = -1
	}
	bound := make([]bool, len(a.Servers))
	for _, i := range order {
		s := a.Servers[i]
		if k, ok := wanted[s.Endpoint]; ok && s.Endpoint != "" && boundSlot[k] < 0 {
			boundSlot[k] = i
			bound[i] = true
		}
	}

	servers := slices.Clone(a.Servers)
	var ops []dcm.Op
	// Ready slots that stop taking traffic go last, after those that start
	// (as in planDynamic): the backend is never without a ready server.
	var leaving []dcm.Op
	// Retire slots whose endpoint is gone, and collect the free ones.
	var free []int
	for _, i := range order {
		if bound[i] {
			continue
		}
		s := servers[i]
		switch {
		case s.State != dcm.StateMaint:
			leaving = append(leaving, setState(a.Name, s, dcm.StateMaint))
			s.State = dcm.StateMaint
			s.Unobserved = true
			servers[i] = s
			out.waiting++
		case s.Endpoint != "" && !s.Idle():
			out.waiting++
		default:
			free = append(free, i)
		}
	}
	// Converge bound slots and bind new endpoints to free slots, in endpoint order.
	for k, e := range d.Endpoints {
		i := boundSlot[k]
		if i < 0 {
			if len(free) == 0 {
				return backendPlan{reason: dcm.ReasonSlotsExhausted}
			}
			i, free = free[0], free[1:]
		}
		if servers[i].Proto != e.Proto {
			// A slot's protocol is in the cfg: only a reload renders
			// the slot with its endpoint's (Fresh binds them).
			return backendPlan{reason: dcm.ReasonProtoChanged}
		}
		if !sameUpstream(servers[i].Upstream, upstreamFor(d.Route, e)) {
			// So is its TLS: a free slot verifies the primary
			// Service's name, an alternate's endpoint needs its own.
			return backendPlan{reason: dcm.ReasonCertChanged}
		}
		bops, s := converge(a.Name, servers[i], e)
		if servers[i].State == dcm.StateReady && s.State != dcm.StateReady {
			leaving = append(leaving, bops...)
		} else {
			ops = append(ops, bops...)
		}
		servers[i] = s
	}
	ops = append(ops, leaving...)
	if len(ops) == 0 {
		return out // unchanged: share the slice
	}
	out.ops = ops
	out.next.Servers = servers
	return out
}
