package haproxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/routing"
	"github.com/dcm-router/dcm/internal/testkit"
)

// BenchmarkGatewayLookup measures what finding a request's Gateway route
// costs HAProxy (the Lua action over the gateway maps), at 10 routes and
// at 10,000, as BenchmarkLookup does for the host and path maps: a HAProxy
// of one thread that answers with the backend found, keep-alive requests
// from 127.0.0.1. Routes are ten per hostname (PathPrefix /p<n>, one of
// them with a header match too), a tenth of the hostnames a wildcard, and
// a catch-all on any host; a request goes to a hostname at random, four
// elements under one of its prefixes. haproxy-us/op is HAProxy's CPU time
// per request.
func BenchmarkGatewayLookup(b *testing.B) {
	for _, n := range []int{10, 10000} {
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			bind, pid, hosts := startGatewayLookup(b, n)
			hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			r := rand.New(rand.NewPCG(1, 2))
			cpu0 := procCPU(b, pid)
			for b.Loop() {
				h := r.IntN(hosts)
				req, _ := http.NewRequest("GET", fmt.Sprintf("http://%s/p%d/a/b/c/d?q=1", bind, r.IntN(10)), nil)
				req.Host = fmt.Sprintf("h%04d.example", h)
				if h%10 == 9 {
					req.Host = "x.h" + fmt.Sprintf("%04d", h) + ".example" // under the wildcard
				}
				resp, err := hc.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if !bytes.HasPrefix(body, []byte("be_http:gw:r")) {
					b.Fatalf("%s%s: %q", req.Host, req.URL.Path, body)
				}
			}
			b.ReportMetric(float64(procCPU(b, pid)-cpu0)/float64(b.N), "haproxy-us/op")
		})
	}
}

func startGatewayLookup(tb testing.TB, n int) (bind string, pid int, hosts int) {
	tb.Helper()
	dir := testkit.ShortDir(tb)
	mustf(tb, os.MkdirAll(filepath.Join(dir, MapsDir), 0o755), "maps dir")
	bind = testkit.FreeAddr(tb)
	var backends []*dcm.Backend
	add := func(name string, hosts []string, m dcm.HTTPMatch) {
		r := dcm.Route{Namespace: "gw", Name: name, Kind: dcm.KindHTTP, Balance: dcm.BalanceRoundRobin,
			Gateway: &dcm.GatewayRoute{Bind: bind, Hostnames: hosts, Matches: []dcm.HTTPMatch{m}, Rank: name}}
		backends = append(backends, &dcm.Backend{Name: r.BackendName(), Kind: r.Kind, Route: r})
	}
	for i := range n {
		host := fmt.Sprintf("h%04d.example", i/10)
		if (i/10)%10 == 9 {
			host = "*." + host
		}
		m := dcm.HTTPMatch{PathType: dcm.GatewayPathPrefix, Path: fmt.Sprintf("/p%d", i%10)}
		if i%10 == 0 {
			m.Headers = []dcm.ValueMatch{{Name: "X-Canary", Value: "yes"}}
		}
		add(fmt.Sprintf("r%05d", i), []string{host}, m)
	}
	add("r-root", nil, dcm.HTTPMatch{PathType: dcm.GatewayPathPrefix, Path: "/"})
	tables := routing.Tables(backends)
	for _, t := range dcm.MapTables {
		mustf(tb, os.WriteFile(filepath.Join(dir, MapFile(t)), mapText(tables[t]), 0o644), "write map")
	}
	mustf(tb, os.WriteFile(filepath.Join(dir, GatewayLuaName), GatewayLua(), 0o644), "write lua")
	var cfg bytes.Buffer
	cfg.WriteString("global\n    default-path config\n    nbthread 1\n    tune.bufsize 32768\n    lua-load " + GatewayLuaName + "\n")
	cfg.WriteString("defaults\n    mode http\n    timeout client 30s\n    timeout server 30s\n    timeout connect 5s\n    timeout http-keep-alive 30s\n")
	fmt.Fprintf(&cfg, "frontend fe\n    bind %s\n    http-request lua.dcm_gateway\n", bind)
	cfg.WriteString("    http-request return status 200 content-type text/plain lf-string \"%[var(txn.be)]\"\n")
	mustf(tb, os.WriteFile(filepath.Join(dir, ConfigName), cfg.Bytes(), 0o644), "write cfg")
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, testkit.HAProxy(tb), "-db", "-f", filepath.Join(dir, ConfigName))
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	mustf(tb, cmd.Start(), "start haproxy")
	tb.Cleanup(func() {
		cancel()
		_ = cmd.Wait() // killed: its error says so
	})
	testkit.Eventually(tb, "haproxy answers", 10*time.Second, func() error {
		resp, err := http.Get("http://" + bind + "/")
		if err != nil {
			return err
		}
		return resp.Body.Close()
	})
	return bind, cmd.Process.Pid, (n + 9) / 10
}
