package echobasic

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// running is one echo-basic container on loopback ports.
type running struct {
	http, h2c, https string // host:port
	ca               *x509.CertPool
}

func start(t *testing.T, env map[string]string) running {
	t.Helper()
	listen := func() net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return ln
	}
	cfg := FromEnv(env)
	l := Listeners{HTTP: listen(), H2C: listen()}
	r := running{http: l.HTTP.Addr().String(), h2c: l.H2C.Addr().String()}
	var tlsCfg *tls.Config
	if cfg.HTTPS() {
		certPEM, keyPEM, pool := selfSigned(t)
		files := map[string][]byte{cfg.CertFile: certPEM, cfg.KeyFile: keyPEM}
		var err error
		tlsCfg, err = cfg.TLSConfig(func(p string) ([]byte, error) {
			if b, ok := files[p]; ok {
				return b, nil
			}
			return nil, fs.ErrNotExist
		})
		if err != nil {
			t.Fatal(err)
		}
		l.HTTPS = listen()
		r.https, r.ca = l.HTTPS.Addr().String(), pool
	}
	srv := Serve(cfg, l, tlsCfg, nil)
	t.Cleanup(func() {
		if err := srv.Stop(context.Background(), time.Now().Add(2*time.Second)); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return r
}

var podEnv = map[string]string{"POD_NAME": "infra-backend-v1-abc", "NAMESPACE": "gateway-conformance-infra"}

// captured mirrors what the suite decodes (roundtripper.CapturedRequest).
type captured struct {
	Path      string              `json:"path"`
	Host      string              `json:"host"`
	Method    string              `json:"method"`
	Protocol  string              `json:"proto"`
	Headers   map[string][]string `json:"headers"`
	HTTPPort  string              `json:"httpPort"`
	Namespace string              `json:"namespace"`
	Pod       string              `json:"pod"`
	TLS       struct {
		Version            string `json:"version"`
		ServerName         string `json:"serverName"`
		NegotiatedProtocol string `json:"negotiatedProtocol"`
		CipherSuite        string `json:"cipherSuite"`
	} `json:"tls"`
}

func do(t *testing.T, c *http.Client, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(req.Context(), 10*time.Second)
	defer cancel()
	resp, err := c.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func decode(t *testing.T, resp *http.Response, body []byte) captured {
	t.Helper()
	// The suite decodes only when the type is exactly this.
	if ct := resp.Header.Get("Content-type"); ct != "application/json" {
		t.Fatalf("Content-Type %q, want application/json; body %s", ct, body)
	}
	var c captured
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatalf("body %s: %v", body, err)
	}
	return c
}

// TestEcho: the HTTP port echoes the request as the suite reads it — the
// raw URI, host, method, protocol, headers, the pod's identity — and sets
// the headers X-Echo-Set-Header asks for.
func TestEcho(t *testing.T) {
	r := start(t, podEnv)
	req, _ := http.NewRequest(http.MethodPost, "http://"+r.http+"/a//b?x=1&y=%2F", strings.NewReader("body"))
	req.Host = "example.com"
	req.Header.Set("X-Test", "v")
	req.Header.Add("X-Echo-Set-Header", "X-Foo: one, x-Bar: two")
	req.Header.Add("X-Echo-Set-Header", "X-Foo: three")
	resp, body := do(t, http.DefaultClient, req)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	c := decode(t, resp, body)
	want := captured{Path: "/a//b?x=1&y=%2F", Host: "example.com", Method: "POST", Protocol: "HTTP/1.1",
		HTTPPort: "3000", Namespace: "gateway-conformance-infra", Pod: "infra-backend-v1-abc"}
	got := c
	got.Headers = nil
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("echo %+v\nwant %+v", got, want)
	}
	if v := c.Headers["X-Test"]; len(v) != 1 || v[0] != "v" {
		t.Errorf("headers %v: want X-Test: v", c.Headers)
	}
	if resp.Header["X-Foo"] == nil || resp.Header["X-Foo"][0] != "one,three" || resp.Header.Get("X-Bar") != "two" {
		t.Errorf("echo-set headers: %v", resp.Header)
	}
	if !strings.Contains(string(body), "\n \"path\"") {
		t.Errorf("body not indented by one space as echo-basic's: %s", body)
	}
	if strings.Contains(string(body), `"tls"`) {
		t.Errorf("plain HTTP answer has a tls field: %s", body)
	}
}

// TestSpecialPaths: /status/NNN, /health, ?delay= and the retry
// simulation.
func TestSpecialPaths(t *testing.T) {
	r := start(t, podEnv)
	get := func(path string) (*http.Response, []byte) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+r.http+path, nil)
		return do(t, http.DefaultClient, req)
	}
	for _, tc := range []struct {
		path string
		code int
		body string
	}{
		{"/status/418", 418, ""},
		{"/status/503", 503, ""},
		{"/status/5030", 400, ""},
		{"/status/200?x=1", 400, ""},
		{"/health", 200, "OK"},
		{"/retry/x?succeedAfter=1", 400, "uuid is required"},
		{"/retry/x?uuid=u1", 400, "succeedAfter is required"},
		{"/retry/x?uuid=u2&succeedAfter=2&responseCode=503", 503, ""},
		{"/retry/x?uuid=u2&succeedAfter=2&responseCode=503", 503, ""},
	} {
		resp, body := get(tc.path)
		if resp.StatusCode != tc.code || (tc.body != "" && string(body) != tc.body) {
			t.Errorf("%s: %d %q, want %d %q", tc.path, resp.StatusCode, body, tc.code, tc.body)
		}
	}
	resp, body := get("/retry/x?uuid=u2&succeedAfter=2&responseCode=503")
	if c := decode(t, resp, body); resp.StatusCode != 200 || c.Path != "/retry/x?uuid=u2&succeedAfter=2&responseCode=503" {
		t.Errorf("third retry: %d %s", resp.StatusCode, body)
	}
	// Without responseCode a failing attempt resets the connection. A
	// client of its own: Go's retries a request that failed on a reused
	// connection, and this one would then succeed.
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	_, err := fresh.Get("http://" + r.http + "/retry/x?uuid=u3&succeedAfter=1")
	if err == nil {
		t.Errorf("retry attempt answered: want the connection reset")
	}
	began := time.Now()
	resp, body = get("/delay?delay=300ms")
	if took := time.Since(began); resp.StatusCode != 200 || took < 300*time.Millisecond || decode(t, resp, body).Path != "/delay?delay=300ms" {
		t.Errorf("?delay=300ms: %d after %s: %s", resp.StatusCode, took, body)
	}
	resp, body = get("/x?delay=nope")
	if resp.StatusCode != 500 || !strings.Contains(string(body), `"message"`) {
		t.Errorf("?delay=nope: %d %s", resp.StatusCode, body)
	}
}

// TestH2C: the h2c port echoes HTTP/2 without TLS and refuses HTTP/1.1.
func TestH2C(t *testing.T) {
	r := start(t, map[string]string{"POD_NAME": "p", "HTTP_PORT": "3100"})
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	h2 := &http.Client{Transport: &http.Transport{Protocols: &p}}
	req, _ := http.NewRequest(http.MethodGet, "http://"+r.h2c+"/h2c", nil)
	resp, body := do(t, h2, req)
	if c := decode(t, resp, body); c.Protocol != "HTTP/2.0" || c.Path != "/h2c" || c.HTTPPort != "3100" {
		t.Errorf("h2c echo %+v", c)
	}
	req, _ = http.NewRequest(http.MethodGet, "http://"+r.h2c+"/h2c", nil)
	if resp, body := do(t, http.DefaultClient, req); resp.StatusCode != 400 || string(body) != "Expected h2c request" {
		t.Errorf("HTTP/1.1 on the h2c port: %d %q", resp.StatusCode, body)
	}
}

// TestHTTPS: with TLS_SERVER_CERT and TLS_SERVER_PRIVKEY the HTTPS port
// serves the certificate of those files and echoes the TLS connection.
func TestHTTPS(t *testing.T) {
	env := map[string]string{"POD_NAME": "tls-backend-x", "TLS_SERVER_CERT": "/etc/secret-volume/crt",
		"TLS_SERVER_PRIVKEY": "/etc/secret-volume/key"}
	r := start(t, env)
	c := &http.Client{Transport: &http.Transport{ForceAttemptHTTP2: true,
		TLSClientConfig: &tls.Config{RootCAs: r.ca, ServerName: "abc.example.com"}}}
	req, _ := http.NewRequest(http.MethodGet, "https://"+r.https+"/tls", nil)
	resp, body := do(t, c, req)
	got := decode(t, resp, body)
	if got.TLS.ServerName != "abc.example.com" || got.TLS.Version != "TLSv1.3" || got.TLS.NegotiatedProtocol != "h2" ||
		got.TLS.CipherSuite == "" || got.Pod != "tls-backend-x" {
		t.Errorf("HTTPS echo %+v", got)
	}
}

// TestWebSocket: /ws sends every message back.
func TestWebSocket(t *testing.T) {
	r := start(t, podEnv)
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	conn, _, err := d.Dial("ws://"+r.http+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if err := conn.WriteMessage(websocket.TextMessage, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if _, msg, err := conn.ReadMessage(); err != nil || string(msg) != "hello" {
		t.Errorf("ws echo %q, %v", msg, err)
	}
}

// TestFromEnv: the ports' defaults and overrides, the modes, and HTTPS only
// with both files named.
func TestFromEnv(t *testing.T) {
	for _, tc := range []struct {
		env   map[string]string
		want  string
		https bool
	}{
		{map[string]string{}, "http http:3000 h2c:3001", false},
		{map[string]string{"HTTP_PORT": "8080", "H2C_PORT": "8081"}, "http http:8080 h2c:8081", false},
		{map[string]string{"TLS_SERVER_CERT": "/c", "TLS_SERVER_PRIVKEY": "/k"}, "http http:3000 h2c:3001 https:8443", true},
		{map[string]string{"TLS_SERVER_CERT": "/c", "TLS_SERVER_PRIV_KEY": "/k", "TCP_ECHO_SERVER": "1"}, "TCP_ECHO_SERVER tcp:3000 tls:8443", true},
		{map[string]string{"TCP_PORT": "4000", "TLS_PORT": "4443", "TCP_ECHO_SERVER": "1"}, "TCP_ECHO_SERVER tcp:4000", false},
		{map[string]string{"GRPC_ECHO_SERVER": "1", "TCP_ECHO_SERVER": "1"}, "GRPC_ECHO_SERVER http:3000 h2c:3001", false},
	} {
		c := FromEnv(tc.env)
		if c.String() != tc.want || c.HTTPS() != tc.https {
			t.Errorf("FromEnv(%v) = %s https=%t, want %s https=%t", tc.env, c, c.HTTPS(), tc.want, tc.https)
		}
	}
	if _, err := FromEnv(map[string]string{"TLS_SERVER_CERT": "/c", "TLS_SERVER_PRIVKEY": "/k"}).TLSConfig(func(string) ([]byte, error) {
		return nil, fs.ErrNotExist
	}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("TLSConfig without the files: %v", err)
	}
}

func selfSigned(t *testing.T) (certPEM, keyPEM []byte, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "abc.example.com"},
		DNSNames: []string{"abc.example.com"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), pool
}
