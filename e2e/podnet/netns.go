package podnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// probeTimeout bounds Setup's check that the host reaches the namespace.
// TCP retransmits a SYN the veth dropped while it was still coming up
// after a second, so one dial is enough.
const probeTimeout = 10 * time.Second

// Listen opens a listener inside the namespace, as net.ListenConfig.Listen
// does in the host's: address is an IP literal and port, such as
// n.Addr(1, 1).String()+":8080" (names would be resolved in the
// namespace, which has no DNS). The socket keeps the namespace for its
// lifetime, wherever it is used from: accepting and serving run on any
// goroutine.
func (n *Network) Listen(ctx context.Context, network, address string) (net.Listener, error) {
	var ln net.Listener
	err := n.inside(func() error {
		var err error
		ln, err = (&net.ListenConfig{}).Listen(ctx, network, address)
		return err
	})
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		return nil, fmt.Errorf("podnet: listen on %s in %s: %w", address, n.Name(), err)
	}
	return ln, nil
}

// inside runs fn on an OS thread of its own switched into the namespace. A
// socket belongs to the namespace of the thread that opens it, and setns
// changes only the calling thread, so the goroutine is locked to its
// thread throughout and every other goroutine stays in the host namespace.
func (n *Network) inside(fn func() error) error {
	n.mu.RLock()
	defer n.mu.RUnlock()
	if n.ns == nil {
		return ErrClosed
	}
	target := int(n.ns.Fd())
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		restored, err := onThreadIn(target, fn)
		if restored {
			runtime.UnlockOSThread()
		}
		// Otherwise the goroutine ends locked, and Go ends the thread with
		// it rather than run other goroutines in the namespace.
		errc <- err
	}()
	return <-errc
}

// onThreadIn switches the locked calling thread into the namespace target,
// runs fn and switches back. restored says whether the thread is back in
// the namespace it started in (or never left).
func onThreadIn(target int, fn func() error) (restored bool, err error) {
	orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return true, fmt.Errorf("open this thread's namespace: %w", err)
	}
	defer unix.Close(orig)
	if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
		return true, fmt.Errorf("enter the namespace (needs root): %w", err)
	}
	fnErr := fn()
	if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
		return false, errors.Join(fnErr, fmt.Errorf("return to the host namespace: %w", err))
	}
	return true, fnErr
}

// probe connects from the host to a listener at the highest pod address:
// the veth is up both ways, the last of the local blocks holds, and the
// namespace answers ARP for its pod addresses and routes its replies back.
func (n *Network) probe() error {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	at := netip.AddrPortFrom(n.Addr(255, 254), 0)
	ln, err := n.Listen(ctx, "tcp", at.String())
	if err != nil {
		return err
	}
	defer ln.Close()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		return fmt.Errorf("podnet: the host does not reach %s in %s: %w", ln.Addr(), n.Name(), err)
	}
	return conn.Close()
}
