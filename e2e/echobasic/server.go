package echobasic

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Listeners are a container's bound ports; HTTPS is nil when it serves
// none.
type Listeners struct {
	HTTP, H2C, HTTPS net.Listener
}

// Server is a running echo-basic container.
type Server struct {
	servers []*http.Server
	done    chan struct{}
	cancel  context.CancelFunc
}

// Serve starts the container's servers on l (it owns the listeners from
// then on); tlsConfig is required when l.HTTPS is set. log (nil discards)
// gets the servers' own errors, at debug level.
func Serve(cfg Config, l Listeners, tlsConfig *tls.Config, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	base, cancel := context.WithCancel(context.Background())
	s := &Server{cancel: cancel}
	sh := newServer(cfg)
	newHTTP := func(h http.Handler, p *http.Protocols) *http.Server {
		return &http.Server{Handler: h, Protocols: p, ReadHeaderTimeout: 10 * time.Second,
			BaseContext: func(net.Listener) context.Context { return base },
			ErrorLog:    slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	}
	var h2c http.Protocols
	h2c.SetHTTP1(true)
	h2c.SetUnencryptedHTTP2(true)
	type run struct {
		srv   *http.Server
		serve func() error
	}
	var runs []run
	plain := newHTTP(sh.handler(), nil)
	runs = append(runs, run{plain, func() error { return plain.Serve(l.HTTP) }})
	up := newHTTP(sh.h2cHandler(), &h2c)
	runs = append(runs, run{up, func() error { return up.Serve(l.H2C) }})
	if l.HTTPS != nil {
		// HTTP/1.1 and h2 by ALPN, as http.ListenAndServeTLS offers.
		sec := newHTTP(sh.handler(), nil)
		sec.TLSConfig = tlsConfig
		runs = append(runs, run{sec, func() error { return sec.ServeTLS(l.HTTPS, "", "") }})
	}
	s.done = make(chan struct{}, len(runs))
	for _, r := range runs {
		s.servers = append(s.servers, r.srv)
		go func() {
			defer func() { s.done <- struct{}{} }()
			if err := r.serve(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Warn("echo-basic server", "err", err)
			}
		}()
	}
	return s
}

// Stop shuts the servers down gracefully until deadline (or at once when
// ctx ends), then closes what is left and cancels the requests still
// running (a ?delay= among them).
func (s *Server) Stop(ctx context.Context, deadline time.Time) error {
	sctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var errs []error
	for _, srv := range s.servers {
		if err := srv.Shutdown(sctx); err != nil {
			errs = append(errs, err, srv.Close())
		}
	}
	s.cancel()
	for range s.servers {
		<-s.done
	}
	return errors.Join(errs...)
}
