// Package testkit holds what the tests that drive the real haproxy binary
// share: finding the binary, directories short enough for unix sockets,
// free loopback ports and a logger that writes into the test's log.
package testkit

import (
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// HAProxy returns the haproxy binary; the test is skipped only when none is
// installed, and says so.
func HAProxy(tb testing.TB) string {
	tb.Helper()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		tb.Skipf("haproxy binary not found on PATH (%v): install Debian's haproxy package (make deps)", err)
	}
	return bin
}

// ShortDir is a per-test directory short enough for unix socket paths
// (108 bytes at most), removed when the test ends.
func ShortDir(tb testing.TB) string {
	tb.Helper()
	if dir := tb.TempDir(); len(dir)+len("/master.sock") < 100 {
		return dir
	}
	dir, err := os.MkdirTemp("", "dcm")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// FreeAddr finds a free loopback TCP address for a listener the test
// starts later (HAProxy's binds, dcm's portal). The port comes from below
// the kernel's ephemeral range: a port the kernel handed out and took back
// is the next source port of any outgoing connection on this busy machine
// (HAProxy to pods, clients to HAProxy, other test packages), and one such
// connection is enough for HAProxy's bind to fail. Below the range only
// listeners take ports, and FreeAddr checks the one it picks is not taken.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	low := ephemeralLow()
	for range 200 {
		port := freePortFloor + rand.IntN(low-freePortFloor)
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue // taken: try another
		}
		l.Close()
		return addr
	}
	tb.Fatalf("no free loopback port in %d-%d after 200 tries", freePortFloor, low-1)
	return ""
}

// freePortFloor keeps FreeAddr above the ports services commonly listen on.
const freePortFloor = 10000

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// default when it cannot be read).
func ephemeralLow() int {
	low := 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return low
	}
	if f := strings.Fields(string(b)); len(f) == 2 {
		if n, err := strconv.Atoi(f[0]); err == nil && n > freePortFloor+1000 {
			low = n
		}
	}
	return low
}

// Logger writes into the test's log: warnings and errors, everything when
// DCM_TEST_LOG is set.
func Logger(tb testing.TB) *slog.Logger {
	level := slog.LevelWarn
	if os.Getenv("DCM_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(Writer{tb}, &slog.HandlerOptions{Level: level}))
}

// Writer writes each line into the test's log.
type Writer struct{ TB testing.TB }

func (w Writer) Write(p []byte) (int, error) {
	w.TB.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Backend is a small HTTP server standing in for a pod: it answers its name,
// after sleeping N milliseconds when asked /slow?ms=N.
type Backend struct {
	Name string
	Addr string
	Port int
	// held counts the requests sleeping on ?ms= now (nil for a Backend
	// made by hand).
	held *atomic.Int64
}

// Held says how many requests asked for ?ms= are in the handler now: a test
// that needs requests in flight on the pod waits for them, not for a clock.
func (b Backend) Held() int {
	if b.held == nil {
		return 0
	}
	return int(b.held.Load())
}

// StartBackend listens on ip (any free port) until the test ends.
func StartBackend(tb testing.TB, ip, name string) Backend {
	tb.Helper()
	return StartBackendOn(tb, ip, 0, name)
}

// StartBackendOn listens on ip:port until the test ends.
func StartBackendOn(tb testing.TB, ip string, port int, name string) Backend {
	tb.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		tb.Fatalf("listen on %s: %v", ip, err)
	}
	return ServeBackend(tb, l, name)
}

// ServeBackend is StartBackend on a listener the caller opened, such as
// one inside a test's network namespace (e2e/podnet): it answers every
// request on l with name, after ?ms= milliseconds when asked, until the
// test ends, and then closes l.
func ServeBackend(tb testing.TB, l net.Listener, name string) Backend {
	tb.Helper()
	held := &atomic.Int64{}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ms, err := strconv.Atoi(r.URL.Query().Get("ms")); err == nil {
			held.Add(1)
			time.Sleep(time.Duration(min(ms, 60000)) * time.Millisecond)
			held.Add(-1)
		}
		io.WriteString(w, name)
	}), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	tb.Cleanup(func() { srv.Close() })
	a := l.Addr().(*net.TCPAddr)
	return Backend{Name: name, Addr: a.IP.String(), Port: a.Port, held: held}
}
