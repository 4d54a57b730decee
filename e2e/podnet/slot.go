package podnet

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// lockDir holds one lock file per slot. /run is a tmpfs: the files go
	// with a reboot, and so does everything they guard.
	lockDir = "/run/dcm-podnet"
	// netnsDir is where ip netns add mounts named namespaces.
	netnsDir = "/run/netns"
	// sysNet lists the host namespace's links.
	sysNet = "/sys/class/net"
	// ipTimeout bounds one ip command; they take milliseconds.
	ipTimeout = 10 * time.Second
)

// slot is X of 10.X.0.0/16. Every name derives from it, so that a later
// run finds what a dead one left without any record of it.
type slot byte

func (s slot) prefix() netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(s), 0, 0}), 16)
}

func (s slot) hostAddr() netip.Addr { return netip.AddrFrom4([4]byte{10, byte(s), 0, 1}) }
func (s slot) peerAddr() netip.Addr { return netip.AddrFrom4([4]byte{10, byte(s), 0, 2}) }

func (s slot) netns() string    { return fmt.Sprintf("dcm-podnet-%d", s) }
func (s slot) hostLink() string { return fmt.Sprintf("dcmp%d", s) } // ≤ 15 bytes, as link names must be
func (s slot) peerLink() string { return fmt.Sprintf("dcmp%dn", s) }
func (s slot) lockPath() string { return filepath.Join(lockDir, fmt.Sprintf("%d.lock", s)) }
func (s slot) netnsPath() string {
	return filepath.Join(netnsDir, s.netns())
}

// podRoutes make 10.X.1.0–10.X.255.255 local inside the namespace, in
// aligned blocks that leave 10.X.0.0/24 out: 10.X.0.1 must reach the host.
func (s slot) podRoutes() []netip.Prefix {
	var out []netip.Prefix
	for bits := 24; bits >= 17; bits-- {
		third := byte(1 << (24 - bits)) // 1, 2, 4, … 128: each block starts where the last ended
		out = append(out, netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(s), third, 0}), bits))
	}
	return out
}

// tryLock takes the slot's lock without waiting. It returns nil, nil when
// another open file holds it: a live run, in this process or another.
func (s slot) tryLock() (*os.File, error) {
	f, err := os.OpenFile(s.lockPath(), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("podnet: open %s: %w", s.lockPath(), err)
	}
	// The lock belongs to this open file description, which O_CLOEXEC (Go's
	// default) keeps out of child processes: an HAProxy or control plane
	// outliving the test cannot keep the slot claimed.
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, nil
		}
		return nil, fmt.Errorf("podnet: lock %s: %w", s.lockPath(), err)
	}
	return f, nil
}

// sweep removes what a run left on the slot; the caller holds its lock. It
// reports whether there was anything.
func (s slot) sweep() (bool, error) {
	link, ns := exists(filepath.Join(sysNet, s.hostLink())), exists(s.netnsPath())
	if !link && !ns {
		return false, nil
	}
	return true, s.teardown()
}

// teardown deletes the veth (its peer goes with it) and the namespace's
// name, whichever exist.
func (s slot) teardown() error {
	var errs []error
	if exists(filepath.Join(sysNet, s.hostLink())) {
		errs = append(errs, ip("link", "del", s.hostLink()))
	}
	if exists(s.netnsPath()) {
		errs = append(errs, ip("netns", "del", s.netns()))
	}
	return errors.Join(errs...)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

// build creates the namespace and the veth and routes the pod addresses
// inside. On error the caller tears the slot down.
func build(s slot, lock *os.File) (*Network, error) {
	ns := []string{"-n", s.netns()}
	steps := [][]string{
		{"netns", "add", s.netns()},
		{"link", "add", s.hostLink(), "type", "veth", "peer", "name", s.peerLink(), "netns", s.netns()},
		{"addr", "add", netip.PrefixFrom(s.hostAddr(), 16).String(), "dev", s.hostLink()},
		{"link", "set", s.hostLink(), "up"},
		append(ns, "addr", "add", netip.PrefixFrom(s.peerAddr(), 16).String(), "dev", s.peerLink()),
		append(ns, "link", "set", s.peerLink(), "up"),
		append(ns, "link", "set", "lo", "up"),
	}
	for _, p := range s.podRoutes() {
		// The namespace's own local table: the host's routing is untouched.
		steps = append(steps, append(ns, "route", "add", "local", p.String(), "dev", "lo", "table", "local"))
	}
	for _, args := range steps {
		if err := ip(args...); err != nil {
			return nil, err
		}
	}
	f, err := os.Open(s.netnsPath())
	if err != nil {
		return nil, fmt.Errorf("podnet: open namespace %s: %w", s.netnsPath(), err)
	}
	return &Network{slot: s, lock: lock, ns: f}, nil
}

// ip runs iproute2's ip, bounded in time.
func ip(args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), ipTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if errors.Is(err, exec.ErrNotFound) {
		return fmt.Errorf("podnet: iproute2's ip is needed (apt-get install iproute2): %w", err)
	}
	if err != nil {
		return fmt.Errorf("podnet: ip %s (needs root): %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
