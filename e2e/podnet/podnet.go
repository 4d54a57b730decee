// Package podnet gives a test run a pod network of its own: a network
// namespace joined to the host by a veth pair, inside which test pods listen
// on addresses the Kubernetes API server accepts (it refuses loopback
// addresses in EndpointSlices, so pods cannot use 127.x.y.z). HAProxy and
// dcm stay in the host namespace and reach the pods through the veth.
// Nothing is routed onto the host's lo and no address outside the run's own
// /16 is touched.
//
// A run claims one slot X of 200..239 and gets 10.X.0.0/16:
//
//	host namespace           veth dcmpX   10.X.0.1/16 (brings the route 10.X.0.0/16 dev dcmpX)
//	namespace dcm-podnet-X   veth dcmpXn  10.X.0.2/16, lo up, and in the
//	                         namespace's own local table 10.X.1.0/24,
//	                         10.X.2.0/23, …, 10.X.128.0/17 on lo
//
// so every 10.X.x.y with x ≥ 1 is an address of the namespace: a socket
// there binds any of them without configuring each one, as 127.0.0.0/8 works
// on any host. 10.X.0.1 stays the host's alone, so the namespace's replies
// go back through the veth rather than to itself.
//
// Slots are claimed with an exclusive flock on /run/dcm-podnet/X.lock held
// for the network's lifetime. Test packages run side by side (go test ./...)
// therefore get different slots, and since the kernel drops the lock of a
// process that dies, a slot whose lock can be taken belongs to nobody:
// Setup removes whatever a killed run left there before using or releasing
// it.
//
// It needs root and iproute2's ip.
package podnet

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"sync"
)

// Slots are the candidate second octets 10.X of a run's /16.
const (
	firstSlot = 200
	lastSlot  = 239
)

// ErrClosed is what Listen returns once the network is closed.
var ErrClosed = errors.New("podnet: network closed")

// Network is one claimed pod network. Its methods are safe for concurrent
// use; Close may run while Listen does (Listen then fails).
type Network struct {
	slot slot
	lock *os.File

	mu sync.RWMutex
	ns *os.File // the namespace, for setns; nil once closed
}

// Setup claims a free slot, sweeps the leftovers of dead runs from every
// unclaimed slot, builds the namespace and the veth, and returns once a TCP
// connection from the host reaches a listener at a pod address inside (so
// routes, ARP and replies work). The caller must Close it; a process killed
// before that leaves its network to the next Setup to sweep.
func Setup() (*Network, error) {
	if err := os.MkdirAll(lockDir, 0o755); err != nil {
		return nil, fmt.Errorf("podnet: lock directory (needs root): %w", err)
	}
	taken, err := hostRoutes()
	if err != nil {
		return nil, err
	}
	lock, s, err := claim(taken)
	if err != nil {
		return nil, err
	}
	n, err := build(s, lock)
	if err != nil {
		return nil, errors.Join(err, s.teardown(), lock.Close())
	}
	if err := n.probe(); err != nil {
		return nil, errors.Join(err, n.Close())
	}
	return n, nil
}

// claim locks every slot it can, sweeping each one's leftovers, and keeps
// the first that does not overlap a route of the host; the others are
// released again.
func claim(taken []hostRoute) (*os.File, slot, error) {
	var kept *os.File
	var keptSlot slot
	for x := firstSlot; x <= lastSlot; x++ {
		s := slot(x)
		lock, err := s.tryLock()
		if err != nil {
			return nil, 0, errors.Join(err, closeIf(kept))
		}
		if lock == nil {
			continue // a live run holds it
		}
		swept, err := s.sweep()
		if err != nil {
			return nil, 0, errors.Join(err, lock.Close(), closeIf(kept))
		}
		if swept {
			slog.Info("podnet: removed the network a dead run left behind", "prefix", s.prefix(), "netns", s.netns())
		}
		if kept == nil && !s.overlaps(taken) {
			kept, keptSlot = lock, s
			continue
		}
		if err := lock.Close(); err != nil {
			return nil, 0, errors.Join(fmt.Errorf("podnet: release %s: %w", s.lockPath(), err), closeIf(kept))
		}
	}
	if kept == nil {
		return nil, 0, fmt.Errorf("podnet: no free pod network among 10.%d-10.%d.0.0/16 (held by other runs or used by the host)", firstSlot, lastSlot)
	}
	return kept, keptSlot, nil
}

func closeIf(f *os.File) error {
	if f == nil {
		return nil
	}
	return f.Close()
}

// Close tears the network down: the veth (which takes its peer along), the
// namespace's name, then the slot's lock. Listeners still open keep the
// namespace itself alive, unreachable, until they close. Calling Close
// again does nothing.
func (n *Network) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ns == nil {
		return nil
	}
	err := errors.Join(n.ns.Close(), n.slot.teardown())
	n.ns = nil
	if err != nil {
		// Keep the lock: the slot is not clean, and the next Setup after
		// this process ends sweeps it.
		return err
	}
	if err := n.lock.Close(); err != nil {
		return fmt.Errorf("podnet: release %s: %w", n.slot.lockPath(), err)
	}
	return nil
}

// Prefix is the run's /16, 10.X.0.0/16: the host's end of the veth, the
// namespace's end and every pod address lie in it.
func (n *Network) Prefix() netip.Prefix { return n.slot.prefix() }

// Contains reports whether a is an address inside the namespace: a pod
// address (10.X.x.y with x ≥ 1) or the namespace's end of the veth
// (10.X.0.2). The host's end, 10.X.0.1, is not: traffic to it stays on the
// host.
func (n *Network) Contains(a netip.Addr) bool {
	if !n.Prefix().Contains(a) {
		return false
	}
	return a == n.slot.peerAddr() || a.As4()[2] >= 1
}

// Addr is the pod address 10.X.x.y. Only x ≥ 1 are pod addresses (Contains
// says which); the pod pool of dcm/demo/localpod hands out prefix.x.y from
// x = 1, y = 1 upwards, so fixed addresses of a test are best taken high
// (x ≥ 250) to stay clear of it.
func (n *Network) Addr(x, y byte) netip.Addr {
	p := n.Prefix().Addr().As4()
	return netip.AddrFrom4([4]byte{p[0], p[1], x, y})
}

// Name is the namespace's name as ip netns list shows it.
func (n *Network) Name() string { return n.slot.netns() }

// String describes the network for logs.
func (n *Network) String() string {
	return fmt.Sprintf("%s (netns %s, veth %s)", n.Prefix(), n.Name(), n.slot.hostLink())
}
