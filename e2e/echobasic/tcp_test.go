package echobasic

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"strings"
	"testing"
	"time"
)

// TestTCPEcho: the TCP echo speaks echo-basic's tcpserver protocol on its
// plain and TLS ports, as the suite's tcp.MakeTCPRequestAndExpect… reads
// it (welcome, PONG, IS_TLS, TEST's JSON with the SNI it saw).
func TestTCPEcho(t *testing.T) {
	env := map[string]string{"POD_NAME": "tcp-backend-x", "NAMESPACE": "gateway-conformance-infra", "TCP_ECHO_SERVER": "1",
		"TLS_SERVER_CERT": "/etc/secret-volume/crt", "TLS_SERVER_PRIV_KEY": "/etc/secret-volume/key"}
	cfg := FromEnv(env)
	if cfg.Mode != ModeTCP || cfg.HTTPPort != "3000" || cfg.HTTPSPort != "8443" || !cfg.HTTPS() {
		t.Fatalf("config %+v", cfg)
	}
	certPEM, keyPEM, pool := selfSigned(t)
	files := map[string][]byte{cfg.CertFile: certPEM, cfg.KeyFile: keyPEM}
	tlsCfg, err := cfg.TLSConfig(func(p string) ([]byte, error) {
		if b, ok := files[p]; ok {
			return b, nil
		}
		return nil, fs.ErrNotExist
	})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	secure, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := ServeTCP(cfg, Listeners{HTTP: plain, HTTPS: secure}, tlsCfg, nil)
	t.Cleanup(func() {
		if err := srv.Stop(context.Background(), time.Now().Add(2*time.Second)); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	for _, tc := range []struct {
		name string
		dial func() (net.Conn, error)
		tls  bool
	}{
		{"plain", func() (net.Conn, error) { return net.DialTimeout("tcp", plain.Addr().String(), 5*time.Second) }, false},
		{"tls", func() (net.Conn, error) {
			return tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", secure.Addr().String(),
				&tls.Config{RootCAs: pool, ServerName: "abc.example.com", MinVersion: tls.VersionTLS12})
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tc.dial()
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			r := bufio.NewReader(c)
			line := func(send string) string {
				t.Helper()
				if send != "" {
					fmt.Fprint(c, send+"\n")
				}
				l, err := r.ReadString('\n')
				if err != nil {
					t.Fatalf("after %q: %v", send, err)
				}
				return l
			}
			if got := line(""); got != TCPWelcome {
				t.Fatalf("welcome %q", got)
			}
			if got := line("PING"); got != "PONG\n" {
				t.Errorf("PING → %q", got)
			}
			if got := line("IS_TLS"); got != fmt.Sprintf("%t\n", tc.tls) {
				t.Errorf("IS_TLS → %q", got)
			}
			var ans struct {
				Namespace string `json:"namespace"`
				Pod       string `json:"pod"`
				TCPPort   string `json:"tcpport"`
				IsTLS     bool   `json:"isTLS"`
				TLS       *struct {
					ServerName string `json:"serverName"`
				} `json:"tls"`
			}
			got := line("TEST")
			if err := json.Unmarshal([]byte(strings.TrimSpace(got)), &ans); err != nil {
				t.Fatalf("TEST → %q: %v", got, err)
			}
			if ans.Pod != "tcp-backend-x" || ans.Namespace != "gateway-conformance-infra" || ans.TCPPort != "3000" || ans.IsTLS != tc.tls ||
				(tc.tls && (ans.TLS == nil || ans.TLS.ServerName != "abc.example.com")) {
				t.Errorf("TEST → %s", got)
			}
		})
	}
}
