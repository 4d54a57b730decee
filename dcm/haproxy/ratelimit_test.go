package haproxy

import (
	"context"
	"fmt"
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
