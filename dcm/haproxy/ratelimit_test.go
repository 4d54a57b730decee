package haproxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"regexp"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

// TestRateLimitAtRuntime: OpenShift's rate limits, from the rate-limit map
// at runtime: a route with rate-http 3 serves a client's first three
// requests of 10 s and closes the connection of the next without an
// answer, while another client is served; concurrent-tcp 2 refuses a
// client's second connection while its first is open; limits removed
// serve everyone again. The worker never changes.
func TestRateLimitAtRuntime(t *testing.T) {
	t.Parallel()
	web := route("ns", "web", "web.example", "/", dcm.PathPrefix)
	pod := testkit.StartBackend(t, "127.0.0.4", "web")
	srv := serverFor(pod, dcm.StateReady)
	st := state(backendFor(web, srv))
	st.Pool = []string{"be_http:_pool:1"}
	d, bind := startDriver(t, st)
	ctx := context.Background()
	pid := workerPID(t, d)
	prev := st
	limit := func(l *dcm.RateLimit) {
		t.Helper()
		w := web
		w.RateLimit = l
		next := state(backendFor(w, srv))
		next.Pool = st.Pool
		mustf(t, d.Apply(ctx, mapReplaces(prev, next), next), "apply limits %+v", l)
		mustf(t, d.Write(next), "write")
		filesEqualRuntime(t, d)
		prev = next
	}
	served := func(src, path string) bool {
		t.Helper()
		code, err := getFrom(t, src, bind, "web.example", path)
		return err == nil && code == 200
	}

	limit(&dcm.RateLimit{RateHTTP: 3})
	for i := range 3 {
		if !served("127.0.0.2", "/") {
			t.Fatalf("request %d of 3 refused", i+1)
		}
	}
	if served("127.0.0.2", "/") {
		t.Fatal("a fourth request in 10 s served")
	}
	if !served("127.0.0.3", "/") {
		t.Fatal("another client refused")
	}

	limit(&dcm.RateLimit{ConcurrentTCP: 2})
	done := make(chan bool, 1)
	go func() { done <- served("127.0.0.5", "/slow?ms=3000") }()
	testkit.Eventually(t, "the slow request at the pod", 5*time.Second, func() error {
		if n := pod.Held(); n != 1 {
			return fmt.Errorf("%d held", n)
		}
		return nil
	})
	if served("127.0.0.5", "/") {
		t.Error("a second concurrent connection served")
	}
	if !served("127.0.0.6", "/") {
		t.Error("another client refused")
	}
	if !<-done {
		t.Error("the slow request refused")
	}

	limit(nil)
	for i := range 5 {
		if !served("127.0.0.2", "/") {
			t.Fatalf("request %d refused without limits", i+1)
		}
	}
	if now := workerPID(t, d); now != pid {
		t.Errorf("worker %d, was %d: the limits reloaded", now, pid)
	}
}

// TestRateLimitPerRoute: an HTTP route's limits count each client of
// that route alone: with rate-http 2 on two routes, one of them on a
// spare (keyed by the spare's name), one client is served two requests
// by each route, in turns, and refused the third by each, while another
// client is still served. rate-tcp 3 counts the request being checked (a
// client's connections in 3 s, each request a connection of its own
// here): the third request in 3 s is refused, as OpenShift's rule does.
// The shared table holds an entry per client and route.
func TestRateLimitPerRoute(t *testing.T) {
	t.Parallel()
	pod := testkit.StartBackend(t, "127.0.0.4", "web")
	srv := serverFor(pod, dcm.StateReady)
	a := route("ns", "a", "a.example", "/", dcm.PathPrefix)
	b := route("ns", "b", "b.example", "/", dcm.PathPrefix)
	c := route("ns", "c", "c.example", "/", dcm.PathPrefix)
	a.RateLimit = &dcm.RateLimit{RateHTTP: 2}
	b.RateLimit = &dcm.RateLimit{RateHTTP: 2}
	c.RateLimit = &dcm.RateLimit{RateTCP: 3}
	onSpare := backendFor(b, srv)
	onSpare.Slot = "be_http:_pool:1"
	d, bind := startDriver(t, state(backendFor(a, srv), onSpare, backendFor(c, srv)))
	served := func(src, host string) bool {
		t.Helper()
		code, err := getFrom(t, src, bind, host, "/")
		return err == nil && code == 200
	}
	for i := range 2 {
		for _, host := range []string{"a.example", "b.example"} {
			if !served("127.0.0.2", host) {
				t.Fatalf("%s: request %d of 2 refused", host, i+1)
			}
		}
	}
	for _, host := range []string{"a.example", "b.example"} {
		if served("127.0.0.2", host) {
			t.Errorf("%s: a third request in 10 s served", host)
		}
		if !served("127.0.0.3", host) {
			t.Errorf("%s: another client refused", host)
		}
	}
	for i := range 2 {
		if !served("127.0.0.2", "c.example") {
			t.Fatalf("rate-tcp 3: request %d refused", i+1)
		}
	}
	if served("127.0.0.2", "c.example") {
		t.Error("rate-tcp 3: a third request in 3 s served")
	}

	// Each route counts each client; the refused request counts as a
	// connection, not as an HTTP request: the counts a table per backend
	// held (measured with it: conn_rate 3, http_req_rate 2). Not use and
	// conn_cur: a refused request's stream may still be ending in HAProxy
	// when its client has seen the connection closed.
	table := adminCommand(t, d, "show table "+RateLimitTable)
	for _, e := range []struct{ key, counts string }{
		{"127.0.0.2@be_http:ns:a", "gpc0_rate(10000)=2 conn_rate(3000)=3 "},
		{"127.0.0.2@be_http:_pool:1", "gpc0_rate(10000)=2 conn_rate(3000)=3 "},
		{"127.0.0.3@be_http:ns:a", "gpc0_rate(10000)=1 conn_rate(3000)=1 "},
		{"127.0.0.2@be_http:ns:c", "gpc0_rate(10000)=2 conn_rate(3000)=3 "},
	} {
		if !regexp.MustCompile(` key=` + regexp.QuoteMeta(e.key) + ` use=\d+ exp=\d+ ` + regexp.QuoteMeta(e.counts) + `conn_cur=\d+\n`).MatchString(table) {
			t.Errorf("no entry %s with %s in the table:\n%s", e.key, e.counts, table)
		}
	}
}

// adminCommand sends one command to HAProxy's admin socket and returns
// its answer.
func adminCommand(tb testing.TB, d *Driver, cmd string) string {
	tb.Helper()
	conn, err := net.DialTimeout("unix", d.cfg.Settings.AdminSocket, 5*time.Second)
	mustf(tb, err, "dial the admin socket")
	defer conn.Close()
	mustf(tb, conn.SetDeadline(time.Now().Add(5*time.Second)), "deadline")
	_, err = io.WriteString(conn, cmd+"\n")
	mustf(tb, err, "send %q", cmd)
	out, err := io.ReadAll(conn)
	mustf(tb, err, "read the answer to %q", cmd)
	return string(out)
}
