package haproxy

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
)

// haproxyBin skips the test only when no haproxy binary is installed.
func haproxyBin(tb testing.TB) string {
	tb.Helper()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		tb.Skipf("haproxy binary not found on PATH (%v): install Debian's haproxy package (make deps)", err)
	}
	return bin
}

// workDir is a per-test directory short enough for unix socket paths.
func workDir(tb testing.TB) string {
	tb.Helper()
	dir := tb.TempDir()
	if len(dir)+len("/admin.sock") < 100 {
		return dir
	}
	dir, err := os.MkdirTemp("", "dcmha")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// freeAddr finds a free loopback TCP address.
func freeAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// echoServer is a tiny HTTP server on host answering its name.
type echoServer struct {
	Name string
	Addr string
	Port int
}

func startEcho(tb testing.TB, host, name string) echoServer {
	tb.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		tb.Fatalf("listen on %s: %v", host, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, name)
	}), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	tb.Cleanup(func() { srv.Close() })
	ap := l.Addr().(*net.TCPAddr)
	return echoServer{Name: name, Addr: ap.IP.String(), Port: ap.Port}
}

func testLogger(tb testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{tb}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ tb testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// startDriver starts HAProxy serving st; Cleanup stops and reaps it.
func startDriver(tb testing.TB, st dcm.State, mut ...func(*DriverConfig)) (*Driver, string) {
	tb.Helper()
	bin := haproxyBin(tb)
	dir := workDir(tb)
	bind := freeAddr(tb)
	cfg := DriverConfig{
		Binary:      bin,
		WorkDir:     dir,
		Settings:    Settings{AdminSocket: filepath.Join(dir, "admin.sock"), HTTPBind: bind, HardStopAfter: 5 * time.Second},
		ReadTimeout: 5 * time.Second,
	}
	for _, m := range mut {
		m(&cfg)
	}
	d := NewDriver(cfg, testLogger(tb))
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(func() {
		d.Close()
		cancel()
	})
	if err := d.Start(ctx, st); err != nil {
		tb.Fatalf("start: %v", err)
	}
	return d, bind
}

// get sends one request with a Host header through the frontend.
func get(tb testing.TB, bind, host, path string) (int, string) {
	tb.Helper()
	req, err := http.NewRequest("GET", "http://"+bind+path, nil)
	if err != nil {
		tb.Fatal(err)
	}
	req.Host = host
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		tb.Fatalf("GET %s%s: %v", host, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// route builds a valid route for tests.
func route(ns, name, host, path string, pt dcm.PathType) dcm.Route {
	return dcm.Route{Namespace: ns, Name: name, Kind: dcm.KindHTTP, Host: host, Path: path, PathType: pt, Balance: dcm.BalanceRoundRobin}
}

// backendFor binds a route to servers pointing at echo servers.
func backendFor(r dcm.Route, servers ...dcm.Server) dcm.Backend {
	dcm.SortServers(servers)
	return dcm.Backend{Name: r.BackendName(), Kind: r.Kind, Route: r, Servers: servers}
}

func serverFor(e echoServer, state dcm.AdminState) dcm.Server {
	name := "s-" + e.Name
	return dcm.Server{Name: name, Endpoint: name, Addr: e.Addr, Port: e.Port, Weight: 1, State: state}
}

func state(backends ...dcm.Backend) dcm.State {
	dcm.SortBackends(backends)
	return dcm.State{Backends: backends}
}

func itoa(i int) string { return strconv.Itoa(i) }

func mustf(tb testing.TB, err error, format string, args ...any) {
	tb.Helper()
	if err != nil {
		tb.Fatalf("%s: %v", fmt.Sprintf(format, args...), err)
	}
}

func netListen6() (net.Listener, error) { return net.Listen("tcp", "[::1]:0") }
