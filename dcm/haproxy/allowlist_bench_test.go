package haproxy

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

// BenchmarkAllowlistLua measures what the allowlist rule costs a request,
// on a keep-alive connection from 127.255.255.1: a route without a list
// (one map lookup in the cfg, no Lua); one whose list is that address (the
// script's set); one whose list is a network of it (match_addr); a long
// list in chunks, 999 networks of other first bytes and that network (the
// script tries the network's bucket only); and the worst case, a long
// list whose 1,000 networks all share the client's first byte, its own
// last. haproxy-us/op is the worker's own CPU time per request, as
// BenchmarkRewriteLua reports it.
func BenchmarkAllowlistLua(b *testing.B) {
	const client, own = "127.255.255.1", "127.255.255.0/24"
	pod := testkit.StartBackend(b, "127.0.0.10", "pod")
	srv := serverFor(pod, dcm.StateReady)
	many := func(first string) []string {
		list := []string{own}
		for i := range 999 {
			list = append(list, fmt.Sprintf("%s.%d.%d.0/24", first, i/250, i%250))
		}
		return canonicalList(b, list...)
	}
	cases := []struct {
		name string
		list []string
	}{
		{"open", nil}, {"address", []string{client}}, {"network", []string{own}},
		{"long", many("10")}, {"long-one-bucket", many("127")},
	}
	var backends []dcm.Backend
	for _, c := range cases {
		r := route("ns", c.name, c.name+".test", "/", dcm.PathPrefix)
		r.Allowlist = c.list
		backends = append(backends, backendFor(r, srv))
	}
	d, bind := startDriver(b, state(backends...))
	if n := len(chunkKeys(string(mustRuntimeMap(b, d)))); n < 4 {
		b.Fatalf("the long lists have %d chunks", n)
	}
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(client)}, Timeout: 5 * time.Second}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1, DialContext: dialer.DialContext}}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			pid := workerPIDOf(b, d)
			cpu0 := procCPU(b, pid)
			for b.Loop() {
				req, _ := http.NewRequest("GET", "http://"+bind+"/", nil)
				req.Host = c.name + ".test"
				resp, err := hc.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				body := make([]byte, 16)
				n, _ := resp.Body.Read(body)
				resp.Body.Close()
				if string(body[:n]) != "pod" {
					b.Fatalf("%q", body[:n])
				}
			}
			b.ReportMetric(float64(procCPU(b, pid)-cpu0)/float64(b.N), "haproxy-us/op")
		})
	}
}

func mustRuntimeMap(tb testing.TB, d *Driver) []byte {
	tb.Helper()
	runtime, err := d.RuntimeMaps(context.Background())
	mustf(tb, err, "runtime maps")
	return runtime[MapFile(dcm.MapAllowlist)]
}
