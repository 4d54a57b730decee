package haproxy

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

// longList is a canonical list of n IPv6 networks and the given entries:
// 2001:db8:<i>::/48 are 19 or 20 bytes, so 600 of them take four chunks.
func longList(tb testing.TB, n int, more ...string) []string {
	tb.Helper()
	list := append([]string{}, more...)
	for i := range n {
		list = append(list, fmt.Sprintf("2001:db8:%x::/48", i+1))
	}
	return canonicalList(tb, list...)
}

// chunkKeys are the chunks of an allowlist map's text.
func chunkKeys(text string) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		if key, _, _ := strings.Cut(line, " "); dcm.IsAllowlistChunkKey(key) {
			out[key] = true
		}
	}
	return out
}

// TestAllowlistLongLists: an HTTP and a passthrough route share a list too
// long for one map value. Its chunks are stored once for both, the value
// of each backend names them, and HAProxy serves the listed client and
// closes the connection of another, on the HTTP route for its request, on
// the passthrough one before the TLS handshake reaches the pod. Then the
// list changes at runtime: the chunks that did not change keep their keys,
// the roles swap, with the same worker and the files equal to the runtime.
func TestAllowlistLongLists(t *testing.T) {
	t.Parallel()
	ca := testkit.NewCA(t)
	web := route("ns", "web", "web.example", "/", dcm.PathPrefix)
	db := route("ns", "db", "db.test", "/", dcm.PathPrefix)
	db.Kind, db.Balance = dcm.KindPassthrough, dcm.BalanceSource
	wsrv := serverFor(testkit.StartBackend(t, "127.0.0.4", "web"), dcm.StateReady)
	dsrv := serverFor(testkit.StartTLSBackend(t, "127.0.0.5", "db", ca.Leaf(t, "db.test")), dcm.StateReady)
	build := func(list []string) dcm.State {
		w, p := web, db
		w.Allowlist, p.Allowlist = list, list
		return state(backendFor(w, wsrv), backendFor(p, dsrv))
	}
	https := testkit.FreeAddr(t)
	st := build(longList(t, 600, "127.0.0.2"))
	d, bind := startDriver(t, st, func(c *DriverConfig) { c.Settings.HTTPSBind = https })
	pid := workerPID(t, d)

	served := func(step, src string, want bool) {
		t.Helper()
		code, err := getFrom(t, src, bind, "web.example", "/")
		if ok := err == nil && code == 200; ok != want {
			t.Errorf("%s: web.example from %s: %d %v, want served %v", step, src, code, err, want)
		}
		dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
		conn, err := dialer.Dial("tcp", https)
		mustf(t, err, "dial %s", https)
		code, body, err := getOver(conn, "db.test")
		if ok := err == nil && code == http.StatusOK && body == "db"; ok != want {
			t.Errorf("%s: db.test from %s: %d %q %v, want served %v", step, src, code, body, err, want)
		}
	}
	check := func(step string) map[string]bool {
		t.Helper()
		filesEqualRuntime(t, d)
		text := allowlistMap(t, d)
		chunks := chunkKeys(text)
		if len(chunks) < 3 {
			t.Errorf("%s: %d chunks, want 3 or more:\n%s", step, len(chunks), text)
		}
		values := map[string]string{}
		for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
			if key, value, _ := strings.Cut(line, " "); !chunks[key] {
				values[key] = value
			}
		}
		w, p := values[web.BackendName()], values[db.BackendName()]
		if len(values) != 2 || !strings.HasPrefix(w, "@") || w != p || strings.Count(w, ",")+1 != len(chunks) {
			t.Errorf("%s: backends' values %v for %d chunks", step, values, len(chunks))
		}
		return chunks
	}
	first := check("at start")
	served("at start", "127.0.0.2", true)
	served("at start", "127.0.0.3", false)

	next := build(longList(t, 600, "127.0.0.3"))
	mustf(t, d.Apply(context.Background(), mapReplaces(st, next), next), "apply the new list")
	mustf(t, d.Write(next), "write")
	second := check("changed")
	kept := 0
	for k := range second {
		if first[k] {
			kept++
		}
	}
	if kept != len(second)-1 {
		t.Errorf("%d of %d chunks kept their keys, want all but the one with the changed entry", kept, len(second))
	}
	served("changed", "127.0.0.3", true)
	served("changed", "127.0.0.2", false)
	if workerPID(t, d) != pid {
		t.Error("the worker changed")
	}
}

// TestAllowlistIPv6: clients with IPv6 addresses, given to fe_https in a
// PROXY header as fe_tls gives them (its socket, no IPv6 traffic): a list
// of IPv6 networks and addresses serves its clients and no other; an IPv4
// client and its IPv4-mapped form match an IPv4 entry and an IPv4-mapped
// network alike, as HAProxy's own ip patterns match them; networks wider
// than the script's buckets (a first byte or group) match too. The list
// then changes at runtime.
func TestAllowlistIPv6(t *testing.T) {
	t.Parallel()
	ca := testkit.NewCA(t)
	store := &testkit.CertStore{}
	pod := testkit.StartBackend(t, "127.0.0.6", "six")
	r := edgeRoute("ns", "six", "six.test", store.Put("ns/six-tls", ca.Leaf(t, "six.test").PEM()))
	build := func(list ...string) dcm.State {
		w := r
		w.Allowlist = canonicalList(t, list...)
		return state(backendFor(w, serverFor(pod, dcm.StateReady)))
	}
	st := build("2001:db8::/32", "fd00::7", "::ffff:10.0.0.0/104", "127.0.0.2", "fc00::/7", "192.0.0.0/4", "::/128")
	d, _ := startDriver(t, st, func(c *DriverConfig) {
		c.Settings.HTTPSBind = testkit.FreeAddr(t)
		c.Certs = store
	})
	sock := d.cfg.Settings.edgeSocket()
	served := func(step, src string, want bool) {
		t.Helper()
		proto, dst := "TCP4", "127.0.0.1"
		if strings.Contains(src, ":") {
			proto, dst = "TCP6", "::1"
		}
		conn, err := net.DialTimeout("unix", sock, 5*time.Second)
		mustf(t, err, "dial %s", sock)
		_, err = fmt.Fprintf(conn, "PROXY %s %s %s 40000 443\r\n", proto, src, dst)
		mustf(t, err, "PROXY header")
		code, body, err := getOver(conn, "six.test")
		if ok := err == nil && code == http.StatusOK && body == "six"; ok != want {
			t.Errorf("%s: from %s: %d %q %v, want served %v", step, src, code, body, err, want)
		}
	}
	for _, c := range []struct {
		src  string
		want bool
	}{
		{"2001:db8::5", true}, {"2001:db8:ffff::1", true}, {"2001:db9::5", false},
		{"fd00::7", true}, {"fd00::8", true}, {"fe80::8", false}, // fc00::/7
		{"200.1.2.3", true}, {"100.1.2.3", false}, {"::ffff:200.1.2.3", true}, // 192.0.0.0/4
		{"::", true}, {"::1", false},
		{"10.1.2.3", true}, {"::ffff:10.1.2.3", true}, {"11.1.2.3", false},
		{"127.0.0.2", true}, {"::ffff:127.0.0.2", true}, {"127.0.0.3", false}, {"::ffff:127.0.0.3", false},
	} {
		served("at start", c.src, c.want)
	}
	next := build("2001:db9::/32")
	mustf(t, d.Apply(context.Background(), mapReplaces(st, next), next), "apply the new list")
	mustf(t, d.Write(next), "write")
	filesEqualRuntime(t, d)
	served("changed", "2001:db9::5", true)
	served("changed", "2001:db8::5", false)
	served("changed", "127.0.0.2", false)
}

// TestAllowlistLuaChunks drives the script with maps written by hand: a
// list cached under a value whose chunk now holds another text is read
// again (the planner never rewrites a chunk at runtime, but the script
// does not count on it); a value naming a chunk the map lacks refuses
// everyone (fail closed); a value that does not parse too.
func TestAllowlistLuaChunks(t *testing.T) {
	t.Parallel()
	web := route("ns", "web", "web.example", "/", dcm.PathPrefix)
	d, bind := startDriver(t, state(backendFor(web, serverFor(testkit.StartBackend(t, "127.0.0.4", "web"), dcm.StateReady))))
	ctx := context.Background()
	id := strings.Repeat("ab", 8)
	// commit makes the map hold lines and nothing else, entry by entry,
	// between requests.
	held := map[string]bool{}
	commit := func(lines ...[2]string) {
		t.Helper()
		var cmds []Command
		keep := map[string]bool{}
		for _, l := range lines {
			build := AddMapCommand
			if held[l[0]] {
				build = SetMapCommand
			}
			c, err := build(dcm.MapAllowlist, l[0], l[1])
			mustf(t, err, "add or set %v", l)
			cmds = append(cmds, c)
			keep[l[0]] = true
		}
		for key := range held {
			if !keep[key] {
				c, err := DelMapCommand(dcm.MapAllowlist, key)
				mustf(t, err, "del %s", key)
				cmds = append(cmds, c)
			}
		}
		_, err := d.client.Exec(ctx, cmds)
		mustf(t, err, "exec add, set, del")
		held = keep
	}
	served := func(step, src string, want bool) {
		t.Helper()
		code, err := getFrom(t, src, bind, "web.example", "/")
		if ok := err == nil && code == 200; ok != want {
			t.Errorf("%s: from %s: %d %v, want served %v", step, src, code, err, want)
		}
	}
	be := web.BackendName()
	commit([2]string{"_chunk." + id, "127.0.0.2"}, [2]string{be, "@" + id})
	served("a chunk", "127.0.0.2", true)
	served("a chunk", "127.0.0.3", false)
	commit([2]string{"_chunk." + id, "127.0.0.3"}, [2]string{be, "@" + id})
	served("the chunk's text changed under the same value", "127.0.0.3", true)
	served("the chunk's text changed under the same value", "127.0.0.2", false)
	commit([2]string{be, "@" + id})
	served("the chunk missing", "127.0.0.3", false)
	commit()
	served("no entry", "127.0.0.3", true)
}
