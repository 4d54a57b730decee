package haproxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

// startDriver starts HAProxy serving st; Cleanup stops and reaps it.
func startDriver(tb testing.TB, st dcm.State, mut ...func(*DriverConfig)) (*Driver, string) {
	tb.Helper()
	bin := testkit.HAProxy(tb)
	dir := testkit.ShortDir(tb)
	bind := testkit.FreeAddr(tb)
	cfg := DriverConfig{
		Binary:      bin,
		WorkDir:     dir,
		Settings:    Settings{AdminSocket: filepath.Join(dir, "admin.sock"), HTTPBind: bind, HardStopAfter: 5 * time.Second},
		ReadTimeout: 5 * time.Second,
	}
	for _, m := range mut {
		m(&cfg)
	}
	d := NewDriver(cfg, testkit.Logger(tb))
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

func serverFor(e testkit.Backend, state dcm.AdminState) dcm.Server {
	name := "s-" + e.Name
	return dcm.Server{Name: name, Endpoint: name, Addr: e.Addr, Port: e.Port, Weight: 1, State: state}
}

func state(backends ...dcm.Backend) dcm.State {
	return stateOf(dcm.BackendList(backends...))
}

func stateOf(backends []*dcm.Backend) dcm.State {
	dcm.SortBackends(backends)
	return dcm.State{Backends: backends}
}

func mustf(tb testing.TB, err error, format string, args ...any) {
	tb.Helper()
	if err != nil {
		tb.Fatalf("%s: %v", fmt.Sprintf(format, args...), err)
	}
}

func netListen6() (net.Listener, error) { return net.Listen("tcp", "[::1]:0") }

// readConfig is the whole configuration in dir, as HAProxy reads it:
// haproxy.cfg and the backends' files.
func readConfig(dir string) ([]byte, error) {
	f, err := ReadFiles(dir)
	if err != nil {
		return nil, err
	}
	return f.Text(), nil
}
