package kapitest

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/dcm-router/dcm/e2e/echobasic"
)

// EchoBasicImage is what a container image's name contains for the kubelet
// to run it as the Gateway API conformance suite's echo-basic backend
// (e2e/echobasic) rather than as a plain pod server: the suite's manifests
// name registry.k8s.io/gateway-api/echo-basic:<tag>.
const EchoBasicImage = "gateway-api/echo-basic"

// echoContainer is the pod's echo-basic container, if it has one.
func echoContainer(p *corev1.Pod) *corev1.Container {
	for i := range p.Spec.Containers {
		if strings.Contains(p.Spec.Containers[i].Image, EchoBasicImage) {
			return &p.Spec.Containers[i]
		}
	}
	return nil
}

// startEcho starts an echo-basic pod: its volumes' Secrets and ConfigMaps
// (waited for), its HTTP port from the pool, then its h2c and HTTPS ports on
// the same address, with its environment as the container would see it. A
// GRPC_ECHO_SERVER pod serves the gRPC echo on its HTTP and HTTPS ports, a
// TCP_ECHO_SERVER pod the TCP echo on them (TCP_PORT, TLS_PORT).
func (k *Kubelet) startEcho(ctx context.Context, rp *runningPod, log *slog.Logger) (podServer, netip.Addr, func(), error) {
	c := echoContainer(rp.spec)
	files, err := k.volumeFiles(ctx, rp, c, log)
	if err != nil {
		return nil, netip.Addr{}, nil, err
	}
	// The ports come from the literal environment; the rest is resolved
	// once the pod has its address.
	literal := map[string]string{}
	for _, e := range c.Env {
		literal[e.Name] = e.Value
	}
	port, err := strconv.Atoi(echobasic.FromEnv(literal).HTTPPort)
	if err != nil {
		return nil, netip.Addr{}, nil, fmt.Errorf("echo-basic HTTP_PORT: %w", err)
	}
	ln, addr, release, err := k.pool.Listen(ctx, port, rp.terminate, log)
	if err != nil {
		return nil, netip.Addr{}, nil, err
	}
	env := k.containerEnv(ctx, rp, c, addr, log)
	cfg := echobasic.FromEnv(env)
	if cfg.Mode == echobasic.ModeUDP {
		// The suite's UDP backends must be Ready for its setup even when
		// its UDP profile is not run; their protocol is not served here,
		// and the log says so.
		log.Warn("echo-basic mode not served by the test kubelet: the pod runs the HTTP echo", "mode", cfg.Mode)
	}
	l := echobasic.Listeners{HTTP: ln}
	fail := func(err error) (podServer, netip.Addr, func(), error) {
		for _, x := range []net.Listener{l.HTTP, l.H2C, l.HTTPS} {
			if x != nil {
				_ = x.Close()
			}
		}
		release()
		return nil, netip.Addr{}, nil, err
	}
	// The gRPC echo serves its plaintext port and, with a certificate, its
	// TLS port; the HTTP echo has an h2c port besides.
	if cfg.Mode != echobasic.ModeGRPC && cfg.Mode != echobasic.ModeTCP {
		if l.H2C, err = k.opts.Pods.Listen(ctx, "tcp", net.JoinHostPort(addr.String(), cfg.H2CPort)); err != nil {
			return fail(fmt.Errorf("echo-basic h2c port: %w", err))
		}
	}
	var tlsCfg *tls.Config
	if cfg.HTTPS() {
		if tlsCfg, err = cfg.TLSConfig(files.read); err != nil {
			return fail(err)
		}
		if l.HTTPS, err = k.opts.Pods.Listen(ctx, "tcp", net.JoinHostPort(addr.String(), cfg.HTTPSPort)); err != nil {
			return fail(fmt.Errorf("echo-basic HTTPS port: %w", err))
		}
	}
	log.Debug("echo-basic pod", "addr", addr, "config", cfg.String())
	if cfg.Mode == echobasic.ModeGRPC {
		return echobasic.ServeGRPC(cfg, l, tlsCfg, log), addr, release, nil
	}
	if cfg.Mode == echobasic.ModeTCP {
		return echobasic.ServeTCP(cfg, l, tlsCfg, log), addr, release, nil
	}
	return echobasic.Serve(cfg, l, tlsCfg, log), addr, release, nil
}
