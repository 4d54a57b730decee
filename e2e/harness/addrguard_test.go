package harness

import (
	"bufio"
	"net/netip"
	"strings"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

// TestAddressGuard: only 127.0.0.0/8 and the test's own namespace pass,
// wherever the address reaches HAProxy (commands, a state, the cfg).
func TestAddressGuard(t *testing.T) {
	podNet := netip.MustParsePrefix("10.201.0.0/16")
	tests := []struct {
		name   string
		podNet netip.Prefix
		feed   func(g *AddressGuard)
		bad    bool
	}{
		{"add server on loopback", netip.Prefix{}, func(g *AddressGuard) {
			g.Command("add server be_http:ns:r/s1 127.0.4.1:8080 weight 1 disabled")
		}, false},
		{"add server elsewhere", netip.Prefix{}, func(g *AddressGuard) {
			g.Command("add server be_http:ns:r/s1 10.0.0.1:8080 weight 1 disabled")
		}, true},
		{"add server in the pod network", podNet, func(g *AddressGuard) {
			g.Command("add server be_http:ns:r/s1 10.201.1.7:8080 weight 1 disabled")
		}, false},
		{"add server next to the pod network", podNet, func(g *AddressGuard) {
			g.Command("add server be_http:ns:r/s1 10.202.1.7:8080 weight 1 disabled")
		}, true},
		{"set server addr", netip.Prefix{}, func(g *AddressGuard) { g.Command("set server be_http:ns:r/s1 addr 192.168.1.2 port 80") }, true},
		{"an IPv6 address", netip.Prefix{}, func(g *AddressGuard) { g.Command("add server be/s [fd00::1]:80 weight 1") }, true},
		{"other commands", netip.Prefix{}, func(g *AddressGuard) { g.Command("set server be/s state ready") }, false},
		{"a state", netip.Prefix{}, func(g *AddressGuard) {
			g.Snapshot(dcm.Snapshot{Backends: []*dcm.Backend{{Name: "b", Servers: []dcm.Server{{Name: "s", Addr: "8.8.8.8", Port: 53}}}}})
		}, true},
		{"a slot placeholder", netip.Prefix{}, func(g *AddressGuard) {
			g.ConfigText(bufio.NewScanner(strings.NewReader("backend b\n    server slot1 0.0.0.0:0 disabled\n")))
		}, false},
		{"a unix socket", netip.Prefix{}, func(g *AddressGuard) {
			g.ConfigText(bufio.NewScanner(strings.NewReader("backend b\n    server fe_https unix@/tmp/x/https.sock send-proxy-v2\n")))
		}, false},
		{"a cfg server line", netip.Prefix{}, func(g *AddressGuard) {
			g.ConfigText(bufio.NewScanner(strings.NewReader("backend b\n    server a 127.0.0.2:80 weight 1\n    server b 10.244.1.1:8080 weight 1\n")))
		}, true},
	}
	for _, tt := range tests {
		g := NewAddressGuard(tt.podNet)
		tt.feed(g)
		if err := g.Err(); (err != nil) != tt.bad {
			t.Errorf("%s: err = %v, want an error: %v", tt.name, err, tt.bad)
		}
	}
}
