package echobasic

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
)

// GRPCService is echo-basic's gRPC service (grpcecho.proto). Its Echo and
// EchoTwo answer; EchoThree is declared there but not implemented, and
// answers Unimplemented as in echo-basic.
const GRPCService = "gateway_api_conformance.echo_basic.grpcecho.GrpcEcho"

// rawCodec passes messages as their wire bytes: the service's request is
// empty and its response is encoded by hand (encodeResponse), so no
// generated code is needed. It keeps the name "proto", the content subtype
// clients send.
type rawCodec struct{}

// rawMessage is a message's wire bytes.
type rawMessage []byte

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(*rawMessage)
	if !ok {
		return nil, fmt.Errorf("echo-basic gRPC codec: cannot marshal %T", v)
	}
	return mem.BufferSlice{mem.SliceBuffer(*m)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(*rawMessage)
	if !ok {
		return fmt.Errorf("echo-basic gRPC codec: cannot unmarshal into %T", v)
	}
	*m = data.Materialize()
	return nil
}

// GRPCServer is a running echo-basic container in GRPC_ECHO_SERVER mode.
type GRPCServer struct {
	servers []*grpc.Server
	done    chan struct{}
}

// ServeGRPC starts the gRPC echo on l.HTTP (plaintext, h2c) and, when
// l.HTTPS is set, on it with TLS (tlsConfig, required then). log (nil
// discards) gets the servers' errors.
func ServeGRPC(cfg Config, l Listeners, tlsConfig *tls.Config, log *slog.Logger) *GRPCServer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	g := &GRPCServer{}
	type run struct {
		srv *grpc.Server
		ln  net.Listener
	}
	runs := []run{{g.newServer(cfg, false), l.HTTP}}
	if l.HTTPS != nil {
		runs = append(runs, run{g.newServer(cfg, true, grpc.Creds(credentials.NewTLS(tlsConfig))), l.HTTPS})
	}
	g.done = make(chan struct{}, len(runs))
	for _, r := range runs {
		g.servers = append(g.servers, r.srv)
		go func() {
			defer func() { g.done <- struct{}{} }()
			if err := r.srv.Serve(r.ln); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
				log.Warn("echo-basic gRPC server", "err", err)
			}
		}()
	}
	return g
}

func (g *GRPCServer) newServer(cfg Config, secure bool, opts ...grpc.ServerOption) *grpc.Server {
	srv := grpc.NewServer(append(opts, grpc.ForceServerCodecV2(rawCodec{}))...)
	echo := func(method string) grpc.MethodDesc {
		return grpc.MethodDesc{MethodName: method, Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			var req rawMessage // EchoRequest has no fields: its contents do not matter
			if err := dec(&req); err != nil {
				return nil, err
			}
			resp, err := grpcEcho(ctx, "/"+GRPCService+"/"+method, cfg.Identity, secure)
			if err != nil {
				return nil, err
			}
			return &resp, nil
		}}
	}
	srv.RegisterService(&grpc.ServiceDesc{ServiceName: GRPCService, HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{echo("Echo"), echo("EchoTwo")}, Metadata: "grpcecho.proto"}, struct{}{})
	return srv
}

// Stop stops the servers gracefully until deadline (at once when ctx ends).
func (g *GRPCServer) Stop(ctx context.Context, deadline time.Time) error {
	stopped := make(chan struct{})
	go func() {
		for _, s := range g.servers {
			s.GracefulStop()
		}
		close(stopped)
	}()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-stopped:
	case <-t.C:
	case <-ctx.Done():
	}
	for _, s := range g.servers {
		s.Stop()
	}
	for range g.servers {
		<-g.done
	}
	return nil
}

// grpcEcho is the EchoResponse for a call: the method, the request's
// metadata (each value a Header, :authority also as authority), the pod's
// identity and, over TLS, the connection.
func grpcEcho(ctx context.Context, method string, id Identity, secure bool) (rawMessage, error) {
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return nil, errors.New("failed to retrieve metadata from incoming request")
	}
	var a []byte
	a = appendString(a, 1, method)
	authority := ""
	for k, vs := range md {
		for _, v := range vs {
			if k == ":authority" {
				authority = v
			}
			a = appendMessage(a, 2, appendString(appendString(nil, 1, k), 2, v))
		}
	}
	a = appendString(a, 3, authority)
	var c []byte
	c = appendString(c, 1, id.Namespace)
	c = appendString(c, 2, id.Ingress)
	c = appendString(c, 3, id.Service)
	c = appendString(c, 4, id.Pod)
	a = appendMessage(a, 4, c)
	if secure {
		p, ok := peer.FromContext(ctx)
		if !ok {
			return nil, errors.New("failed to retrieve auth info from request")
		}
		info, ok := p.AuthInfo.(credentials.TLSInfo)
		if !ok {
			return nil, errors.New("failed to retrieve TLS info from request")
		}
		st := info.State
		var t []byte
		t = appendString(t, 1, tlsVersions[st.Version])
		t = appendString(t, 2, st.NegotiatedProtocol)
		t = appendString(t, 3, st.ServerName)
		t = appendString(t, 4, tls.CipherSuiteName(st.CipherSuite))
		for _, cert := range st.PeerCertificates {
			t = appendString(t, 5, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})))
		}
		a = appendMessage(a, 5, t)
	}
	return appendMessage(nil, 1, a), nil
}

// appendString appends a proto3 string field; the empty string is the
// default and, as proto3 does, not written.
func appendString(b []byte, field int, s string) []byte {
	if s == "" {
		return b
	}
	return appendBytes(b, field, []byte(s))
}

// appendMessage appends a set message field (written even when empty).
func appendMessage(b []byte, field int, m []byte) []byte { return appendBytes(b, field, m) }

// appendBytes appends a length-delimited field (wire type 2).
func appendBytes(b []byte, field int, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(field)<<3|2)
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}
