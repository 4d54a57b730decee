package accesslog

import (
	"bufio"
	"fmt"
	"net"
	"os"

	"github.com/dcm-router/dcm/dcm/haproxy"
)

// sink is where formatted lines go.
type sink interface {
	// frame appends what is sent for one entry, its JSON given, to buf.
	frame(buf []byte, a haproxy.AccessLine, json []byte) []byte
	write(b []byte) error
	flush() error
	close()
}

// stdoutSink writes JSON lines, buffered between flushes.
type stdoutSink struct{ w *bufio.Writer }

func (s *stdoutSink) frame(buf []byte, _ haproxy.AccessLine, json []byte) []byte {
	return append(append(buf, json...), '\n')
}
func (s *stdoutSink) write(b []byte) error {
	_, err := s.w.Write(b)
	return err
}
func (s *stdoutSink) flush() error { return s.w.Flush() }
func (s *stdoutSink) close()       { _ = s.w.Flush() }

// syslogSink sends each line as one RFC 5424 message over UDP: facility
// local0, severity info, app dcm, message id "access", the JSON as the
// message. UDP never waits for the server: a line it cannot take (none
// listening, a full buffer) is lost and counted.
type syslogSink struct {
	conn     net.Conn
	hostname string
}

// syslogPri is <facility local0 (16) * 8 + severity info (6)>.
const syslogPri = "<134>"

func dialSyslog(addr string) (*syslogSink, error) {
	conn, err := net.Dial("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("--access-log syslog://%s: %w", addr, err)
	}
	return &syslogSink{conn: conn, hostname: syslogHostname()}, nil
}

// syslogHostname is the HOSTNAME field: printable ASCII without spaces, at
// most 255 bytes (RFC 5424), else the nil value "-".
func syslogHostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" || len(h) > 255 {
		return "-"
	}
	for i := 0; i < len(h); i++ {
		if h[i] <= ' ' || h[i] > '~' {
			return "-"
		}
	}
	return h
}

func (s *syslogSink) frame(buf []byte, a haproxy.AccessLine, json []byte) []byte {
	buf = append(buf, syslogPri+"1 "...)
	buf = append(buf, rfc3339ms(a.Start)...)
	buf = append(buf, ' ')
	buf = append(buf, s.hostname...)
	buf = append(buf, " dcm - access - "...)
	return append(buf, json...)
}
func (s *syslogSink) write(b []byte) error {
	_, err := s.conn.Write(b)
	return err
}
func (s *syslogSink) flush() error { return nil }
func (s *syslogSink) close()       { _ = s.conn.Close() }
