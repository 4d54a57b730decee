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

// podFrom sends one request from the local address src and returns the pod
// that answered.
func podFrom(t *testing.T, src, bind, host string) string {
	t.Helper()
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, DialContext: dialer.DialContext}}
	req, err := http.NewRequest(http.MethodGet, "http://"+bind+"/", nil)
	mustf(t, err, "request")
	req.Host = host
	resp, err := client.Do(req)
	mustf(t, err, "GET from %s", src)
	defer resp.Body.Close()
	var b [64]byte
	n, _ := resp.Body.Read(b[:])
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET from %s: HTTP %d", src, resp.StatusCode)
	}
	return string(b[:n])
}

// TestBalanceSource, with the real binary: a backend balanced by source
// is rendered with hash-type consistent, so add server works at runtime
// (HAProxy refuses it with the default map-based hash), and one client
// address stays on one pod through the change.
func TestBalanceSource(t *testing.T) {
	t.Parallel()
	var pods []testkit.Backend
	for i := range 4 {
		pods = append(pods, testkit.StartBackend(t, "127.0.0.1", fmt.Sprintf("pod-%d", i)))
	}
	r := route("ns", "src", "src.test", "/", dcm.PathPrefix)
	r.Balance = dcm.BalanceSource
	st := state(backendFor(r, serverFor(pods[0], dcm.StateReady), serverFor(pods[1], dcm.StateReady)))
	d, bind := startDriver(t, st)
	pid := workerPID(t, d)
	first := podFrom(t, "127.0.0.1", bind, "src.test")
	for range 20 {
		if got := podFrom(t, "127.0.0.1", bind, "src.test"); got != first {
			t.Fatalf("one client on %s, then %s", first, got)
		}
	}

	next := state(backendFor(r, serverFor(pods[0], dcm.StateReady), serverFor(pods[1], dcm.StateReady),
		serverFor(pods[2], dcm.StateReady), serverFor(pods[3], dcm.StateReady)))
	var ops []dcm.Op
	for _, p := range pods[2:] {
		s := serverFor(p, dcm.StateReady)
		ops = append(ops, dcm.Op{Kind: dcm.OpAddServer, Backend: r.BackendName(), Server: s.Name, Endpoint: s.Endpoint, Addr: s.Addr, Port: s.Port, Weight: 1},
			dcm.Op{Kind: dcm.OpSetState, Backend: r.BackendName(), Server: s.Name, State: dcm.StateReady})
	}
	mustf(t, d.Apply(context.Background(), ops, next), "add servers to a source-balanced backend")
	mustf(t, d.Write(next), "write")
	// Consistent hashing moves a client only to a new server: the client
	// lands on one pod, many requests long.
	after := podFrom(t, "127.0.0.1", bind, "src.test")
	for range 20 {
		if got := podFrom(t, "127.0.0.1", bind, "src.test"); got != after {
			t.Fatalf("after the scale-out, one client on %s, then %s", after, got)
		}
	}
	if workerPID(t, d) != pid {
		t.Error("the worker changed")
	}
}
