package cluster

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"github.com/dcm-router/dcm/internal/testkit"
)

// grpcPod is a gRPC server standing in for a pod: the standard health
// service (Check is unary, Watch a server stream, so neither needs code
// generated from a .proto), serving its own name as a service. It speaks
// h2c, or TLS with leaf. It keeps the X-Forwarded-Proto-Version HAProxy
// sent with the last call.
type grpcPod struct {
	testkit.Backend
	Health *health.Server

	mu           sync.Mutex
	protoVersion string
}

// ProtoVersion is the X-Forwarded-Proto-Version of the last call.
func (p *grpcPod) ProtoVersion() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.protoVersion
}

func (p *grpcPod) saw(ctx context.Context) {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get("x-forwarded-proto-version"); len(v) > 0 {
		p.mu.Lock()
		p.protoVersion = v[0]
		p.mu.Unlock()
	}
}

// startGRPCPod serves gRPC at 10.X.x.y (any port) in the pod network.
func startGRPCPod(t *testing.T, x, y byte, name string, leaf *testkit.Leaf) *grpcPod {
	t.Helper()
	l := podListener(t, x, y, 0)
	p := &grpcPod{Health: health.NewServer()}
	opts := []grpc.ServerOption{
		grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			p.saw(ctx)
			return h(ctx, req)
		}),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			p.saw(ss.Context())
			return h(srv, ss)
		}),
	}
	if leaf != nil {
		c, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{c}, MinVersion: tls.VersionTLS12})))
	}
	srv := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(srv, p.Health)
	p.Health.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	go srv.Serve(l)
	t.Cleanup(srv.Stop)
	a := l.Addr().(*net.TCPAddr)
	p.Backend = testkit.Backend{Name: name, Addr: a.IP.String(), Port: a.Port}
	return p
}
