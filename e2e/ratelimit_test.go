package e2e

import (
	"crypto/tls"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/internal/testkit"
)

// limitedAfter sends n+1 requests for host from src: nil when the first n
// are served and the last is refused (its connection closed).
func limitedAfter(src, url, host string, n int) error {
	for i := range n {
		if code, _, err := getAt(src, url, host, nil); err != nil || code != 200 {
			return fmt.Errorf("request %d of %d from %s: %d %v", i+1, n, src, code, err)
		}
	}
	if code, _, err := getAt(src, url, host, nil); err == nil {
		return fmt.Errorf("request %d from %s answered %d", n+1, src, code)
	}
	return nil
}

// TestRateLimitAtRuntime: OpenShift's rate limits on routes added into
// spares: rate-http 3 serves a client's first three requests in 10 s and
// closes the connection of the fourth without an answer (each attempt
// from a fresh client address, so the wait for the limit to apply does
// not count against it); concurrent-tcp 2 on a passthrough route refuses a
// client's second TLS connection while its first is open and serves it
// again once closed; the limits removed, everyone is served. No reload.
func TestRateLimitAtRuntime(t *testing.T) {
	ca := testkit.NewCA(t)
	app := startPod(t, "127.0.32.1", "app")
	web := startPod(t, "127.0.32.2", "web")
	dbLeaf := ca.Leaf(t, "db.test")
	db := pod(testkit.StartTLSBackend(t, "127.0.32.4", "db", dbLeaf))
	base := desiredApp(app.endpoint(dcm.StateReady))
	src := harness.NewStaticSource(base)
	s := harness.Start(t, harness.Options{Source: src})
	pid, reloads := s.WorkerPID(), s.Reloads()
	set := func(webLimit, dbLimit *dcm.RateLimit) {
		w, p := poolRoute("web", "web.test", "/"), passthroughRoute("db", "db.test")
		w.RateLimit, p.RateLimit = webLimit, dbLimit
		src.Set(withRoutes(base, []dcm.Route{w, p}, []pod{web, db}))
	}
	url := "http://" + s.HTTPAddr + "/"
	fresh := 0 // counts the client addresses used: 127.0.0.11 to .250, then again
	next := func() string { fresh++; return fmt.Sprintf("127.0.0.%d", 11+fresh%240) }

	set(&dcm.RateLimit{RateHTTP: 3}, &dcm.RateLimit{ConcurrentTCP: 2})
	s.Eventually("rate-http 3 refuses the fourth request", 10*time.Second, func() error {
		return limitedAfter(next(), url, "web.test", 3)
	})
	tlsAt := func(src string) (*tls.Conn, error) {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
		return tls.DialWithDialer(d, "tcp", s.HTTPSAddr, &tls.Config{ServerName: "db.test", RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12})
	}
	s.Eventually("concurrent-tcp 2 refuses a second connection", 10*time.Second, func() error {
		c := next()
		first, err := tlsAt(c)
		if err != nil {
			return fmt.Errorf("first connection: %w", err)
		}
		defer first.Close()
		if second, err := tlsAt(c); err == nil {
			second.Close()
			return fmt.Errorf("a second connection from %s went through", c)
		}
		first.Close()
		return nil
	})
	c := next()
	first, err := tlsAt(c)
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	s.Eventually("the connection closed, another one goes through", 5*time.Second, func() error {
		conn, err := tlsAt(c)
		if err == nil {
			conn.Close()
		}
		return err
	})

	set(nil, nil)
	s.Eventually("no limits: a client's requests all served", 10*time.Second, func() error {
		c := next()
		for i := range 6 {
			if code, _, err := getAt(c, url, "web.test", nil); err != nil || code != 200 {
				return fmt.Errorf("request %d from %s: %d %v", i+1, c, code, err)
			}
		}
		return nil
	})
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("worker %d → %d, reloads %v → %v: rate limits reloaded", pid, s.WorkerPID(), reloads, s.Reloads())
	}
	filesEqualRuntime(t, s)
	if got := s.Counter("dcm_runtime_errors_total"); got != 0 {
		t.Errorf("%v runtime errors", got)
	}
}
