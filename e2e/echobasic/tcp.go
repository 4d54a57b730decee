package echobasic

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"
)

// TCPWelcome is the first line echo-basic's TCP echo (TCP_ECHO_SERVER)
// writes on every connection.
const TCPWelcome = "Gateway API Test TCP Server\n"

// TCPContext is the TCP echo's identity in its TEST answer: the pod's,
// and the ports it serves.
type TCPContext struct {
	Identity
	TCPPort string `json:"tcpport"`
	TLSPort string `json:"tlsport,omitempty"`
}

// TCPTLS is what the TCP echo saw of a TLS connection.
type TCPTLS struct {
	Version            string `json:"version"`
	ServerName         string `json:"serverName"`
	NegotiatedProtocol string `json:"negotiatedProtocol,omitempty"`
	Curves             string `json:"curves,omitempty"`
	CipherSuite        string `json:"cipherSuite"`
}

// TCPAnswer is the TCP echo's answer to TEST, the shape of echo-basic's
// tcpserver.TCPAssertions.
type TCPAnswer struct {
	TCPContext
	IsTLS bool    `json:"isTLS"`
	TLS   *TCPTLS `json:"tls,omitempty"`
}

// TCPServer is a running TCP echo container.
type TCPServer struct {
	ls    []net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]bool
}

// ServeTCP starts echo-basic's TCP echo: plain on l.HTTP (TCP_PORT) and,
// when l.HTTPS is set, TLS on it (TLS_PORT, tlsConfig required). Each
// connection gets TCPWelcome, then a line for each line it sends: PING →
// PONG, IS_TLS → true or false, TEST → the JSON TCPAnswer; other lines get
// nothing, as in echo-basic.
func ServeTCP(cfg Config, l Listeners, tlsConfig *tls.Config, log *slog.Logger) *TCPServer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &TCPServer{conns: map[net.Conn]bool{}}
	ctx := TCPContext{Identity: cfg.Identity, TCPPort: cfg.HTTPPort}
	if l.HTTPS != nil {
		ctx.TLSPort = cfg.HTTPSPort
		s.ls = append(s.ls, tls.NewListener(l.HTTPS, tlsConfig))
	}
	s.ls = append([]net.Listener{l.HTTP}, s.ls...)
	for _, ln := range s.ls {
		s.wg.Go(func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					if !errors.Is(err, net.ErrClosed) {
						log.Warn("echo-basic TCP accept", "err", err)
					}
					return
				}
				if !s.track(c, true) {
					_ = c.Close()
					return
				}
				s.wg.Go(func() {
					defer s.track(c, false)
					defer c.Close()
					serveTCPConn(c, ctx, log)
				})
			}
		})
	}
	return s
}

// track adds or removes a connection; false once the server stops.
func (s *TCPServer) track(c net.Conn, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns == nil {
		return false
	}
	if add {
		s.conns[c] = true
	} else {
		delete(s.conns, c)
	}
	return true
}

func serveTCPConn(c net.Conn, ctx TCPContext, log *slog.Logger) {
	ans := TCPAnswer{TCPContext: ctx}
	if tc, ok := c.(*tls.Conn); ok {
		hctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			log.Debug("echo-basic TCP TLS handshake", "err", err)
			return
		}
		st := tc.ConnectionState()
		ans.IsTLS = true
		ans.TLS = &TCPTLS{Version: tls.VersionName(st.Version), ServerName: st.ServerName, NegotiatedProtocol: st.NegotiatedProtocol,
			Curves: st.CurveID.String(), CipherSuite: tls.CipherSuiteName(st.CipherSuite)}
	}
	test, err := json.Marshal(ans)
	if err != nil {
		return
	}
	if _, err := fmt.Fprint(c, TCPWelcome); err != nil {
		return
	}
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		var out string
		switch sc.Text() {
		case "TEST":
			out = string(test) + "\n"
		case "IS_TLS":
			out = fmt.Sprintf("%t\n", ans.IsTLS)
		case "PING":
			out = "PONG\n"
		default:
			continue
		}
		if _, err := fmt.Fprint(c, out); err != nil {
			return
		}
	}
}

// Stop closes the listeners and, at deadline or when ctx ends, the
// connections still open, and waits for them.
func (s *TCPServer) Stop(ctx context.Context, deadline time.Time) error {
	var errs []error
	for _, ln := range s.ls {
		if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-done:
		return errors.Join(errs...)
	case <-t.C:
	case <-ctx.Done():
	}
	s.mu.Lock()
	for c := range s.conns {
		_ = c.Close()
	}
	s.conns = nil
	s.mu.Unlock()
	<-done
	return errors.Join(errs...)
}
