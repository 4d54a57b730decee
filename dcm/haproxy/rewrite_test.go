package haproxy

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

// rewriteRule is in every HTTP frontend, before the header rules.
const rewriteRule = "    http-request lua.dcm_rewrite if { var(txn.be),map_str(maps/rewrite.map) -m found }\n"

func TestRewriteLuaReadsTheRewriteMap(t *testing.T) {
	if !strings.Contains(rewriteLua, `Map.new("`+MapFile(dcm.MapRewrite)+`", Map._str)`) {
		t.Errorf("the script does not read %s", MapFile(dcm.MapRewrite))
	}
}

// startPathPod answers every request with the path and query it got.
func startPathPod(tb testing.TB, ip string) testkit.Backend {
	tb.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		tb.Fatalf("listen on %s: %v", ip, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(r.RequestURI))
	}), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	tb.Cleanup(func() { srv.Close() })
	a := l.Addr().(*net.TCPAddr)
	return testkit.Backend{Addr: ip, Port: a.Port, Name: "path-" + strings.ReplaceAll(ip, ".", "-")}
}

// TestRewriteTarget: OpenShift's rewrite-target through the real binary.
// A route /foo with target / sends /foo/bar as /bar and /foo as /, the
// query kept; a route without a path of its own (/) puts the target
// before the whole path; a route on a spare is keyed by the spare. The
// targets then change, and one is removed, by map replaces: the same
// worker serves the new paths.
func TestRewriteTarget(t *testing.T) {
	t.Parallel()
	pod := startPathPod(t, "127.0.0.10")
	foo := route("ns", "foo", "rw.test", "/foo", dcm.PathPrefix)
	foo.HTTP.RewriteTarget = "/"
	whole := route("ns", "whole", "whole.test", "/", dcm.PathPrefix)
	whole.HTTP.RewriteTarget = "/app"
	plain := route("ns", "plain", "plain.test", "/x", dcm.PathPrefix)
	onSpare := func(b dcm.Backend) dcm.Backend { b.Slot = "be_http:_pool:1"; return b }
	build := func(foo, whole dcm.Route) dcm.State {
		return state(onSpare(backendFor(foo, serverFor(pod, dcm.StateReady))),
			backendFor(whole, serverFor(pod, dcm.StateReady)), backendFor(plain, serverFor(pod, dcm.StateReady)))
	}
	st := build(foo, whole)
	d, bind := startDriver(t, st)
	pid := workerPID(t, d)
	check := func(when string, cases [][3]string) {
		t.Helper()
		for _, c := range cases {
			if code, body := get(t, bind, c[0], c[1]); code != 200 || body != c[2] {
				t.Errorf("%s: %s%s: %d %q, want %q", when, c[0], c[1], code, body, c[2])
			}
		}
	}
	check("at start", [][3]string{
		{"rw.test", "/foo/bar", "/bar"}, {"rw.test", "/foo", "/"}, {"rw.test", "/foo/", "/"},
		{"rw.test", "/foo/a/b?q=1&r=%2F", "/a/b?q=1&r=%2F"},
		{"whole.test", "/", "/app/"}, {"whole.test", "/x/y?z", "/app/x/y?z"},
		{"plain.test", "/x/y", "/x/y"},
	})

	foo.HTTP.RewriteTarget = "/v2"
	whole.HTTP.RewriteTarget = ""
	next := build(foo, whole)
	mustf(t, d.Apply(context.Background(), mapReplaces(st, next), next), "apply the new targets")
	mustf(t, d.Write(next), "write")
	filesEqualRuntime(t, d)
	check("after the change", [][3]string{
		{"rw.test", "/foo/bar", "/v2/bar"}, {"rw.test", "/foo", "/v2"},
		{"whole.test", "/x/y", "/x/y"},
	})
	if workerPID(t, d) != pid {
		t.Error("the worker changed")
	}
}

// BenchmarkRewriteLua measures what the Lua rewrite costs a request: the
// same pod behind a route with a rewrite target and one without (which
// pays one map lookup in the cfg and no Lua). haproxy-us/op is the
// worker's own CPU time (utime+stime of /proc/<pid>/stat) per request.
func BenchmarkRewriteLua(b *testing.B) {
	pod := startPathPod(b, "127.0.0.10")
	rw := route("ns", "rw", "rw.test", "/foo", dcm.PathPrefix)
	rw.HTTP.RewriteTarget = "/"
	plain := route("ns", "plain", "plain.test", "/foo", dcm.PathPrefix)
	d, bind := startDriver(b, state(backendFor(rw, serverFor(pod, dcm.StateReady)), backendFor(plain, serverFor(pod, dcm.StateReady))))
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	for _, c := range []struct{ name, host, want string }{{"rewrite", "rw.test", "/bar"}, {"plain", "plain.test", "/foo/bar"}} {
		b.Run(c.name, func(b *testing.B) {
			pid := workerPIDOf(b, d)
			cpu0 := procCPU(b, pid)
			for b.Loop() {
				req, _ := http.NewRequest("GET", "http://"+bind+"/foo/bar", nil)
				req.Host = c.host
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				body := make([]byte, 64)
				n, _ := resp.Body.Read(body)
				resp.Body.Close()
				if string(body[:n]) != c.want {
					b.Fatalf("%q", body[:n])
				}
			}
			b.ReportMetric(float64(procCPU(b, pid)-cpu0)/float64(b.N), "haproxy-us/op")
		})
	}
}

func workerPIDOf(tb testing.TB, d *Driver) int {
	tb.Helper()
	info, err := d.Info(context.Background())
	mustf(tb, err, "show info")
	return info.Pid
}

// procCPU is a process's user and system CPU time in microseconds.
func procCPU(tb testing.TB, pid int) int64 {
	tb.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	mustf(tb, err, "read stat")
	// Fields after the command (which may hold spaces) start at state, field 3.
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return (ut + st) * 1e6 / 100 // USER_HZ is 100 on Linux
}
