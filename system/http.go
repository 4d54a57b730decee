package system

import (
	"fmt"
	"log/slog"
	"os"
	"syscall"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/haproxy"
)

// DefaultMaxConnections is OpenShift's router's global maxconn.
const DefaultMaxConnections = 50000

// httpSettings fills the HTTP behaviour of the HAProxy settings from c:
// the error pages read once, now; the timeouts; the forwarded-headers
// default; maxconn within what the file-descriptor limit lets HAProxy
// open (HAProxy refuses to start otherwise), said in the log when lower.
func httpSettings(c Config, s *haproxy.Settings, log *slog.Logger) error {
	for _, p := range []struct {
		flag, file string
		dst        *[]byte
	}{{"--error-page-503", c.ErrorPage503, &s.ErrorPage503}, {"--error-page-404", c.ErrorPage404, &s.ErrorPage404}} {
		if p.file == "" {
			continue
		}
		b, err := os.ReadFile(p.file)
		if err != nil {
			return fmt.Errorf("%s: %w", p.flag, err)
		}
		*p.dst = b
	}
	s.Timeouts = c.Timeouts
	s.HTTP2 = haproxy.HTTP2{Disabled: c.DisableHTTP2, DefaultCert: c.EnableHTTP2DefaultCert}
	s.Forwarded = dcm.ForwardedPolicy(c.ForwardedHeaders)
	s.MaxConn = fdBoundMaxConn(c.MaxConnections, log)
	return nil
}

// fdBoundMaxConn raises dcm's file-descriptor limit (which HAProxy, its
// child, inherits) as far as the hard limit allows for n connections, and
// returns the connections that fit.
func fdBoundMaxConn(n int, log *slog.Logger) int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return n
	}
	want := haproxy.FDsFor(n)
	if lim.Cur < want && lim.Cur < lim.Max {
		raised := lim
		raised.Cur = min(want, lim.Max)
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err == nil {
			lim = raised
		}
	}
	fit := haproxy.MaxConnFor(lim.Cur)
	if lim.Cur >= want || fit == 0 {
		return n
	}
	log.Warn("--max-connections lowered to what the file-descriptor limit allows", "asked", n, "maxconn", fit, "nofile", lim.Cur)
	return fit
}

// validateHTTP checks the HTTP flags.
func (c Config) validateHTTP() error {
	if c.MaxConnections < 1 || c.MaxConnections > 10000000 {
		return fmt.Errorf("--max-connections %d: want 1 to 10000000", c.MaxConnections)
	}
	if err := dcm.ValidateForwarded("--forwarded-headers", dcm.ForwardedPolicy(c.ForwardedHeaders)); err != nil || c.ForwardedHeaders == "" {
		return fmt.Errorf("--forwarded-headers %q: want append, replace, if-none or never", c.ForwardedHeaders)
	}
	s := haproxy.Settings{Timeouts: c.Timeouts}
	return s.ValidateTimeouts()
}
