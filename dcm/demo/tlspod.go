package demo

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podListener is what the pod's container listens with: ln itself, or TLS
// on ln with the Secret its template names (servingSecretAnnotation), read
// once at start as a container reads a mounted Secret. The error says the
// Secret is missing or unusable; runPod then serves plain HTTP, which a TLS
// route's health checks and clients see fail, rather than crash-looping the
// pod (the simulator has no restart backoff).
func (s *simulator) podListener(ctx context.Context, p *pod, ln net.Listener) (net.Listener, error) {
	name := p.object.Annotations[servingSecretAnnotation]
	if name == "" {
		return ln, nil
	}
	secret, err := s.client.CoreV1().Secrets(p.namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("serving secret %s: %w", name, err)
	}
	cert, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, fmt.Errorf("serving secret %s: %w", name, err)
	}
	return tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}), nil
}
