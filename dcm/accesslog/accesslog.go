// Package accesslog is dcm's access log: HAProxy sends a line per request
// (per connection for passthrough routes) to a datagram socket in dcm's
// work directory; dcm reads it, names the route and pod behind HAProxy's
// backend and server names, and writes a JSON line to stdout or forwards
// it as syslog over UDP.
//
// Nothing here can hold HAProxy up: HAProxy drops a line the socket cannot
// take at once, and dcm reads the socket into a bounded queue and drops
// what does not fit when its writer falls behind, counting the drops.
package accesslog

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync/atomic"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/haproxy"
)

// Target is where --access-log sends lines.
type Target struct {
	// Syslog is host:port of a syslog server (UDP); "" with Stdout.
	Syslog string
	Stdout bool
}

// Off reports whether there is no access log.
func (t Target) Off() bool { return !t.Stdout && t.Syslog == "" }

// ParseTarget reads --access-log: off, stdout or syslog://host:port.
func ParseTarget(s string) (Target, error) {
	switch {
	case s == "off":
		return Target{}, nil
	case s == "stdout":
		return Target{Stdout: true}, nil
	case strings.HasPrefix(s, "syslog://"):
		addr := strings.TrimPrefix(s, "syslog://")
		host, port, err := net.SplitHostPort(addr)
		if err != nil || host == "" || strings.ContainsAny(addr, "/?#@") {
			return Target{}, fmt.Errorf("--access-log %q: want syslog://host:port", s)
		}
		if p, err := net.LookupPort("udp", port); err != nil || p < 1 || p > 65535 {
			return Target{}, fmt.Errorf("--access-log %q: bad port", s)
		}
		return Target{Syslog: addr}, nil
	}
	return Target{}, fmt.Errorf("--access-log %q: want off, stdout or syslog://host:port", s)
}

// States is where routes and pods are found: the engine's state of HAProxy
// and a number that changes whenever that state does.
type States interface {
	ActualState() (dcm.State, uint64)
}

// Options configure a Logger.
type Options struct {
	Socket string // the datagram socket to create, HAProxy's LogSocket
	Target Target
	// Stdout is where a Stdout target writes (nil: os.Stdout).
	Stdout io.Writer
	States States
	// Queue is how many lines wait between the socket and the writer
	// (default 4096): a writer slower than that loses lines, HAProxy
	// never waits.
	Queue int
	Log   *slog.Logger
}

// Logger reads HAProxy's access log and writes it out.
type Logger struct {
	o     Options
	conn  *net.UnixConn
	out   sink
	queue chan []byte
	// Counters for the metrics: lines written, lines lost (queue full or
	// the write failed), lines that were not access-log lines.
	written, dropped, other atomic.Uint64
}

// Listen creates the socket (replacing a stale one) and the output, so
// that HAProxy, started after, finds the socket.
func Listen(o Options) (*Logger, error) {
	if o.Queue <= 0 {
		o.Queue = 4096
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if err := os.Remove(o.Socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("access log socket: %w", err)
	}
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: o.Socket, Net: "unixgram"})
	if err != nil {
		return nil, fmt.Errorf("access log socket: %w", err)
	}
	// A larger buffer rides out a burst while the reader is off the CPU
	// (the kernel caps it at net.core.rmem_max).
	_ = conn.SetReadBuffer(4 << 20)
	l := &Logger{o: o, conn: conn, queue: make(chan []byte, o.Queue)}
	if o.Target.Syslog != "" {
		if l.out, err = dialSyslog(o.Target.Syslog); err != nil {
			conn.Close()
			return nil, err
		}
	} else {
		l.out = &stdoutSink{w: bufio.NewWriterSize(o.Stdout, 64<<10)}
	}
	return l, nil
}

// Written, Dropped and Other are the counters of lines written, lost and
// not access-log lines, since Listen.
func (l *Logger) Written() uint64 { return l.written.Load() }
func (l *Logger) Dropped() uint64 { return l.dropped.Load() }
func (l *Logger) Other() uint64   { return l.other.Load() }

// Run reads and writes until ctx ends, then closes the socket.
func (l *Logger) Run(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.write()
	}()
	stop := context.AfterFunc(ctx, func() { l.conn.Close() })
	defer stop()
	err := l.read()
	close(l.queue)
	<-done
	_ = os.Remove(l.o.Socket)
	l.out.close()
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// read moves datagrams into the queue as fast as they come: the kernel
// holds only a few (net.unix.max_dgram_qlen, often 10) before HAProxy's
// sends fail.
func (l *Logger) read() error {
	buf := make([]byte, haproxy.MaxLogLine+1024)
	for {
		n, _, err := l.conn.ReadFromUnix(buf)
		if err != nil {
			return fmt.Errorf("access log socket: %w", err)
		}
		select {
		case l.queue <- append([]byte(nil), buf[:n]...):
		default:
			l.dropped.Add(1)
		}
	}
}

// write turns queued lines into entries, flushing whenever the queue is
// empty, so a burst costs one write and a single line waits for none.
func (l *Logger) write() {
	var x index
	var buf []byte
	for line := range l.queue {
		x.refresh(l.o.States)
		for {
			buf = l.format(&x, line, buf[:0])
			if buf != nil {
				if err := l.out.write(buf); err != nil {
					l.dropped.Add(1)
					l.o.Log.Debug("access log write failed", "err", err)
				} else {
					l.written.Add(1)
				}
			}
			var ok bool
			select {
			case line, ok = <-l.queue:
			default:
			}
			if !ok {
				break
			}
		}
		if err := l.out.flush(); err != nil {
			l.o.Log.Debug("access log flush failed", "err", err)
		}
	}
}

// format appends line's JSON to buf; nil for a line that is not an access
// log line (said in dcm's log at debug).
func (l *Logger) format(x *index, line, buf []byte) []byte {
	a, err := haproxy.ParseAccessLine(line)
	if err != nil {
		l.other.Add(1)
		l.o.Log.Debug("haproxy log", "line", strings.TrimSpace(string(line)), "err", err)
		return nil
	}
	e := x.entry(a)
	b, err := json.Marshal(e)
	if err != nil { // an Entry always marshals
		return nil
	}
	return l.out.frame(buf, a, b)
}
