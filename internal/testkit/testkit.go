// Package testkit holds what the tests that drive the real haproxy binary
// share: finding the binary, directories short enough for unix sockets,
// free loopback ports and a logger that writes into the test's log.
package testkit

import (
	"io"
	"log/slog"
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

// FreeAddr finds a free loopback TCP address.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
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
