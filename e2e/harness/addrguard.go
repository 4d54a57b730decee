package harness

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/haproxy"
)

// AddressGuard holds dcm to this machine's network rule in tests: HAProxy
// may be handed only addresses in 127.0.0.0/8 or in the test's own network
// namespace (PodNetwork), so that no request or health check of a test
// ever leaves for another host. It reads what reaches HAProxy: the admin
// commands that carry an address, the servers of the state after every
// reload, and the configuration file.
type AddressGuard struct {
	podNet netip.Prefix

	mu         sync.Mutex
	violations []string
}

var loopback = netip.MustParsePrefix("127.0.0.0/8")

// NewAddressGuard allows 127.0.0.0/8 and podNet (when valid).
func NewAddressGuard(podNet netip.Prefix) *AddressGuard {
	return &AddressGuard{podNet: podNet}
}

// Allowed says whether HAProxy may be handed addr. The unspecified address
// is the placeholder of slots not in use, which are disabled and never
// contacted.
func (g *AddressGuard) Allowed(addr string) bool {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return false
	}
	a = a.Unmap()
	return loopback.Contains(a) || a.IsUnspecified() || g.podNet.IsValid() && g.podNet.Contains(a)
}

func (g *AddressGuard) check(where, addr string) {
	if g.Allowed(addr) {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.violations) < 20 {
		g.violations = append(g.violations, fmt.Sprintf("%s: %s", where, addr))
	}
}

// Command checks an admin command: add server's address, set server's addr.
func (g *AddressGuard) Command(command string) {
	f := strings.Fields(command)
	switch {
	case len(f) >= 4 && f[0] == "add" && f[1] == "server":
		g.check(command, hostOf(f[3]))
	case len(f) >= 5 && f[0] == "set" && f[1] == "server" && f[3] == "addr":
		g.check(command, f[4])
	}
}

// Snapshot checks every server of a state.
func (g *AddressGuard) Snapshot(snap dcm.Snapshot) {
	for _, b := range snap.Backends {
		for _, s := range b.Servers {
			if s.Addr != "" {
				g.check("server "+b.Name+"/"+s.Name, s.Addr)
			}
		}
	}
}

// ConfigDir checks the server lines of the configuration dcm wrote in dir,
// haproxy.cfg and the backends' files (a missing one has none).
func (g *AddressGuard) ConfigDir(dir string) {
	f, err := haproxy.ReadFiles(dir)
	if err != nil {
		return
	}
	g.ConfigText(bufio.NewScanner(bytes.NewReader(f.Text())))
}

// ConfigText checks the server lines a scanner reads.
func (g *AddressGuard) ConfigText(sc *bufio.Scanner) {
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 3 && (f[0] == "server" || f[0] == "server-template") {
			addr := f[2]
			if f[0] == "server-template" && len(f) >= 4 {
				addr = f[3]
			}
			if strings.HasPrefix(addr, "unix@") || strings.HasPrefix(addr, "abns@") {
				continue // a socket of this host's, as the HTTPS frontend's hop is
			}
			g.check("haproxy.cfg: "+strings.Join(f, " "), hostOf(addr))
		}
	}
}

// Err lists the addresses outside the rule, nil when there was none.
func (g *AddressGuard) Err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.violations) == 0 {
		return nil
	}
	return errors.New("HAProxy was handed addresses outside 127.0.0.0/8 and the test's own network namespace:\n  " +
		strings.Join(g.violations, "\n  "))
}

// hostOf is the address of "addr:port" (or addr alone).
func hostOf(hostport string) string {
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		return host
	}
	return hostport
}
