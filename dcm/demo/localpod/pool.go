// Package localpod runs "pods" as local HTTP servers, each on an address of
// its own (prefix.x.y, a loopback range such as 127.0.x.y) and a common port,
// the way pods of a cluster each have an IP. The demo cluster's simulated
// kubelet uses it, and so can a test kubelet that turns the Pods of a real API
// server into local servers.
//
// A pod here is three steps: Pool.Listen binds a free address, Serve answers
// on it with Handler, and Server.Stop shuts it down gracefully, after which
// the address goes back to the pool.
package localpod

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// Timing of Listen.
const (
	// bindAttempts is how many addresses Listen tries per round before it
	// waits bindRetry and tries again (another process may hold a few).
	bindAttempts = 16
	bindRetry    = time.Second
	// avoidFor keeps an address that could not be bound out of the pool for
	// a while, since whoever holds it is likely to keep it.
	avoidFor = 30 * time.Second
)

// ErrCanceled is what Listen returns when its cancel channel closes first.
var ErrCanceled = errors.New("localpod: listen canceled")

// ParsePrefix reads "a.b." (two octets and a trailing dot, like "127.0.")
// into the two leading octets of the pool's addresses.
func ParsePrefix(s string) ([2]byte, error) {
	var out [2]byte
	if !strings.HasSuffix(s, ".") || strings.Count(s, ".") != 2 {
		return out, fmt.Errorf("address prefix %q: want two octets and a dot, like %q", s, "127.0.")
	}
	a, err := netip.ParseAddr(s + "0.0")
	if err != nil || !a.Is4() {
		return out, fmt.Errorf("address prefix %q: want two octets and a dot, like %q", s, "127.0.")
	}
	b := a.As4()
	return [2]byte{b[0], b[1]}, nil
}

// Pool hands out pod addresses prefix.x.y (x from 1, y in 1..254), the
// lowest free one first so that addresses stay short and get reused once
// their pod is gone, as pod IPs are in a real cluster. It is safe for
// concurrent use.
//
// The pool only knows what it handed out: an address some other process
// holds is found out when Listen cannot bind it. On Linux every 127.x.y.z
// address is local without any configuration; other systems may need the
// addresses added to the loopback interface first.
type Pool struct {
	prefix [2]byte
	listen ListenFunc

	mu    sync.Mutex
	used  map[int]bool
	avoid map[int]time.Time
	// low is where alloc starts looking: every index below it is used.
	low int
}

// poolSize counts the addresses x in 1..255, y in 1..254.
const poolSize = 255 * 254

// ListenFunc opens a listener the way net.ListenConfig.Listen does.
type ListenFunc func(ctx context.Context, network, address string) (net.Listener, error)

// NewPool returns an empty pool of the addresses prefix.x.y, bound in this
// process's network namespace.
func NewPool(prefix [2]byte) *Pool {
	return NewPoolWith(prefix, (&net.ListenConfig{}).Listen)
}

// NewPoolWith is NewPool binding through listen: pods in a network
// namespace of their own (e2e/podnet's Network.Listen), on addresses only
// that namespace has.
func NewPoolWith(prefix [2]byte, listen ListenFunc) *Pool {
	return &Pool{prefix: prefix, listen: listen, used: map[int]bool{}, avoid: map[int]time.Time{}}
}

func (p *Pool) addr(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{p.prefix[0], p.prefix[1], byte(1 + i/254), byte(1 + i%254)})
}

// prefixString is the prefix as ParsePrefix reads it, for logs.
func (p *Pool) prefixString() string {
	return fmt.Sprintf("%d.%d.", p.prefix[0], p.prefix[1])
}

// alloc takes the lowest address that is neither used nor being avoided.
func (p *Pool) alloc(now time.Time) (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	firstAvoided := -1
	for i := p.low; i < poolSize; i++ {
		if p.used[i] {
			continue
		}
		if until, ok := p.avoid[i]; ok {
			if now.Before(until) {
				if firstAvoided < 0 {
					firstAvoided = i
				}
				continue
			}
			delete(p.avoid, i)
		}
		p.used[i] = true
		p.low = i + 1
		if firstAvoided >= 0 {
			p.low = firstAvoided
		}
		return i, true
	}
	if firstAvoided >= 0 {
		p.low = firstAvoided
	}
	return 0, false
}

func (p *Pool) release(i int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.releaseLocked(i)
}

func (p *Pool) releaseLocked(i int) {
	delete(p.used, i)
	p.low = min(p.low, i)
}

// unusable releases an address that could not be bound and keeps it out of
// the pool until the given time.
func (p *Pool) unusable(i int, until time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.releaseLocked(i)
	p.avoid[i] = until
}

// Listen binds a free address of the pool on port (TCP). An address that
// cannot be bound (another process holds it) is kept out of the pool for a
// while and the next one is tried; when no address is free, or a round of
// attempts found none bindable, Listen logs an error and tries again every
// second.
//
// Listen gives up only when ctx ends, or when cancel closes while it waits
// for the next round (a nil cancel never closes); it then returns ctx.Err()
// or ErrCanceled. A free address is bound even when cancel is already
// closed, so a caller that must not start a pod that is already gone checks
// cancel itself before calling.
//
// On success, addr is the address bound and release returns it to the pool;
// call release once the listener is closed (it does nothing the second
// time). The listener is the caller's to close.
func (p *Pool) Listen(ctx context.Context, port int, cancel <-chan struct{}, log *slog.Logger) (ln net.Listener, addr netip.Addr, release func(), err error) {
	if port < 0 || port > math.MaxUint16 {
		return nil, netip.Addr{}, nil, fmt.Errorf("localpod: port %d out of range", port)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	for {
		for range bindAttempts {
			if err := ctx.Err(); err != nil {
				return nil, netip.Addr{}, nil, err
			}
			i, ok := p.alloc(time.Now())
			if !ok {
				break
			}
			addr := p.addr(i)
			ln, err := p.listen(ctx, "tcp", netip.AddrPortFrom(addr, uint16(port)).String())
			if err == nil {
				var once sync.Once
				return ln, addr, func() { once.Do(func() { p.release(i) }) }, nil
			}
			if ctxErr := ctx.Err(); ctxErr != nil {
				// The listen failed because ctx ended, not because of the
				// address.
				p.release(i)
				return nil, netip.Addr{}, nil, ctxErr
			}
			p.unusable(i, time.Now().Add(avoidFor))
			log.Warn("pod address unusable, trying the next one", "addr", addr, "err", err)
		}
		log.Error("pod found no address to listen on, retrying", "prefix", p.prefixString())
		t := time.NewTimer(bindRetry)
		select {
		case <-t.C:
		case <-cancel:
			t.Stop()
			return nil, netip.Addr{}, nil, ErrCanceled
		case <-ctx.Done():
			t.Stop()
			return nil, netip.Addr{}, nil, ctx.Err()
		}
	}
}
