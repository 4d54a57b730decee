package haproxy

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

// getFrom sends one request from the source address src (loopback): the
// status, or the error of a connection HAProxy closed without an answer.
func getFrom(tb testing.TB, src, bind, host, path string) (int, error) {
	tb.Helper()
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, DialContext: dialer.DialContext}}
	req, err := http.NewRequest("GET", "http://"+bind+path, nil)
	if err != nil {
		tb.Fatal(err)
	}
	req.Host = host
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.ReadAll(resp.Body)
	return resp.StatusCode, nil
}

// TestACLCommands talks to the real binary: prepare acl answers with a
// version, add acl and commit acl answer nothing, show acl lists the
// committed sources, and a source that is not canonical never leaves the
// package.
func TestACLCommands(t *testing.T) {
	t.Parallel()
	r := route("ns", "web", "web.example", "/", dcm.PathPrefix)
	d, _ := startDriver(t, state(backendFor(r)))
	ctx := context.Background()
	proxy := r.BackendName()
	prepare, err := PrepareACLCommand(proxy)
	mustf(t, err, "prepare")
	replies, err := d.client.Exec(ctx, []Command{prepare})
	mustf(t, err, "exec prepare")
	v, err := ParseMapVersion(replies[0].Text)
	mustf(t, err, "version of %q", replies[0].Text)
	add1, err := AddACLCommand(v, proxy, "10.0.0.0/8")
	mustf(t, err, "add")
	add2, err := AddACLCommand(v, proxy, "2001:db8::/32")
	mustf(t, err, "add")
	commit, err := CommitACLCommand(v, proxy)
	mustf(t, err, "commit")
	show, err := ShowACLCommand(proxy)
	mustf(t, err, "show")
	replies, err = d.client.Exec(ctx, []Command{add1, add2, commit, show})
	mustf(t, err, "exec add, commit, show")
	got, err := ParseShowACL(replies[3].Text)
	mustf(t, err, "parse show acl")
	if want := "10.0.0.0/8\n2001:db8::/32\n"; got != want {
		t.Errorf("show acl after commit = %q, want %q", got, want)
	}
	stale, _ := CommitACLCommand(v+5, proxy)
	_, err = d.client.Exec(ctx, []Command{stale})
	var ce *CommandError
	if !errors.As(err, &ce) || !strings.Contains(ce.Reply, "[3]:") {
		t.Errorf("commit of an unprepared version: %v", err)
	}
	for _, bad := range []string{"10.0.0.1/8", "10.0.0.0/8 x", "10.0.0.1;show", "", "fe80::1%lo", "::ffff:0:0/200", "host.example"} {
		if _, err := AddACLCommand(v, proxy, bad); err == nil {
			t.Errorf("add acl %q accepted", bad)
		}
	}
	if _, err := PrepareACLCommand("../etc/passwd"); err == nil {
		t.Error("prepare acl of a path accepted")
	}
}

// TestAllowlistAtRuntime: a route with a list serves its clients and
// closes the connection of any other, without an answer; a route without
// one serves everyone; the list is replaced at runtime and the roles swap
// without a reload, the runtime lists equal the files after every step.
func TestAllowlistAtRuntime(t *testing.T) {
	t.Parallel()
	web := route("ns", "web", "web.example", "/", dcm.PathPrefix)
	web.Allowlist = []string{"127.0.0.2"}
	open := route("ns", "open", "open.example", "/", dcm.PathPrefix)
	srv := serverFor(testkit.StartBackend(t, "127.0.0.4", "web"), dcm.StateReady)
	osrv := serverFor(testkit.StartBackend(t, "127.0.0.5", "open"), dcm.StateReady)
	st := state(backendFor(web, srv), backendFor(open, osrv))
	st.Pool = []string{"be_http:_pool:1"}
	d, bind := startDriver(t, st)
	ctx := context.Background()
	pid := workerPID(t, d)
	allowlistsEqualRuntime(t, d, st)

	served := func(src, host string, want bool) {
		t.Helper()
		code, err := getFrom(t, src, bind, host, "/")
		switch {
		case want && (err != nil || code != 200):
			t.Errorf("%s from %s: %d %v, want 200", host, src, code, err)
		case !want && err == nil:
			t.Errorf("%s from %s: %d, want the connection closed", host, src, code)
		}
	}
	served("127.0.0.2", "web.example", true)
	served("127.0.0.3", "web.example", false)
	served("127.0.0.3", "open.example", true)

	for _, list := range [][]string{{"127.0.0.3", "::1"}, nil} {
		w := web
		w.Allowlist = list
		next := state(backendFor(w, srv), backendFor(open, osrv))
		next.Pool = st.Pool
		ops := []dcm.Op{{Kind: dcm.OpACLReplace, Backend: w.BackendName(), Allowlist: list}}
		mustf(t, d.Apply(ctx, ops, next), "apply list %v", list)
		mustf(t, d.Write(next), "write")
		allowlistsEqualRuntime(t, d, next)
		served("127.0.0.3", "web.example", true)
		served("127.0.0.2", "web.example", list == nil)
	}
	if now := workerPID(t, d); now != pid {
		t.Errorf("worker %d, was %d: the lists reloaded", now, pid)
	}
}

// allowlistsEqualRuntime checks that HAProxy's lists are the files'.
func allowlistsEqualRuntime(t *testing.T, d *Driver, st dcm.State) {
	t.Helper()
	var proxies []string
	for _, b := range st.Backends {
		proxies = append(proxies, b.ProxyName())
	}
	proxies = append(proxies, st.Pool...)
	runtime, err := d.RuntimeACLs(context.Background(), proxies)
	mustf(t, err, "runtime acls")
	files, err := d.ReadFiles()
	mustf(t, err, "read files")
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range files.ACLs {
			if !yield(n) {
				return
			}
		}
	})
	if len(names) != len(proxies) {
		t.Errorf("allowlist files %v for backends %v", names, proxies)
	}
	for name, b := range runtime {
		if string(files.ACLs[name]) != string(b) {
			t.Errorf("%s: file %q, runtime %q", name, files.ACLs[name], b)
		}
	}
}
