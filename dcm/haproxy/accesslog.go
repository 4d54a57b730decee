package haproxy

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// LogSocketName is the datagram socket HAProxy sends its access log to,
// in dcm's work directory, when the access log is on: dcm reads it.
const LogSocketName = "log.sock"

// MaxLogLine is the longest line HAProxy sends (its log's len): a long
// path is cut there, not the datagram dropped.
const MaxLogLine = 8192

// logTag starts every access-log line, so dcm tells them from HAProxy's
// other messages on the same socket (a frontend stopping at a reload).
// The digit is the format's version.
const logTag = "dcm1"

// The frontends' log formats: fixed text, nothing from Kubernetes. Every
// field whose bytes come from a client is quoted with +Q and escaped with
// +E (HAProxy puts a backslash before " \ and ]), so a line splits into
// its fields whatever the client sent; HAProxy has already written the
// path's control and non-ASCII bytes, and its " and #, as #XX. Times are
// HAProxy 2.6's: %TR %Tw %Tc %Tr %Ta for HTTP, %Tw %Tc %Tt for TCP (ms,
// -1 for a step never reached).
const (
	httpLogFormat = logTag + ` h %Ts %ms %{+Q,+E}f %{+Q,+E}b %{+Q,+E}s %ci %cp %TR %Tw %Tc %Tr %Ta %ST %B %U %tsc` +
		` %{+Q,+E}HM %{+Q,+E}HPO %{+Q,+E}HV %{+Q,+E}[var(txn.host)]`
	tcpLogFormat = logTag + ` t %Ts %ms %{+Q,+E}f %{+Q,+E}b %{+Q,+E}s %ci %cp %Tw %Tc %Tt %B %U %ts`
)

// renderLogFrontend is a frontend's access log, when it is on. The log
// target is the frontend's own, not global's: the backends then send
// nothing (thousands of "proxy stopped" lines at every reload), and
// HAProxy's own messages stay where they were. HAProxy sends without
// waiting (MSG_DONTWAIT) and drops a line the socket cannot take at once,
// counting it in show info's DroppedLogs: logging never blocks traffic.
func renderLogFrontend(w *bytes.Buffer, s Settings, tcp bool) {
	if s.LogSocket == "" {
		return
	}
	format := httpLogFormat
	if tcp {
		format = tcpLogFormat
	}
	fmt.Fprintf(w, "    log unix@%s len %d format raw local0 info\n", s.LogSocket, MaxLogLine)
	w.WriteString("    option dontlognull\n")
	fmt.Fprintf(w, "    log-format %s\n", quoteCfg(format))
}

// renderLogSilence keeps fe_tls from logging the connections it hands to
// fe_https, which logs each of their requests.
func renderLogSilence(w *bytes.Buffer, s Settings) {
	if s.LogSocket != "" {
		w.WriteString("    tcp-request content set-log-level silent\n")
	}
}

// AccessLine is one access-log line of HAProxy's, as it sent it.
type AccessLine struct {
	// TCP is set on a line of fe_tls (a passthrough connection); the HTTP
	// fields are then empty.
	TCP   bool
	Start time.Time // when the connection was accepted
	// Frontend, Backend and Server are HAProxy's names: Backend is the
	// frontend's when no backend was chosen, Server "<NOSRV>" when none.
	Frontend, Backend, Server string
	ClientIP                  string
	ClientPort                int
	// Timings in ms, -1 when not reached: TR (request received), Tw
	// (queue), Tc (connect), Tr (response headers), Ta (whole request);
	// for TCP Tw, Tc and Tt (whole session).
	TR, Tw, Tc, Tr, Ta, Tt int
	Status                 int   // HTTP only
	BytesOut, BytesIn      int64 // %B (to the client) and %U (from it)
	Termination            string
	Method, Path, Version  string
	Host                   string // the Host header HAProxy routed by
}

// ErrNotAccessLine is ParseAccessLine's answer to a line HAProxy sent
// that is not an access log line (a frontend stopping at a reload).
var ErrNotAccessLine = errors.New("not an access-log line")

// ParseAccessLine parses a line of httpLogFormat or tcpLogFormat.
func ParseAccessLine(line []byte) (AccessLine, error) {
	var a AccessLine
	f, err := logFields(bytes.TrimRight(line, "\n"))
	if err != nil {
		return a, err
	}
	if len(f) < 2 || f[0] != logTag {
		return a, ErrNotAccessLine
	}
	want := 22
	if f[1] == "t" {
		a.TCP, want = true, 15
	} else if f[1] != "h" {
		return a, ErrNotAccessLine
	}
	if len(f) != want {
		return a, fmt.Errorf("access-log line: %d fields, want %d", len(f), want)
	}
	p := numParser{}
	secs, ms := p.int(f[2]), p.int(f[3])
	a.Start = time.Unix(int64(secs), int64(ms)*int64(time.Millisecond)).UTC()
	a.Frontend, a.Backend, a.Server, a.ClientIP = f[4], f[5], f[6], f[7]
	a.ClientPort = p.int(f[8])
	if a.TCP {
		a.TR, a.Tr, a.Ta = -1, -1, -1
		a.Tw, a.Tc, a.Tt = p.int(f[9]), p.int(f[10]), p.int(f[11])
		a.BytesOut, a.BytesIn, a.Termination = p.int64(f[12]), p.int64(f[13]), f[14]
	} else {
		a.TR, a.Tw, a.Tc, a.Tr, a.Ta, a.Tt = p.int(f[9]), p.int(f[10]), p.int(f[11]), p.int(f[12]), p.int(f[13]), -1
		a.Status, a.BytesOut, a.BytesIn, a.Termination = p.int(f[14]), p.int64(f[15]), p.int64(f[16]), f[17]
		a.Method, a.Path, a.Version, a.Host = f[18], f[19], f[20], f[21]
	}
	if p.err != nil {
		return AccessLine{}, fmt.Errorf("access-log line: %w", p.err)
	}
	return a, nil
}

// numParser keeps the first error of a line's numbers.
type numParser struct{ err error }

func (p *numParser) int64(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil && p.err == nil {
		p.err = fmt.Errorf("number %q: %w", s, err)
	}
	return n
}

func (p *numParser) int(s string) int { return int(p.int64(s)) }

// logFields splits a line into its fields: space-separated words, or
// quoted strings in which a backslash escapes the byte after it (+E).
func logFields(line []byte) ([]string, error) {
	var out []string
	for i := 0; i < len(line); {
		switch {
		case line[i] == ' ':
			i++
		case line[i] == '"':
			var b []byte
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) {
					i++
				}
				b = append(b, line[i])
			}
			if i == len(line) {
				return nil, errors.New("access-log line: unterminated quote")
			}
			out = append(out, string(b))
			i++
		default:
			j := bytes.IndexByte(line[i:], ' ')
			if j < 0 {
				j = len(line) - i
			}
			out = append(out, string(line[i:i+j]))
			i += j
		}
	}
	return out, nil
}
