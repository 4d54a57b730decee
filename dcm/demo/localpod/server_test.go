package localpod

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/dcm-router/dcm/internal/testkit"
)

func TestHandler(t *testing.T) {
	srv := httptest.NewServer(Handler("web-abc-12345"))
	defer srv.Close()
	tests := []struct {
		path       string
		wantStatus int
		wantBody   string
		minTime    time.Duration
	}{
		{"/", 200, "web-abc-12345\n", 0},
		{"/api/users?x=1", 200, "web-abc-12345\n", 0},
		{"/healthz", 200, "ok\n", 0},
		{"/slow?ms=120", 200, "web-abc-12345\n", 120 * time.Millisecond},
		{"/slow?ms=0", 200, "web-abc-12345\n", 0},
		{"/slow", 400, "", 0},
		{"/slow?ms=-5", 400, "", 0},
		{"/slow?ms=abc", 400, "", 0},
		{"/slow?ms=99999999999999999999", 400, "", 0}, // beyond int64
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			start := time.Now()
			resp, err := srv.Client().Get(srv.URL + tt.path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus || tt.wantBody != "" && string(body) != tt.wantBody {
				t.Errorf("%d %q, want %d %q", resp.StatusCode, body, tt.wantStatus, tt.wantBody)
			}
			if resp.Header.Get("X-Pod") != "web-abc-12345" {
				t.Errorf("X-Pod %q", resp.Header.Get("X-Pod"))
			}
			if took := time.Since(start); took < tt.minTime {
				t.Errorf("answered after %v, want at least %v", took, tt.minTime)
			}
		})
	}

	t.Run("slow stops when the client leaves", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/slow?ms=60000", nil)
		start := time.Now()
		if _, err := srv.Client().Do(req); err == nil {
			t.Fatalf("want the client's timeout")
		}
		// httptest.Server.Close waits for handlers: it would hang for a
		// minute if the handler kept sleeping.
		if time.Since(start) > 5*time.Second {
			t.Errorf("took %v", time.Since(start))
		}
	})
}

func TestServerStop(t *testing.T) {
	tests := []struct {
		name string
		// slow is the request in flight when Stop is called; 0 for none.
		slow time.Duration
		// ctxDone has Stop's context over before the call.
		ctxDone bool
		// deadline is from the call of Stop.
		deadline time.Duration
		wantErr  error // nil: no error
		wantOK   bool  // the in-flight request gets its answer
		// Stop returns after about took (within half a second, or 2 s for
		// the StopTimeout case, whose bound is loose in dcm/demo too).
		took time.Duration
	}{
		{name: "idle", deadline: 5 * time.Second},
		{name: "in-flight request finishes before the deadline", slow: 300 * time.Millisecond,
			deadline: 5 * time.Second, wantOK: true, took: 300 * time.Millisecond},
		{name: "deadline cuts the in-flight request", slow: 10 * time.Second,
			deadline: 300 * time.Millisecond, wantErr: context.DeadlineExceeded, took: 300 * time.Millisecond},
		{name: "context over: deadline sooner than StopTimeout", slow: 10 * time.Second, ctxDone: true,
			deadline: 300 * time.Millisecond, wantErr: context.DeadlineExceeded, took: 300 * time.Millisecond},
		{name: "context over: StopTimeout sooner than deadline", slow: 50 * time.Second, ctxDone: true,
			deadline: time.Minute, wantErr: context.Canceled, took: StopTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			s := Serve(ln, "pod-a", nil)
			url := fmt.Sprintf("http://%s/slow?ms=%d", ln.Addr(), tt.slow.Milliseconds())
			client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

			answered := make(chan bool, 1)
			if tt.slow > 0 {
				go func() {
					resp, err := client.Get(url)
					if err != nil {
						answered <- false
						return
					}
					body, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					answered <- err == nil && resp.StatusCode == http.StatusOK && string(body) == "pod-a\n"
				}()
				testkit.Eventually(t, "the request in the handler", 5*time.Second, func() error {
					if n := s.InFlight(); n != 1 {
						return fmt.Errorf("%d requests in the handler", n)
					}
					return nil
				})
			}

			ctx, cancel := context.WithCancel(context.Background())
			if tt.ctxDone {
				cancel()
			}
			defer cancel()
			start := time.Now()
			err = s.Stop(ctx, start.Add(tt.deadline))
			took := time.Since(start)
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("Stop: %v, want %v", err, tt.wantErr)
			}
			slack := max(500*time.Millisecond, tt.took/2) // a busy machine stretches the longer waits
			if took < tt.took-slack || took > tt.took+slack {
				t.Errorf("Stop returned after %v, want about %v", took, tt.took)
			}
			if tt.slow > 0 {
				select {
				case ok := <-answered:
					if ok != tt.wantOK {
						t.Errorf("in-flight request answered: %v, want %v", ok, tt.wantOK)
					}
				case <-time.After(5 * time.Second):
					t.Errorf("in-flight request still running after Stop returned")
				}
			}
			if conn, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
				conn.Close()
				t.Errorf("%s still accepts connections after Stop", ln.Addr())
			}
			if again := s.Stop(context.Background(), time.Now().Add(time.Second)); again != err {
				t.Errorf("second Stop: %v, want the first one's %v", again, err)
			}
		})
	}
}
