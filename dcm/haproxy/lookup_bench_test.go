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

// BenchmarkLookup measures what finding a request's route costs HAProxy,
// at 10 routes and at 10,000: the frontend's lookup rules as renderLookup
// writes them and the maps as routing.Tables builds them, in a HAProxy of
// one thread that answers with the backend found (http-request return, no
// pod), on keep-alive connections from 127.0.0.1; "none" is the same
// answer without the rules. Routes are ten per host, Prefix /p<n> and
// Prefix / on every host, and a request goes to a host of them at random,
// four elements under one of its prefixes. haproxy-us/op is HAProxy's own
// CPU time per request (/proc/<pid>/stat).
func BenchmarkLookup(b *testing.B) {
	for _, n := range []int{0, 10, 10000} {
		name := fmt.Sprintf("routes=%d", n)
		if n == 0 {
			name = "none"
		}
		b.Run(name, func(b *testing.B) {
			bind, pid, hosts := startLookup(b, n)
			hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			r := rand.New(rand.NewPCG(1, 2))
			cpu0 := procCPU(b, pid)
			for b.Loop() {
				h := r.IntN(max(hosts, 1))
				req, _ := http.NewRequest("GET", fmt.Sprintf("http://%s/p%d/a/b/c/d?q=1", bind, r.IntN(10)), nil)
				req.Host = fmt.Sprintf("h%04d.example", h)
				resp, err := hc.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if n > 0 && !bytes.HasPrefix(body, []byte("be_http:ns:")) {
					b.Fatalf("%s%s: %q", req.Host, req.URL.Path, body)
				}
			}
			b.ReportMetric(float64(procCPU(b, pid)-cpu0)/float64(b.N), "haproxy-us/op")
		})
	}
}

// startLookup runs a HAProxy whose frontend finds the backend of n routes
// (none: no lookup) and answers with it, until the benchmark ends; it
// returns the address, the process and the number of hosts.
func startLookup(tb testing.TB, n int) (bind string, pid int, hosts int) {
	tb.Helper()
	dir := testkit.ShortDir(tb)
	mustf(tb, os.MkdirAll(filepath.Join(dir, MapsDir), 0o755), "maps dir")
	var backends []*dcm.Backend
	for i := range n {
		host := fmt.Sprintf("h%04d.example", i/10)
		for _, path := range []string{fmt.Sprintf("/p%d", i%10), "/"} {
			if path == "/" && i%10 != 0 {
				continue
			}
			r := route("ns", fmt.Sprintf("r%05d-%d", i, len(path)), host, path, dcm.PathPrefix)
			backends = append(backends, &dcm.Backend{Name: r.BackendName(), Kind: r.Kind, Route: r})
		}
	}
	tables := routing.Tables(backends)
	for _, t := range dcm.MapTables {
		var buf bytes.Buffer
		for _, e := range tables[t] {
			buf.WriteString(e.Key + " " + e.Value() + "\n")
		}
		mustf(tb, os.WriteFile(filepath.Join(dir, MapFile(t)), buf.Bytes(), 0o644), "write map")
	}
	bind = testkit.FreeAddr(tb)
	var cfg bytes.Buffer
	cfg.WriteString("global\n    default-path config\n    nbthread 1\n    tune.bufsize 32768\n")
	cfg.WriteString("defaults\n    mode http\n    timeout client 30s\n    timeout server 30s\n    timeout connect 5s\n    timeout http-keep-alive 30s\n")
	fmt.Fprintf(&cfg, "frontend fe\n    bind %s\n", bind)
	if n > 0 {
		renderLookup(&cfg)
	}
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
