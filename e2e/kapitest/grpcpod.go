package kapitest

import (
	"context"
	"log/slog"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/dcm-router/dcm/dcm/demo/localpod"
)

// podServer is what a pod serves until it is stopped, gracefully until
// deadline.
type podServer interface {
	Stop(ctx context.Context, deadline time.Time) error
}

// GRPCPortName is the container port name that makes a pod a gRPC server
// (h2c) rather than an HTTP one: the standard health service, serving ""
// and the pod's name (Check is unary, Watch a server stream).
const GRPCPortName = "grpc"

// grpcPod reports whether p asks for a gRPC server.
func grpcPod(p *corev1.Pod) bool {
	for _, c := range p.Spec.Containers {
		for _, port := range c.Ports {
			if port.Name == GRPCPortName {
				return true
			}
		}
	}
	return false
}

// servePod starts what rp serves on ln.
func servePod(rp *runningPod, ln net.Listener, log *slog.Logger) podServer {
	if !rp.grpc {
		return localpod.Serve(ln, rp.name, log)
	}
	h := health.NewServer()
	h.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	h.SetServingStatus(rp.name, healthpb.HealthCheckResponse_SERVING)
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, h)
	go func() {
		if err := srv.Serve(ln); err != nil {
			log.Debug("grpc pod server", "err", err)
		}
	}()
	return grpcServer{srv: srv, health: h}
}

type grpcServer struct {
	srv    *grpc.Server
	health *health.Server
}

// Stop tells watchers the pod is going (NOT_SERVING), then lets calls in
// flight finish until deadline.
func (g grpcServer) Stop(ctx context.Context, deadline time.Time) error {
	g.health.Shutdown()
	done := make(chan struct{})
	go func() { g.srv.GracefulStop(); close(done) }()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		g.srv.Stop()
	case <-ctx.Done():
		g.srv.Stop()
	}
	return nil
}
