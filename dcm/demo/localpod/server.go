package localpod

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// StopTimeout bounds how long Stop waits for in-flight requests once its
	// context is done, so that the shutdown of whatever runs the pods stays
	// quick.
	StopTimeout = 3 * time.Second
	// maxSlow caps /slow?ms= so that a typo cannot pin a pod for hours.
	maxSlow = 60 * time.Second
)

// Server is a pod's HTTP server, answering with Handler.
type Server struct {
	srv       *http.Server
	cancel    context.CancelFunc // cancels every request's context
	serveDone chan struct{}
	inFlight  atomic.Int64

	stopOnce sync.Once
	stopErr  error
}

// Serve starts serving Handler(name) on ln in the background; the server owns
// ln from then on. log (nil discards) gets the server's own errors, at debug
// level since a client hanging up is no news.
func Serve(ln net.Listener, name string, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	base, cancel := context.WithCancel(context.Background())
	s := &Server{cancel: cancel, serveDone: make(chan struct{})}
	handler := Handler(name)
	// HTTP/1.1 and h2c (prior knowledge), as a pod behind a Service port
	// with appProtocol h2c speaks.
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	s.srv = &http.Server{
		Protocols: &protocols,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.inFlight.Add(1)
			defer s.inFlight.Add(-1)
			handler.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       90 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	go func() {
		defer close(s.serveDone)
		// Serve returns ErrServerClosed once shutdown starts; anything else
		// is a listener failure, and Stop cleans up after it all the same.
		_ = s.srv.Serve(ln)
	}()
	return s
}

// InFlight says how many requests the server's handler is serving now. Who
// needs a request in the pod's hands before going on (a test that stops or
// scales in the pod) waits for it to count.
func (s *Server) InFlight() int { return int(s.inFlight.Load()) }

// Stop shuts the server down gracefully: it stops accepting, closes idle
// connections and waits for in-flight requests until deadline, or until
// StopTimeout after ctx ends, whichever is first; then it closes whatever is
// left and cancels the requests' contexts so that no handler outlives it.
//
// The error says whether in-flight requests had to be cut
// (context.DeadlineExceeded or context.Canceled) or something else went
// wrong. Stop must be called for every Server; later calls return the first
// one's result.
func (s *Server) Stop(ctx context.Context, deadline time.Time) error {
	s.stopOnce.Do(func() { s.stopErr = s.stop(ctx, deadline) })
	return s.stopErr
}

func (s *Server) stop(ctx context.Context, deadline time.Time) error {
	shCtx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.srv.Shutdown(shCtx) }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		t := time.NewTimer(StopTimeout)
		select {
		case err = <-done:
		case <-t.C:
			cancel()
			err = <-done
		}
		t.Stop()
	}
	closeErr := s.srv.Close()
	s.cancel()
	<-s.serveDone
	return errors.Join(err, closeErr)
}

// Handler is the pod's container: it says who answered (the body and the
// X-Pod header carry name), so that a client going through a proxy sees
// where each request landed. Every path answers that way, except /healthz,
// which answers "ok", and /slow?ms=N, which answers after N milliseconds
// (at most a minute), or not at all if the client leaves first.
func Handler(name string) http.Handler {
	body := []byte(name + "\n")
	answer := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Pod", name)
		w.Header().Set("X-Pod-Proto", r.Proto) // what the proxy spoke to the pod
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write(body)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Pod", name)
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		ms, err := strconv.Atoi(r.URL.Query().Get("ms"))
		if err != nil || ms < 0 {
			w.Header().Set("X-Pod", name)
			http.Error(w, "want /slow?ms=<non-negative integer>", http.StatusBadRequest)
			return
		}
		d := time.Duration(min(ms, int(maxSlow/time.Millisecond))) * time.Millisecond
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			answer(w, r)
		case <-r.Context().Done():
			// The client left (or the pod was killed): nobody to answer.
		}
	})
	// Every other path answers, so that any route a proxy sends here works.
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { answer(w, r) })
	return mux
}
