package haproxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

// allowlistRule is the rule every passthrough backend has, and
// frontendAllowlistRule the one of the HTTP routes, in every HTTP
// frontend.
const (
	allowlistRule         = "    tcp-request content reject if { be_name,map_str(maps/allowlist.map) -m found } !{ lua.dcm_allowed -m bool }\n"
	frontendAllowlistRule = "    http-request reject if { var(txn.be),map_str(maps/allowlist.map) -m found } !{ lua.dcm_allowed(txn.be) -m bool }\n"
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

// getOver sends one GET for host over conn, in TLS with host as SNI:
// the status and body, or the error of a connection closed without one.
func getOver(conn net.Conn, host string) (int, string, error) {
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return 0, "", err
	}
	c := tls.Client(conn, &tls.Config{ServerName: host, InsecureSkipVerify: true})
	if _, err := fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host); err != nil {
		return 0, "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// canonicalList writes a list as the sources write it.
func canonicalList(tb testing.TB, list ...string) []string {
	tb.Helper()
	out, err := dcm.ParseAllowlist("test", strings.Join(list, " "), false)
	mustf(tb, err, "list")
	return out
}

// TestAllowlistEntries: the command builder sends an allowlist entry only
// when its key is a backend or a chunk and its value a canonical list, in
// order, of at most a chunk's length, or a chunk reference.
func TestAllowlistEntries(t *testing.T) {
	id := strings.Repeat("0f", 8)
	long := strings.TrimSuffix(strings.Repeat("10.0.0.1,", 500), ",")
	for _, tt := range []struct {
		key, value string
		ok         bool
	}{
		{"be_http:ns:web", "10.0.0.0/8", true},
		{"be_http:ns:web", "10.0.0.0/8,2001:db8::/32,::1", true},
		{"be_http:ns:web", "@" + id, true},
		{"be_http:ns:web", "@" + id + "," + id, true},
		{"_chunk." + id, "10.0.0.0/8,127.0.0.2", true},
		{"be_http:ns:web", "10.0.0.1/8", false},     // not canonical
		{"be_http:ns:web", "10.0.0.0/8 x", false},   // a space
		{"be_http:ns:web", "10.0.0.1;show", false},  // a command
		{"be_http:ns:web", "", false},               // empty
		{"be_http:ns:web", "fe80::1%lo", false},     // a zone
		{"be_http:ns:web", "::ffff:0:0/200", false}, // a bad prefix
		{"be_http:ns:web", "host.example", false},
		{"be_http:ns:web", "10.0.0.2,10.0.0.1", false}, // out of order
		{"be_http:ns:web", "10.0.0.1,10.0.0.1", false}, // twice
		{"be_http:ns:web", "10.0.0.1,", false},
		{"be_http:ns:web", long, false}, // over a chunk
		{"be_http:ns:web", "@" + id[:15], false},
		{"be_http:ns:web", "@" + strings.ToUpper(id), false},
		{"be_http:ns:web", "@" + id + ",", false},
		{"be_http:ns:web", "@", false},
		{"_chunk." + id, "@" + id, false}, // a chunk names no chunk
		{"_chunk." + id[:15], "10.0.0.1", false},
		{"_chunk.", "10.0.0.1", false},
		{"../etc/passwd", "10.0.0.1", false},
		{"be_", "10.0.0.1", false},
	} {
		_, err := AddMapCommand(dcm.MapAllowlist, tt.key, tt.value)
		if (err == nil) != tt.ok {
			t.Errorf("add map %s %.40q: %v, want ok %v", tt.key, tt.value, err, tt.ok)
		}
	}
}

// TestAllowlistAtRuntime: a route with a list serves its clients and
// closes the connection of any other, without an answer; a route without
// one serves everyone; the list is replaced at runtime and the roles swap
// without a reload, the runtime map equals the file after every step.
func TestAllowlistAtRuntime(t *testing.T) {
	t.Parallel()
	web := route("ns", "web", "web.example", "/", dcm.PathPrefix)
	web.Allowlist = []string{"127.0.0.2"}
	open := route("ns", "open", "open.example", "/", dcm.PathPrefix)
	srv := serverFor(testkit.StartBackend(t, "127.0.0.4", "web"), dcm.StateReady)
	osrv := serverFor(testkit.StartBackend(t, "127.0.0.5", "open"), dcm.StateReady)
	build := func(w dcm.Route) dcm.State {
		st := state(backendFor(w, srv), backendFor(open, osrv))
		st.Pool = []string{"be_http:_pool:1"}
		return st
	}
	st := build(web)
	d, bind := startDriver(t, st)
	pid := workerPID(t, d)
	filesEqualRuntime(t, d)
	cfg, err := readConfig(d.cfg.WorkDir)
	mustf(t, err, "read cfg")
	if n, m := strings.Count(string(cfg), frontendAllowlistRule), strings.Count(string(cfg), allowlistRule); n != 1 || m != 0 {
		t.Errorf("the HTTP rule is written %d times, the TCP one %d; want once in fe_http and in no backend (a spare's neither):\n%s", n, m, cfg)
	}

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

	for _, list := range [][]string{{"127.0.0.3", "::1"}, nil, {"127.0.0.0/30"}} {
		w := web
		w.Allowlist = list
		next := build(w)
		mustf(t, d.Apply(context.Background(), mapReplaces(st, next), next), "apply list %v", list)
		mustf(t, d.Write(next), "write")
		st = next
		filesEqualRuntime(t, d)
		wantMap := ""
		if list != nil {
			wantMap = w.BackendName() + " " + strings.Join(list, ",") + "\n"
		}
		if got := allowlistMap(t, d); got != wantMap {
			t.Errorf("allowlist map %q, want %q", got, wantMap)
		}
		served("127.0.0.3", "web.example", true)
		served("127.0.0.2", "web.example", list == nil || list[0] == "127.0.0.0/30")
		served("127.0.0.5", "web.example", list == nil)
	}
	if now := workerPID(t, d); now != pid {
		t.Errorf("worker %d, was %d: the lists reloaded", now, pid)
	}
}

// allowlistMap is the allowlist map HAProxy uses.
func allowlistMap(t *testing.T, d *Driver) string {
	t.Helper()
	runtime, err := d.RuntimeMaps(context.Background())
	mustf(t, err, "runtime maps")
	return string(runtime[MapFile(dcm.MapAllowlist)])
}

// TestLegacyACLsRemoved: the allowlist files an older dcm left in the
// work directory are removed at start; the directory stays when it holds
// something else.
func TestLegacyACLsRemoved(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		files []string
		left  []string
	}{
		{"only allowlists", []string{"be_http:ns:a.acl", "be_http:_pool:1.acl"}, nil},
		{"something else", []string{"be_http:ns:a.acl", "notes.txt"}, []string{"notes.txt"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var dir string
			startDriver(t, dcm.State{}, func(c *DriverConfig) {
				dir = filepath.Join(c.WorkDir, legacyACLsDir)
				mustf(t, os.MkdirAll(dir, 0o755), "mkdir")
				for _, f := range tt.files {
					mustf(t, os.WriteFile(filepath.Join(dir, f), []byte("0.0.0.0/0\n"), 0o644), "write")
				}
			})
			entries, err := os.ReadDir(dir)
			var left []string
			for _, e := range entries {
				left = append(left, e.Name())
			}
			switch {
			case tt.left == nil && !os.IsNotExist(err):
				t.Errorf("acls/ still there: %v %v", left, err)
			case tt.left != nil && strings.Join(left, " ") != strings.Join(tt.left, " "):
				t.Errorf("acls/ holds %v (%v), want %v", left, err, tt.left)
			}
		})
	}
}

// TestAllowlistAfterInsecurePolicy: plain HTTP meets a route's insecure
// policy before its allowlist, as in OpenShift's router (the redirect in
// the frontend, the allowlist in the backend): a client off the list is
// redirected to HTTPS by a Redirect route and answered 503, as for no
// route, by a None route, not closed; over HTTPS the list applies, to
// that client's connection closed and to a listed client's served.
func TestAllowlistAfterInsecurePolicy(t *testing.T) {
	t.Parallel()
	pod := serverFor(testkit.StartBackend(t, "127.0.0.4", "web"), dcm.StateReady)
	redir := edgeRoute("ns", "redir", "redir.test", "")
	redir.Insecure, redir.RedirectCode = dcm.InsecureRedirect, 302
	closed := edgeRoute("ns", "closed", "closed.test", "")
	closed.Insecure = dcm.InsecureNone
	for _, r := range []*dcm.Route{&redir, &closed} {
		r.Allowlist = []string{"127.0.0.2"}
	}
	https := testkit.FreeAddr(t)
	_, bind := startDriver(t, state(backendFor(redir, pod), backendFor(closed, pod)), func(c *DriverConfig) {
		c.Settings.HTTPSBind = https
		c.Certs = &testkit.CertStore{}
	})

	plain := func(src, host string) (int, string, error) {
		dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
		client := &http.Client{Timeout: 5 * time.Second,
			Transport:     &http.Transport{DisableKeepAlives: true, DialContext: dialer.DialContext},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		req, err := http.NewRequest("GET", "http://"+bind+"/x", nil)
		mustf(t, err, "request")
		req.Host = host
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		_, _ = io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Location"), nil
	}
	for _, src := range []string{"127.0.0.2", "127.0.0.3"} {
		if code, loc, err := plain(src, "redir.test"); err != nil || code != http.StatusFound || loc != "https://redir.test/x" {
			t.Errorf("http://redir.test from %s: %d %q %v, want the redirect", src, code, loc, err)
		}
		if code, _, err := plain(src, "closed.test"); err != nil || code != http.StatusServiceUnavailable {
			t.Errorf("http://closed.test from %s: %d %v, want 503", src, code, err)
		}
	}
	secure := func(src, host string) (int, error) {
		dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
		conn, err := dialer.Dial("tcp", https)
		mustf(t, err, "dial %s", https)
		code, _, err := getOver(conn, host)
		return code, err
	}
	for _, host := range []string{"redir.test", "closed.test"} {
		if code, err := secure("127.0.0.2", host); err != nil || code != http.StatusOK {
			t.Errorf("https://%s from the listed client: %d %v, want 200", host, code, err)
		}
		if code, err := secure("127.0.0.3", host); err == nil {
			t.Errorf("https://%s from a client off the list: %d, want the connection closed", host, code)
		}
	}
}
