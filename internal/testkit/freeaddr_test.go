package testkit

import (
	"net"
	"strconv"
	"testing"
)

// TestFreeAddrBelowEphemeralRange: the port is bindable and outside the
// range the kernel picks source ports from.
func TestFreeAddrBelowEphemeralRange(t *testing.T) {
	low := ephemeralLow()
	for range 20 {
		addr := FreeAddr(t)
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(port)
		if host != "127.0.0.1" || n < freePortFloor || n >= low {
			t.Fatalf("FreeAddr = %s, want 127.0.0.1 with a port in %d-%d", addr, freePortFloor, low-1)
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("listen on FreeAddr's %s: %v", addr, err)
		}
		l.Close()
	}
}
