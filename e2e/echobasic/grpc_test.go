package echobasic

import (
	"context"
	"crypto/tls"
	"io/fs"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func startGRPC(t *testing.T, env map[string]string) (plain, secure string, cfg Config) {
	t.Helper()
	cfg = FromEnv(env)
	ln := func() net.Listener {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	l := Listeners{HTTP: ln()}
	var tlsCfg *tls.Config
	if cfg.HTTPS() {
		certPEM, keyPEM, _ := selfSigned(t)
		var err error
		tlsCfg, err = cfg.TLSConfig(func(p string) ([]byte, error) {
			switch p {
			case cfg.CertFile:
				return certPEM, nil
			case cfg.KeyFile:
				return keyPEM, nil
			}
			return nil, fs.ErrNotExist
		})
		if err != nil {
			t.Fatal(err)
		}
		l.HTTPS = ln()
		secure = l.HTTPS.Addr().String()
	}
	srv := ServeGRPC(cfg, l, tlsCfg, nil)
	t.Cleanup(func() { _ = srv.Stop(context.Background(), time.Now().Add(time.Second)) })
	return l.HTTP.Addr().String(), secure, cfg
}

func call(t *testing.T, addr, method string, creds credentials.TransportCredentials) (GRPCResponse, error) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return InvokeGRPC(metadata.AppendToOutgoingContext(ctx, "x-test", "v"), conn, method)
}

// TestGRPCEcho: Echo and EchoTwo answer an EchoResponse naming the method,
// the metadata (with :authority), the pod; EchoThree is Unimplemented; over
// TLS the response carries the connection.
func TestGRPCEcho(t *testing.T) {
	plain, secure, _ := startGRPC(t, map[string]string{"GRPC_ECHO_SERVER": "1", "POD_NAME": "grpc-1", "NAMESPACE": "ns",
		"TLS_SERVER_CERT": "/c", "TLS_SERVER_PRIVKEY": "/k"})
	for _, m := range []string{"Echo", "EchoTwo"} {
		r, err := call(t, plain, m, insecure.NewCredentials())
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		if r.FullyQualifiedMethod != "/"+GRPCService+"/"+m || r.Authority != plain {
			t.Errorf("%s: method %q authority %q", m, r.FullyQualifiedMethod, r.Authority)
		}
		if r.Header("x-test") != "v" || r.Header(":authority") != plain || !strings.HasPrefix(r.Header("content-type"), "application/grpc") {
			t.Errorf("headers %v", r.Headers)
		}
		if r.Identity != (Identity{Namespace: "ns", Pod: "grpc-1"}) || r.TLS != nil {
			t.Errorf("identity %+v, tls %+v", r.Identity, r.TLS)
		}
	}
	if _, err := call(t, plain, "EchoThree", insecure.NewCredentials()); status.Code(err) != codes.Unimplemented {
		t.Errorf("EchoThree: %v, want Unimplemented", err)
	}
	r, err := call(t, secure, "Echo", credentials.NewTLS(&tls.Config{InsecureSkipVerify: true, ServerName: "abc.example.com"}))
	if err != nil {
		t.Fatal(err)
	}
	if r.TLS == nil || r.TLS.Version != "TLSv1.3" || r.TLS.NegotiatedProtocol != "h2" || r.TLS.ServerName != "abc.example.com" || r.TLS.CipherSuite == "" {
		t.Errorf("tls_assertions %+v", r.TLS)
	}
}
