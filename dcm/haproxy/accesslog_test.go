package haproxy

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

// Lines as HAProxy 2.6.12 sent them with these formats (a route's request,
// a bad request, a passthrough connection, a path and Host header with
// " \ ] and bytes outside ASCII).
var accessLines = []struct {
	line string
	want AccessLine
}{
	{`dcm1 h 1796418923 824 "fe_http" "be_http:ns:r" "pod-a:http" 127.0.0.1 38028 0 0 1 2 3 200 217 98 ---- "GET" "/a%20b/#22q" "HTTP/1.1" "foo.example"` + "\n",
		AccessLine{Start: time.Unix(1796418923, 824e6).UTC(), Frontend: "fe_http", Backend: "be_http:ns:r", Server: "pod-a:http",
			ClientIP: "127.0.0.1", ClientPort: 38028, TR: 0, Tw: 0, Tc: 1, Tr: 2, Ta: 3, Tt: -1, Status: 200, BytesOut: 217, BytesIn: 98,
			Termination: "----", Method: "GET", Path: "/a%20b/#22q", Version: "HTTP/1.1", Host: "foo.example"}},
	{`dcm1 h 1796418944 063 "fe_http" "fe_http" "<NOSRV>" ::1 55576 -1 -1 -1 -1 0 400 0 0 PR-- "<BADREQ>" "<BADREQ>" "<BADREQ>" ""`,
		AccessLine{Start: time.Unix(1796418944, 63e6).UTC(), Frontend: "fe_http", Backend: "fe_http", Server: "<NOSRV>",
			ClientIP: "::1", ClientPort: 55576, TR: -1, Tw: -1, Tc: -1, Tr: -1, Ta: 0, Tt: -1, Status: 400,
			Termination: "PR--", Method: "<BADREQ>", Path: "<BADREQ>", Version: "<BADREQ>"}},
	{`dcm1 t 1796418944 077 "fe_tls" "be_passthrough:_pool:1" "s2" 127.0.0.1 43302 2 -1 3004 0 517 SC`,
		AccessLine{TCP: true, Start: time.Unix(1796418944, 77e6).UTC(), Frontend: "fe_tls", Backend: "be_passthrough:_pool:1", Server: "s2",
			ClientIP: "127.0.0.1", ClientPort: 43302, TR: -1, Tw: 2, Tc: -1, Tr: -1, Ta: -1, Tt: 3004, BytesIn: 517, Termination: "SC"}},
	{"dcm1 h 1 0 \"fe_https\" \"be_x\" \"s\" 127.0.0.1 1 0 0 0 0 0 200 1 1 ---- \"GET\" \"/a#22b\\\\c\\]%22d\" \"HTTP/2.0\" \"a\\\"b \\\\c\\]\t\xc3\xa9\x7f\"",
		AccessLine{Start: time.Unix(1, 0).UTC(), Frontend: "fe_https", Backend: "be_x", Server: "s", ClientIP: "127.0.0.1", ClientPort: 1,
			Tt: -1, Status: 200, BytesOut: 1, BytesIn: 1, Termination: "----", Method: "GET", Path: `/a#22b\c]%22d`, Version: "HTTP/2.0",
			Host: "a\"b \\c]\t\xc3\xa9\x7f"}},
}

func TestParseAccessLine(t *testing.T) {
	for _, c := range accessLines {
		got, err := ParseAccessLine([]byte(c.line))
		if err != nil {
			t.Errorf("%q: %v", c.line, err)
			continue
		}
		if got != c.want {
			t.Errorf("%q:\n got %+v\nwant %+v", c.line, got, c.want)
		}
	}
	for _, line := range []string{"Proxy fe_http stopped (cumulated conns: FE: 3, BE: 0).", "dcm2 h 1", "dcm1 x 1 2", ""} {
		if _, err := ParseAccessLine([]byte(line)); !errors.Is(err, ErrNotAccessLine) {
			t.Errorf("%q: got %v, want ErrNotAccessLine", line, err)
		}
	}
	for _, line := range []string{`dcm1 h 1 2 "fe_http`, `dcm1 h 1 2 3`, `dcm1 t x 0 "f" "b" "s" ip 1 2 3 4 5 6 --`} {
		if _, err := ParseAccessLine([]byte(line)); err == nil || errors.Is(err, ErrNotAccessLine) {
			t.Errorf("%q: got %v, want a parse error", line, err)
		}
	}
}

// FuzzParseAccessLine: no line makes the parser panic.
func FuzzParseAccessLine(f *testing.F) {
	for _, c := range accessLines {
		f.Add([]byte(c.line))
	}
	f.Fuzz(func(_ *testing.T, line []byte) { _, _ = ParseAccessLine(line) })
}

// TestRenderAccessLog: with a log socket, each frontend logs to it in its
// format and HAProxy takes the cfg; without, the cfg has no log line; a
// socket path that is not safe is refused.
func TestRenderAccessLog(t *testing.T) {
	bin := testkit.HAProxy(t)
	dir := testkit.ShortDir(t)
	s := Settings{AdminSocket: filepath.Join(dir, "admin.sock"), HTTPBind: "127.0.0.1:1", HTTPSBind: "127.0.0.1:2"}
	r := route("ns", "v", "v.example", "/", dcm.PathPrefix)
	st := state(backendFor(r, dcm.Server{Name: "s", Endpoint: "s", Addr: "::1", Port: 80, Weight: 1, State: dcm.StateReady}))
	off, err := Render(s, st)
	mustf(t, err, "render")
	if bytes.Contains(off.Config, []byte("    log")) {
		t.Error("a log line without a log socket")
	}
	s.LogSocket = filepath.Join(dir, LogSocketName)
	on, err := Render(s, st)
	mustf(t, err, "render")
	if n := strings.Count(string(on.Config), "    log unix@"+s.LogSocket+" "); n != 3 {
		t.Errorf("%d frontends log, want 3 (fe_http, fe_tls, fe_https)", n)
	}
	if !strings.Contains(string(on.Config), "tcp-request content set-log-level silent") {
		t.Error("fe_tls logs the connections it hands to fe_https")
	}
	pem, err := EnsureDefaultCert(t.TempDir())
	mustf(t, err, "default certificate")
	on.Certs = map[string][]byte{DefaultCertName: pem}
	if err := Validate(context.Background(), bin, dir, on); err != nil {
		t.Fatalf("HAProxy refuses the cfg with an access log: %v", err)
	}
	for _, bad := range []string{"log.sock", filepath.Join(dir, "a b.sock"), "/" + strings.Repeat("x", 110)} {
		s.LogSocket = bad
		if _, err := Render(s, st); err == nil {
			t.Errorf("log socket %q accepted", bad)
		}
	}
}
