package haproxy

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

// workerRSS reads the resident memory of HAProxy's current worker.
func workerRSS(tb testing.TB, d *Driver) int64 {
	tb.Helper()
	info, err := d.Info(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", info.Pid))
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return kb * 1024
		}
	}
	tb.Fatal("no VmRSS")
	return 0
}

// BenchmarkMemoryCosts measures what the what-if planner's memory estimate
// multiplies (dcm.MemoryCosts): the worker's RSS per empty HTTP backend
// (with its map entry), per empty passthrough backend (with its SNI map
// entry), per server in haproxy.cfg, per server added with add server.
// It runs once whatever b.N is: go test -run '^$' -bench MemoryCosts ./dcm/haproxy/
func BenchmarkMemoryCosts(b *testing.B) {
	const n, perBackend = 1000, 8
	empty, _ := startDriver(b, dcm.State{})
	base := workerRSS(b, empty)
	backends := bigState(n, 0)
	for i := range backends.Backends {
		backends.Backends[i].Servers = nil
	}
	d, _ := startDriver(b, backends)
	withBackends := workerRSS(b, d)

	withServers, _ := startDriver(b, bigState(n, perBackend))
	cfgServers := workerRSS(b, withServers)

	var ops []dcm.Op
	for i, be := range backends.Backends {
		ops = append(ops, dcm.Op{Kind: dcm.OpAddServer, Backend: be.Name, Server: "dyn:http",
			Addr: fmt.Sprintf("127.9.%d.%d", i/250, i%250+1), Port: 8080, Weight: 1})
	}
	if err := d.Apply(context.Background(), ops, dcm.State{}); err != nil {
		b.Fatal(err)
	}
	runtimeServers := workerRSS(b, d)

	// Passthrough backends are measured apart: they keep their route's
	// allowlist and rate-limit rules and stick table (renderBackend),
	// which HTTP backends leave to the HTTP frontends. With an HTTPS
	// address on both sides of the difference, so that fe_tls loads the
	// SNI map their entries are in, as fe_http loads the HTTP backends'.
	https := func(c *DriverConfig) { c.Settings.HTTPSBind = testkit.FreeAddr(b) }
	emptyTLS, _ := startDriver(b, dcm.State{}, https)
	baseTLS := workerRSS(b, emptyTLS)
	tcp, _ := startDriver(b, passthroughState(n), https)
	withTCP := workerRSS(b, tcp)

	for b.Loop() {
	}
	b.ReportMetric(float64(withBackends-base)/n, "bytes/backend")
	b.ReportMetric(float64(withTCP-baseTLS)/n, "bytes/tcp-backend")
	b.ReportMetric(float64(cfgServers-withBackends)/(n*perBackend), "bytes/cfg-server")
	b.ReportMetric(float64(runtimeServers-withBackends)/n, "bytes/runtime-server")
}

// passthroughState is bigState's n routes without servers as passthrough
// routes: a TCP backend each, found by its host in the SNI map.
func passthroughState(n int) dcm.State {
	st := bigState(n, 0)
	for i, be := range st.Backends {
		rt := be.Route
		rt.Kind, rt.Balance = dcm.KindPassthrough, dcm.BalanceSource
		st.Backends[i] = &dcm.Backend{Name: rt.BackendName(), Kind: rt.Kind, Route: rt}
	}
	return st
}
