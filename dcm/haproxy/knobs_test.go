package haproxy

import (
	"context"
	"encoding/csv"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

// statField is one column of `show stat` for each server of a backend,
// by server name.
func statField(t *testing.T, d *Driver, proxy, field string) map[string]string {
	t.Helper()
	cmd, err := StatCommand(proxy)
	mustf(t, err, "stat command")
	replies, err := d.client.Exec(context.Background(), []Command{cmd})
	mustf(t, err, "show stat")
	r := csv.NewReader(strings.NewReader(strings.TrimPrefix(replies[0].Text, "# ")))
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	mustf(t, err, "parse show stat")
	col := -1
	for i, h := range rows[0] {
		if h == field {
			col = i
		}
	}
	if col < 0 {
		t.Fatalf("show stat has no %s: %v", field, rows[0])
	}
	out := map[string]string{}
	for _, row := range rows[1:] {
		if len(row) > col && row[1] != "BACKEND" && row[1] != "FRONTEND" {
			out[row[1]] = row[col]
		}
	}
	return out
}

// tryGet is get for other goroutines than the test's: it reports what
// went wrong rather than stop the test.
func tryGet(bind, host, path string) (int, error) {
	req, err := http.NewRequest("GET", "http://"+bind+path, nil)
	if err != nil {
		return 0, err
	}
	req.Host = host
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

// mostHeld sends n requests for host at once, each held by the pod for
// ms, and returns the most the pod held at a time.
func mostHeld(t *testing.T, bind, host string, pod testkit.Backend, n, ms int) int {
	t.Helper()
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code, err := tryGet(bind, host, "/?ms="+strconv.Itoa(ms)); code != 200 {
				t.Errorf("a held request: %d %v", code, err)
			}
		}()
	}
	most := 0
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	for {
		select {
		case <-finished:
			return most
		case <-time.After(5 * time.Millisecond):
			most = max(most, pod.Held())
		}
	}
}

// TestServerMaxConn: a route's MaxConn is each server's maxconn, in the
// cfg and in `show stat` (slim): with 1, four concurrent requests reach
// the pod one at a time (the others queue in HAProxy). Changed to 3 at
// runtime (set maxconn server), the pod gets three at once and a server
// added at runtime carries it too; changed to 0, no limit. One worker.
func TestServerMaxConn(t *testing.T) {
	t.Parallel()
	pod := testkit.StartBackend(t, "127.0.0.11", "mc-1")
	other := testkit.StartBackend(t, "127.0.0.11", "mc-2")
	r := route("ns", "mc", "mc.test", "/", dcm.PathPrefix)
	r.MaxConn = 1
	srv := serverFor(pod, dcm.StateReady)
	srv.MaxConn = 1
	st := state(backendFor(r, srv))
	d, bind := startDriver(t, st)
	pid := workerPID(t, d)
	cfg, err := readConfig(d.cfg.WorkDir)
	mustf(t, err, "read cfg")
	if !strings.Contains(string(cfg), " weight 1 maxconn 1\n") {
		t.Fatalf("no maxconn on the server line:\n%s", cfg)
	}
	proxy := r.BackendName()
	if got := statField(t, d, proxy, "slim")[srv.Name]; got != "1" {
		t.Errorf("slim %q, want 1", got)
	}
	if most := mostHeld(t, bind, "mc.test", pod, 4, 300); most != 1 {
		t.Errorf("maxconn 1: the pod held %d at once", most)
	}

	ops := []dcm.Op{{Kind: dcm.OpSetMaxConn, Backend: proxy, Server: srv.Name, MaxConn: 3}}
	srv.MaxConn = 3
	added := serverFor(other, dcm.StateMaint)
	added.MaxConn = 3
	ops = append(ops, dcm.Op{Kind: dcm.OpAddServer, Backend: proxy, Server: added.Name, Addr: added.Addr, Port: added.Port, Weight: 1, MaxConn: 3})
	next := state(backendFor(func() dcm.Route { r := r; r.MaxConn = 3; return r }(), srv, added))
	mustf(t, d.Apply(context.Background(), ops, next), "apply set maxconn and add server")
	mustf(t, d.Write(next), "write")
	slim := statField(t, d, proxy, "slim")
	if slim[srv.Name] != "3" || slim[added.Name] != "3" {
		t.Errorf("after set maxconn 3: slim %v", slim)
	}
	if most := mostHeld(t, bind, "mc.test", pod, 4, 500); most != 3 {
		t.Errorf("maxconn 3: the pod held %d at once, want 3", most)
	}
	mustf(t, d.Apply(context.Background(), []dcm.Op{{Kind: dcm.OpSetMaxConn, Backend: proxy, Server: srv.Name, MaxConn: 0}}, next), "apply set maxconn 0")
	if got := statField(t, d, proxy, "slim")[srv.Name]; got != "" {
		t.Errorf("after set maxconn 0: slim %q, want none", got)
	}
	if workerPID(t, d) != pid {
		t.Error("the worker changed")
	}
}
