package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/accesslog"
	"github.com/dcm-router/dcm/dcm/haproxy"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/internal/testkit"
	"github.com/dcm-router/dcm/system"
)

// lockedBuffer is an io.Writer the access log writes to while the test
// reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// entries decodes every line written so far; a line that is not JSON
// fails the test.
func (b *lockedBuffer) entries(t *testing.T) []accesslog.Entry {
	t.Helper()
	b.mu.Lock()
	text := b.buf.String()
	b.mu.Unlock()
	var out []accesslog.Entry
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if line == "" {
			continue
		}
		var e accesslog.Entry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("access log line %q: %v", line, err)
		}
		out = append(out, e)
	}
	return out
}

// logged waits until a line matches, and returns it.
func logged(t *testing.T, s *harness.Stack, b *lockedBuffer, what string, match func(accesslog.Entry) bool) accesslog.Entry {
	t.Helper()
	var found accesslog.Entry
	s.Eventually("an access log line of "+what, 5*time.Second, func() error {
		for _, e := range b.entries(t) {
			if match(e) {
				found = e
				return nil
			}
		}
		return fmt.Errorf("none among %d lines", len(b.entries(t)))
	})
	line, _ := json.Marshal(found)
	t.Logf("%s: %s", what, line)
	return found
}

// accessLogFlag is an Options.Config that sets --access-log only.
func accessLogFlag(v string) func(*system.Config) {
	return func(c *system.Config) { c.AccessLog = v }
}

// TestAccessLog: with --access-log=stdout, a request to a route rendered
// at start, one to a route that rides a spare backend (added at runtime),
// and a passthrough connection (a spare too) each give a JSON line that
// names the route's namespace and name and the pod that answered, with
// the status and timings; a path with bytes a client should not send
// stays inside its JSON string; fe_tls logs no line for the connections
// it hands to fe_https; the worker of a reload logs as the first did.
func TestAccessLog(t *testing.T) {
	ca := testkit.NewCA(t)
	app := startPod(t, "127.0.119.1", "pod-app")
	spared := startPod(t, "127.0.119.2", "pod-spared")
	leaf := ca.Leaf(t, "tls.test")
	tp := pod(testkit.StartTLSBackend(t, "127.0.119.3", "pod-tls", leaf))
	base := desiredApp(app.endpoint(dcm.StateReady))
	src := harness.NewStaticSource(base)
	out := &lockedBuffer{}
	s := harness.Start(t, harness.Options{Source: src, Config: accessLogFlag("stdout"), AccessLog: out})

	if code, body, err := s.Get("app.test", "/hello?secret=1"); err != nil || code != 200 || body != app.Name {
		t.Fatalf("app.test: %d %q %v", code, body, err)
	}
	e := logged(t, s, out, "app.test", func(e accesslog.Entry) bool { return e.Host == "app.test" })
	if e.Namespace != "test" || e.Route != "app" || e.Pod != app.Name || e.Status != 200 || e.Spare ||
		e.Backend != appRoute.BackendName() || e.Method != "GET" || e.Path != "/hello" || e.Proto != "http" ||
		e.Frontend != "fe_http" || e.Client != "127.0.0.1" || e.Kind != dcm.KindHTTP || e.Source != dcm.SourceIngress {
		t.Errorf("app.test's line: %+v", e)
	}
	if e.RequestMs == nil || e.ResponseMs == nil || *e.ResponseMs < 0 || e.TotalMs < 0 || e.ConnectMs < 0 || e.BytesOut == 0 {
		t.Errorf("app.test's timings and bytes: %+v", e)
	}

	r, tr := poolRoute("spared", "spared.test", "/"), passthroughRoute("tls", "tls.test")
	src.Set(withRoutes(base, []dcm.Route{r, tr}, []pod{spared, tp}))
	answers(s, "spared.test", "/", spared.Name)
	servedWith(s, "tls.test", tp.Name, ca, leaf)
	slot := s.Backend(r.BackendName()).Slot
	if slot == "" {
		t.Fatal("the spared route rides no spare")
	}
	e = logged(t, s, out, "spared.test", func(e accesslog.Entry) bool { return e.Host == "spared.test" && e.Status == 200 })
	if e.Namespace != "test" || e.Route != "spared" || e.Pod != spared.Name || !e.Spare || e.Backend != slot {
		t.Errorf("spared.test's line (spare %s): %+v", slot, e)
	}
	e = logged(t, s, out, "tls.test", func(e accesslog.Entry) bool { return e.Proto == "tcp" && e.Route == "tls" })
	if e.Namespace != "test" || e.Pod != tp.Name || !e.Spare || e.Frontend != "fe_tls" || e.Kind != dcm.KindPassthrough ||
		e.BytesOut == 0 || e.RequestMs != nil || e.Status != 0 {
		t.Errorf("tls.test's line: %+v", e)
	}

	// A raw request: " \ and ] in the path and in the Host header.
	raw := "GET /x\"y\\z]?q HTTP/1.1\r\nHost: app.test\r\nX-Evil: \"}\r\nConnection: close\r\n\r\n"
	if resp := rawRequest(t, s.HTTPAddr, raw); !strings.HasPrefix(resp, "HTTP/1.1 200") {
		t.Fatalf("raw request: %q", resp)
	}
	e = logged(t, s, out, "the raw request", func(e accesslog.Entry) bool { return strings.HasPrefix(e.Path, "/x") })
	if e.Path != `/x#22y\z]` || e.Route != "app" || e.Status != 200 {
		t.Errorf("the raw request's line: %+v", e)
	}
	for _, e := range out.entries(t) {
		if e.Backend == haproxy.TerminateBackend {
			t.Errorf("fe_tls logged a connection it handed to fe_https: %+v", e)
		}
	}
	// A reload's new worker logs to the same socket.
	reloads := s.Reloads()
	s.Engine.Reload("test")
	s.Eventually("a reload", 15*time.Second, func() error {
		if s.Reloads() <= reloads {
			return fmt.Errorf("%v reloads", s.Reloads())
		}
		return nil
	})
	if code, _, err := s.Get("app.test", "/after-reload"); err != nil || code != 200 {
		t.Fatalf("after the reload: %d %v", code, err)
	}
	if e := logged(t, s, out, "after the reload", func(e accesslog.Entry) bool { return e.Path == "/after-reload" }); e.Route != "app" || e.Pod != app.Name {
		t.Errorf("after the reload: %+v", e)
	}
	if got := s.Counter("dcm_access_log_lines_total", "result", "written"); got < 5 {
		t.Errorf("dcm_access_log_lines_total{result=written} = %v, want at least 5", got)
	}
}

// rawRequest sends text as it is and returns the first line of the answer.
func rawRequest(t *testing.T, addr, text string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, text); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(c).ReadString('\n')
	return line
}

// TestAccessLogOff: dcm's default has no access log: no log line in the
// cfg, no socket, nothing written.
func TestAccessLogOff(t *testing.T) {
	app := startPod(t, "127.0.119.4", "pod-off")
	out := &lockedBuffer{}
	s := harness.Start(t, harness.Options{Source: harness.NewStaticSource(desiredApp(app.endpoint(dcm.StateReady))), AccessLog: out})
	if code, _, err := s.Get("app.test", "/"); err != nil || code != 200 {
		t.Fatalf("app.test: %d %v", code, err)
	}
	cfg, err := os.ReadFile(filepath.Join(s.Dir, haproxy.ConfigName))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(cfg, []byte("\n    log")) {
		t.Error("haproxy.cfg has a log line with --access-log=off")
	}
	if _, err := os.Stat(filepath.Join(s.Dir, haproxy.LogSocketName)); err == nil {
		t.Error("a log socket exists with --access-log=off")
	}
	time.Sleep(200 * time.Millisecond)
	if n := len(out.entries(t)); n != 0 {
		t.Errorf("%d access log lines with --access-log=off", n)
	}
}

// TestAccessLogSyslog: --access-log=syslog://127.0.0.1:<port> sends each
// line as an RFC 5424 message over UDP, the JSON as its message.
func TestAccessLogSyslog(t *testing.T) {
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	app := startPod(t, "127.0.119.5", "pod-syslog")
	s := harness.Start(t, harness.Options{Source: harness.NewStaticSource(desiredApp(app.endpoint(dcm.StateReady))),
		Config: accessLogFlag("syslog://" + udp.LocalAddr().String())})
	if code, _, err := s.Get("app.test", "/via-syslog"); err != nil || code != 200 {
		t.Fatalf("app.test: %d %v", code, err)
	}
	buf := make([]byte, 65536)
	_ = udp.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, _, err := udp.ReadFrom(buf)
	if err != nil {
		t.Fatalf("no syslog message: %v", err)
	}
	msg := string(buf[:n])
	head, body, ok := strings.Cut(msg, " dcm - access - ")
	if !ok || !strings.HasPrefix(head, "<134>1 ") {
		t.Fatalf("not an RFC 5424 message of dcm's: %q", msg)
	}
	var e accesslog.Entry
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("message %q: %v", body, err)
	}
	if e.Route != "app" || e.Namespace != "test" || e.Pod != app.Name || e.Status != 200 || e.Path != "/via-syslog" {
		t.Errorf("syslog line: %+v", e)
	}
}

// BenchmarkAccessLog measures requests per second through HAProxy to one
// pod, with keep-alive clients in parallel, with the access log off and
// on (written to io.Discard: the cost of HAProxy's sending and of dcm's
// reading, naming and encoding, not of a terminal), and reports the lines
// lost on either side: dcm's (its queue full) and HAProxy's (the socket
// full: show info's DroppedLogs).
func BenchmarkAccessLog(b *testing.B) {
	for _, mode := range []string{"off", "stdout"} {
		b.Run(mode, func(b *testing.B) {
			app := pod(testkit.StartBackend(b, "127.0.119.6", "pod-bench"))
			s := harness.Start(b, harness.Options{Source: harness.NewStaticSource(desiredApp(app.endpoint(dcm.StateReady))),
				Config: accessLogFlag(mode), AccessLog: io.Discard})
			url := "http://" + s.HTTPAddr + "/"
			b.SetParallelism(4) // 4 × GOMAXPROCS clients
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, _ := http.NewRequest(http.MethodGet, url, nil)
					req.Host = "app.test"
					resp, err := s.HTTP.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						b.Errorf("HTTP %d", resp.StatusCode)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
			b.StopTimer()
			if mode == "off" {
				return
			}
			time.Sleep(200 * time.Millisecond) // the last lines
			info, err := s.Driver.Info(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(s.Counter("dcm_access_log_lines_total", "result", "written"), "written")
			b.ReportMetric(s.Counter("dcm_access_log_lines_total", "result", "dropped"), "dcm-dropped")
			dropped, _ := strconv.Atoi(info.Fields["DroppedLogs"])
			b.ReportMetric(float64(dropped), "haproxy-dropped")
		})
	}
}
