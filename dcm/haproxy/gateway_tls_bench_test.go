package haproxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/routing"
	"github.com/dcm-router/dcm/internal/testkit"
)

// BenchmarkGatewayTLSLookup measures what picking a TLSRoute by the SNI
// costs HAProxy per connection (fe_gw_tls's Lua action over the gateway
// maps), at 10 TLSRoutes and at 10,000 on one bind, against the Ingress
// way (fe_tls: one map_str of the SNI): a HAProxy of one thread in front
// of one TLS pod, a new TLS connection per op (the handshake is the
// pod's, HAProxy only reads the ClientHello and relays), SNI one route's
// host at random; a connection whose lookup finds nothing is refused, so
// every op proves a hit. haproxy-us/op is HAProxy's CPU time per
// connection, relaying included.
func BenchmarkGatewayTLSLookup(b *testing.B) {
	for _, way := range []string{"lua", "map"} {
		for _, n := range []int{10, 10000} {
			b.Run(fmt.Sprintf("%s/routes=%d", way, n), func(b *testing.B) {
				bind, pid := startTLSLookup(b, n, way == "lua")
				d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}}
				r := rand.New(rand.NewPCG(1, 2))
				cpu0 := procCPU(b, pid)
				for b.Loop() {
					d.Config.ServerName = fmt.Sprintf("h%05d.example", r.IntN(n))
					c, err := d.Dial("tcp", bind)
					if err != nil {
						b.Fatalf("SNI %s: %v", d.Config.ServerName, err)
					}
					line, err := bufio.NewReader(c).ReadString('\n')
					c.Close()
					if err != nil || line != "ok\n" {
						b.Fatalf("SNI %s: %q %v", d.Config.ServerName, line, err)
					}
				}
				b.ReportMetric(float64(procCPU(b, pid)-cpu0)/float64(b.N), "haproxy-us/op")
			})
		}
	}
}

// startTLSLookup starts the pod and a HAProxy that looks the SNI up in
// the gateway maps of n passthrough routes (lua) or in one SNI map.
func startTLSLookup(tb testing.TB, n int, lua bool) (bind string, pid int) {
	tb.Helper()
	pod := tlsOK(tb)
	dir := testkit.ShortDir(tb)
	mustf(tb, os.MkdirAll(filepath.Join(dir, MapsDir), 0o755), "maps dir")
	bind = testkit.FreeAddr(tb)
	var backends []*dcm.Backend
	var sni strings.Builder
	for i := range n {
		host := fmt.Sprintf("h%05d.example", i)
		r := dcm.Route{Namespace: "gw", Name: fmt.Sprintf("r%05d", i), Kind: dcm.KindPassthrough, Balance: dcm.DefaultBalance(dcm.KindPassthrough),
			Gateway: &dcm.GatewayRoute{Bind: bind, Hostnames: []string{host}, Rank: fmt.Sprintf("%05d", i)}}
		backends = append(backends, &dcm.Backend{Name: r.BackendName(), Kind: r.Kind, Route: r})
		fmt.Fprintf(&sni, "%s %s\n", host, r.BackendName())
	}
	tables := routing.Tables(backends)
	for _, t := range dcm.MapTables {
		mustf(tb, os.WriteFile(filepath.Join(dir, MapFile(t)), mapText(tables[t]), 0o644), "write map")
	}
	mustf(tb, os.WriteFile(filepath.Join(dir, "sni.map"), []byte(sni.String()), 0o644), "write sni map")
	mustf(tb, os.WriteFile(filepath.Join(dir, GatewayLuaName), GatewayLua(), 0o644), "write lua")
	var cfg bytes.Buffer
	cfg.WriteString("global\n    default-path config\n    nbthread 1\n    tune.bufsize 32768\n    lua-load " + GatewayLuaName + "\n")
	cfg.WriteString("defaults\n    mode tcp\n    timeout client 30s\n    timeout server 30s\n    timeout connect 5s\n")
	fmt.Fprintf(&cfg, "frontend fe\n    bind %s\n    tcp-request inspect-delay 5s\n", bind)
	if lua {
		cfg.WriteString("    tcp-request content lua.dcm_gateway_tls if { req_ssl_hello_type 1 }\n")
	} else {
		cfg.WriteString("    tcp-request content set-var(txn.be) req_ssl_sni,lower,map_str(sni.map) if { req_ssl_hello_type 1 }\n")
	}
	cfg.WriteString("    tcp-request content reject if !{ var(txn.be) -m found }\n    default_backend pod\n")
	fmt.Fprintf(&cfg, "backend pod\n    server pod %s\n", pod)
	mustf(tb, os.WriteFile(filepath.Join(dir, ConfigName), cfg.Bytes(), 0o644), "write cfg")
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, testkit.HAProxy(tb), "-db", "-f", filepath.Join(dir, ConfigName))
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	mustf(tb, cmd.Start(), "start haproxy")
	tb.Cleanup(func() {
		cancel()
		_ = cmd.Wait() // killed: its error says so
	})
	testkit.Eventually(tb, "haproxy listens", 10*time.Second, func() error {
		c, err := net.DialTimeout("tcp", bind, time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	})
	return bind, cmd.Process.Pid
}

// tlsOK is a TLS server on loopback that answers "ok" once its handshake
// is done.
func tlsOK(tb testing.TB) string {
	tb.Helper()
	ca := testkit.NewCA(tb)
	leaf := ca.Leaf(tb, "*.example")
	cert, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
	mustf(tb, err, "key pair")
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	mustf(tb, err, "listen")
	tb.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				_, _ = io.WriteString(c, "ok\n")
			}()
		}
	}()
	return l.Addr().String()
}
