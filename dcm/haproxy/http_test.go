package haproxy

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

// startHeaderPod listens on ip and answers every request with its headers
// as JSON (name → values), after ?ms= milliseconds when asked; a request
// with "Upgrade: echo" is switched (101) to a raw echo of what it sends.
func startHeaderPod(tb testing.TB, ip string) testkit.Backend {
	tb.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		tb.Fatalf("listen on %s: %v", ip, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ms, err := strconv.Atoi(r.URL.Query().Get("ms")); err == nil {
			time.Sleep(time.Duration(min(ms, 10000)) * time.Millisecond)
		}
		if r.Header.Get("Upgrade") == "echo" {
			conn, rw, err := w.(http.Hijacker).Hijack()
			if err != nil {
				return
			}
			defer conn.Close()
			rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
			rw.Flush()
			io.Copy(conn, rw)
			return
		}
		h := map[string][]string(r.Header.Clone())
		h["Host"] = []string{r.Host}
		json.NewEncoder(w).Encode(h)
	}), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	tb.Cleanup(func() { srv.Close() })
	a := l.Addr().(*net.TCPAddr)
	return testkit.Backend{Name: "headers", Addr: a.IP.String(), Port: a.Port}
}

// request sends one request through HAProxy with extra headers and
// returns the response; scheme "https" goes over TLS (any certificate).
func request(tb testing.TB, scheme, bind, host, path string, hdr map[string]string) (*http.Response, []byte) {
	tb.Helper()
	req, err := http.NewRequest("GET", scheme+"://"+bind+path, nil)
	if err != nil {
		tb.Fatal(err)
	}
	req.Host = host
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	tr := &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{ServerName: host, InsecureSkipVerify: true}}
	resp, err := (&http.Client{Timeout: 10 * time.Second, Transport: tr}).Do(req)
	if err != nil {
		tb.Fatalf("GET %s://%s%s: %v", scheme, host, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

// seenHeaders is what the header pod saw.
func seenHeaders(tb testing.TB, resp *http.Response, body []byte) http.Header {
	tb.Helper()
	if resp.StatusCode != 200 {
		tb.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	var h http.Header
	if err := json.Unmarshal(body, &h); err != nil {
		tb.Fatalf("pod answer %q: %v", body, err)
	}
	return h
}

// rawStatus sends raw bytes and returns the status line of the answer.
func rawStatus(tb testing.TB, bind, raw string) string {
	tb.Helper()
	c, err := net.DialTimeout("tcp", bind, 5*time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		tb.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		tb.Fatalf("read status: %v", err)
	}
	return strings.TrimSpace(line)
}

// TestAnswersAndLimits: a request no route matches gets the 503 HTML page
// with Cache-Control: no-store (dcm's, then one given), 20 KB of headers
// pass, the Proxy header never reaches the pod, an empty Content-Length is
// refused with 400.
func TestAnswersAndLimits(t *testing.T) {
	t.Parallel()
	r := route("ns", "web", "web.example", "/", dcm.PathPrefix)
	pod := startHeaderPod(t, "127.0.0.2")
	st := state(backendFor(r, serverFor(pod, dcm.StateReady)))
	_, bind := startDriver(t, st)

	resp, body := request(t, "http", bind, "unknown.example", "/", nil)
	if resp.StatusCode != 503 || resp.Header.Get("Cache-Control") != "no-store" ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(string(body), "Application is not available") {
		t.Errorf("unknown host: %d %v %q", resp.StatusCode, resp.Header, body)
	}
	big := strings.Repeat("x", 20<<10)
	resp, body = request(t, "http", bind, "web.example", "/", map[string]string{"Cookie": "a=" + big, "Proxy": "http://evil.example"})
	h := seenHeaders(t, resp, body)
	if len(h.Get("Cookie")) != len(big)+2 {
		t.Errorf("the pod saw a cookie of %d bytes, want %d", len(h.Get("Cookie")), len(big)+2)
	}
	if v, ok := h["Proxy"]; ok {
		t.Errorf("the pod saw Proxy: %v", v)
	}
	if got := rawStatus(t, bind, "POST / HTTP/1.1\r\nHost: web.example\r\nContent-Length: \r\n\r\n"); !strings.HasPrefix(got, "HTTP/1.1 400") {
		t.Errorf("empty Content-Length: %q, want 400", got)
	}

	page := "<html><body>gone \"fishing\" for $HOME \\ 100%</body></html>\n"
	_, bind2 := startDriver(t, st, func(c *DriverConfig) { c.Settings.ErrorPage503 = []byte(page) })
	resp, body = request(t, "http", bind2, "unknown.example", "/", nil)
	if resp.StatusCode != 503 || string(body) != page || resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("unknown host with a page of its own: %d %v %q, want %q", resp.StatusCode, resp.Header, body, page)
	}
}

func TestRenderRefusesBadErrorPage(t *testing.T) {
	s := Settings{AdminSocket: "/tmp/x/admin.sock", HTTPBind: "127.0.0.1:8000"}
	for _, page := range []string{"a\x00b", strings.Repeat("a", MaxErrorPage+1), "\x1b[31m"} {
		s.ErrorPage503 = []byte(page)
		if _, err := Render(s, dcm.State{}); err == nil {
			t.Errorf("error page %q accepted", page[:min(len(page), 20)])
		}
	}
}

// routeTimeoutLines end every HTTP backend: the timeouts the frontend read
// from the maps.
const routeTimeoutLines = "    http-request set-timeout server var(txn.timeout_server)\n" +
	"    http-request set-timeout tunnel var(txn.timeout_tunnel)\n"

// TestSettingMapValues: a setting map's values are its allow-list only,
// and an HSTS value's ';' is escaped so the CLI reads one command.
func TestSettingMapValues(t *testing.T) {
	c, err := AddMapCommand(dcm.MapHSTS, "be_edge:ns:a", "max-age=1;preload")
	if err != nil || c.text != `add map maps/hsts.map be_edge:ns:a max-age=1\;preload` || splitsCommand(c.text) {
		t.Errorf("hsts: %q %v", c.text, err)
	}
	c, err = SetMapCommand(dcm.MapHSTS, "be_edge:ns:a", "max-age=1;includeSubDomains")
	if err != nil || c.text != `set map maps/hsts.map be_edge:ns:a max-age=1\;includeSubDomains` || splitsCommand(c.text) {
		t.Errorf("hsts: %q %v", c.text, err)
	}
	for _, bad := range []struct {
		t dcm.MapTable
		v string
	}{
		{dcm.MapHSTS, "max-age=1; preload"}, {dcm.MapHSTS, "max-age=1;x"}, {dcm.MapHSTS, `max-age=1\;show`},
		{dcm.MapForwarded, "sometimes"}, {dcm.MapForwarded, "append;"}, {dcm.MapForwarded, ""},
		{dcm.MapTimeoutServer, "2s"}, {dcm.MapTimeoutServer, "0"}, {dcm.MapTimeoutServer, "02"}, {dcm.MapTimeoutTunnel, "2147483648"},
		{dcm.MapTimeoutTunnel, "be_http:ns:a"},
	} {
		if _, err := AddMapCommand(bad.t, "be_http:ns:a", bad.v); err == nil {
			t.Errorf("map %s value %q accepted", bad.t, bad.v)
		}
		if _, err := SetMapCommand(bad.t, "be_http:ns:a", bad.v); err == nil {
			t.Errorf("map %s value %q accepted by set map", bad.t, bad.v)
		}
	}
	if !splitsCommand("show map; show info") || splitsCommand(`add map x y a\;b`) {
		t.Error("splitsCommand")
	}
}
