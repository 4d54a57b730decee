package haproxy

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/dcm-router/dcm/dcm"
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
// multiplies (dcm.MemoryCosts): the worker's RSS per empty backend (with its
// map entry), per server in haproxy.cfg, per server added with add server.
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

	for b.Loop() {
	}
	b.ReportMetric(float64(withBackends-base)/n, "bytes/backend")
	b.ReportMetric(float64(cfgServers-withBackends)/(n*perBackend), "bytes/cfg-server")
	b.ReportMetric(float64(runtimeServers-withBackends)/n, "bytes/runtime-server")
}
