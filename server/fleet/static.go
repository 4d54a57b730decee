package fleet

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Static is a fixed list of peers (--peers).
type Static []Peer

func (s Static) Peers() []Peer { return s }

// ParseStatic reads --peers: the portals' URLs, the same list on every
// replica. The one this replica serves — its host:port is listen, the
// portal's address — is marked Self; when listen's host is unspecified
// (0.0.0.0, ::) a URL on its port whose host is one of local's addresses
// is.
func ParseStatic(urls []string, listen string, local func(host string) bool) (Static, error) {
	lhost, lport, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("portal address %q: %w", listen, err)
	}
	anyHost := lhost == "" || net.ParseIP(lhost) != nil && net.ParseIP(lhost).IsUnspecified()
	var out Static
	seen := map[string]bool{}
	for _, raw := range urls {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Port() == "" ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
			return nil, fmt.Errorf("--peers: %q: want http(s)://host:port", raw)
		}
		base := u.Scheme + "://" + u.Host
		if seen[base] {
			continue
		}
		seen[base] = true
		self := u.Host == listen || (u.Port() == lport && (anyHost && local(u.Hostname()) || sameLoopback(u.Hostname(), lhost)))
		out = append(out, Peer{Name: u.Host, URL: base, Self: self})
	}
	return out, nil
}

// sameLoopback: localhost names the loopback address the portal listens on.
func sameLoopback(host, listenHost string) bool {
	return host == "localhost" && (listenHost == "127.0.0.1" || listenHost == "::1")
}

// LocalAddress reports whether host is one of this machine's addresses.
func LocalAddress(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}
