package haproxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

// TestRouteTimeouts: with a default server timeout of 1s, a route whose
// timeout is 2s serves a 1.5s request and answers 504 to a 2.5s one, and
// a route without one answers 504 to the 1.5s request; a tunnel (an
// upgraded connection) of a route with a 3s tunnel timeout outlives the
// server timeout idle, then closes. The route's timeout changes by a map
// replace, with the same worker.
func TestRouteTimeouts(t *testing.T) {
	t.Parallel()
	pod := startHeaderPod(t, "127.0.0.4")
	slow := route("ns", "slow", "slow.test", "/", dcm.PathPrefix)
	slow.HTTP.TimeoutMillis = 2000
	slow.HTTP.TunnelMillis = 3000
	plain := route("ns", "plain", "plain.test", "/", dcm.PathPrefix)
	// The slow route rides a spare: its settings are keyed by the spare's name.
	onSpare := func(b dcm.Backend) dcm.Backend { b.Slot = "be_http:_pool:1"; return b }
	st := state(onSpare(backendFor(slow, serverFor(pod, dcm.StateReady))), backendFor(plain, serverFor(pod, dcm.StateReady)))
	d, bind := startDriver(t, st, func(c *DriverConfig) {
		c.Settings.Timeouts = Timeouts{Server: time.Second, Tunnel: time.Second}
	})
	pid := workerPID(t, d)
	status := func(host string, ms int) int {
		t.Helper()
		resp, _ := request(t, "http", bind, host, fmt.Sprintf("/?ms=%d", ms), nil)
		return resp.StatusCode
	}
	for _, c := range []struct {
		host     string
		ms, code int
	}{{"slow.test", 1500, 200}, {"slow.test", 2500, 504}, {"plain.test", 1500, 504}, {"plain.test", 200, 200}} {
		if got := status(c.host, c.ms); got != c.code {
			t.Errorf("%s, %dms: %d, want %d", c.host, c.ms, got, c.code)
		}
	}

	// A tunnel idle past the server timeout (1s) stays open; idle past
	// the route's tunnel timeout (3s) it is closed.
	conn, err := net.DialTimeout("tcp", bind, 5*time.Second)
	mustf(t, err, "dial")
	defer conn.Close()
	io.WriteString(conn, "GET / HTTP/1.1\r\nHost: slow.test\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	br := bufio.NewReader(conn)
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	line, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 101") {
		t.Fatalf("upgrade: %q %v", line, err)
	}
	for line != "\r\n" && err == nil {
		line, err = br.ReadString('\n')
	}
	echo := func(msg string) error {
		if _, err := io.WriteString(conn, msg+"\n"); err != nil {
			return err
		}
		got, err := br.ReadString('\n')
		if err != nil || got != msg+"\n" {
			return fmt.Errorf("echo %q: %q %v", msg, got, err)
		}
		return nil
	}
	time.Sleep(2 * time.Second) // idle: past the server timeout, within the tunnel's
	if err := echo("after 2s"); err != nil {
		t.Fatalf("the tunnel did not outlive the server timeout: %v", err)
	}
	start := time.Now()
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("the tunnel sent data")
	}
	if idle := time.Since(start); idle < 2500*time.Millisecond || idle > 6*time.Second {
		t.Errorf("the idle tunnel closed after %s, want about 3s", idle)
	}

	// 2s → 4s, at runtime.
	next := state(onSpare(backendFor(func() dcm.Route { r := slow; r.HTTP.TimeoutMillis = 4000; return r }(), serverFor(pod, dcm.StateReady))),
		backendFor(plain, serverFor(pod, dcm.StateReady)))
	mustf(t, d.Apply(context.Background(), mapReplaces(st, next), next), "apply the timeout change")
	mustf(t, d.Write(next), "write")
	filesEqualRuntime(t, d)
	if got := status("slow.test", 2500); got != 200 {
		t.Errorf("after the change to 4s, 2.5s: %d, want 200", got)
	}
	if workerPID(t, d) != pid {
		t.Error("the worker changed")
	}
}

// TestPassthroughTimeouts: a passthrough route's timeouts are its TCP
// backend's own: with a 30s default, a TLS connection to the pod left idle
// is closed by HAProxy after the route's 1.5s tunnel timeout; a route
// without one keeps the defaults in its backend.
func TestPassthroughTimeouts(t *testing.T) {
	t.Parallel()
	ca := testkit.NewCA(t)
	pod := testkit.StartTLSBackend(t, "127.0.0.6", "db-pod", ca.Leaf(t, "db.test"))
	db := route("ns", "db", "db.test", "/", dcm.PathPrefix)
	db.Kind, db.HTTP.TimeoutMillis, db.HTTP.TunnelMillis = dcm.KindPassthrough, 1500, 1500
	other := route("ns", "other", "other.test", "/", dcm.PathPrefix)
	other.Kind = dcm.KindPassthrough
	st := state(backendFor(db, serverFor(pod, dcm.StateReady)), backendFor(other, serverFor(pod, dcm.StateReady)))
	https := testkit.FreeAddr(t)
	d, _ := startDriver(t, st, func(c *DriverConfig) { c.Settings.HTTPSBind = https })
	cfg, err := readConfig(d.cfg.WorkDir)
	mustf(t, err, "read cfg")
	if !strings.Contains(string(cfg), "\nbackend be_passthrough:ns:db\n    mode tcp\n    timeout server 1500ms\n    timeout tunnel 1500ms\n") ||
		!strings.Contains(string(cfg), "\nbackend be_passthrough:ns:other\n    mode tcp\n    balance") {
		t.Fatalf("cfg:\n%s", cfg)
	}
	conn, err := tls.Dial("tcp", https, &tls.Config{ServerName: "db.test", RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12})
	mustf(t, err, "TLS through the passthrough route")
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	if _, err := conn.Read(make([]byte, 1)); err == nil {
		t.Fatal("the pod sent data")
	}
	if idle := time.Since(start); idle < time.Second || idle > 5*time.Second {
		t.Errorf("the idle connection closed after %s, want about 1.5s", idle)
	}
}
