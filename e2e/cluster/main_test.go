// Package cluster proves dcm against a real control plane (e2e/kapi: etcd,
// kube-apiserver with RBAC, the endpointslice, deployment and replicaset
// controllers), a test kubelet whose pods are real HTTP servers, and the
// real haproxy binary. dcm runs with a token of the ServiceAccount that
// deploy/ defines — never the admin token.
package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/e2e/kapitest"
	"github.com/dcm-router/dcm/e2e/podnet"
	"github.com/dcm-router/dcm/internal/testkit"
	"github.com/dcm-router/dcm/system"
)

// env is what the tests of this package share: one control plane, its
// kubelet, and dcm's credentials from deploy/.
var env struct {
	cp      *kapitest.ControlPlane
	admin   kubernetes.Interface
	kubelet *kapitest.Kubelet
	// pods is the package's pod network: the kubelet's pods and those the
	// tests start by hand (startPod) listen inside its namespace.
	pods *podnet.Network
}

func TestMain(m *testing.M) {
	os.Exit(kapitest.Main(m, func(ctx context.Context, cp *kapitest.ControlPlane, pods *podnet.Network) (func(), error) {
		admin, err := kubernetes.NewForConfig(cp.Admin)
		if err != nil {
			return nil, err
		}
		env.cp, env.admin, env.pods = cp, admin, pods
		if err := kapitest.Apply(ctx, admin, deployFile("rbac.yaml"), deployFile("dcm.yaml")); err != nil {
			return nil, fmt.Errorf("apply deploy/: %w", err)
		}
		kctx, cancel := context.WithCancel(ctx)
		kubelet, err := kapitest.StartKubelet(kctx, admin, kapitest.KubeletOptions{Pods: pods},
			slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("part", "kubelet"))
		if err != nil {
			cancel()
			return nil, err
		}
		env.kubelet = kubelet
		return func() { cancel(); kubelet.Wait() }, nil
	}))
}

// podListener opens a listener at the pod address 10.X.x.y:port inside the
// package's pod network (the kubelet's pool starts at x = 1, so tests take
// x ≥ 250).
func podListener(t *testing.T, x, y byte, port int) net.Listener {
	t.Helper()
	at := netip.AddrPortFrom(env.pods.Addr(x, y), uint16(port))
	l, err := env.pods.Listen(context.Background(), "tcp", at.String())
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// startPod is testkit.StartBackendOn for a pod at 10.X.x.y:port in the pod
// network.
func startPod(t *testing.T, x, y byte, port int, name string) testkit.Backend {
	t.Helper()
	return testkit.ServeBackend(t, podListener(t, x, y, port), name)
}

// startTLSPod is testkit.StartTLSBackend for a pod at 10.X.x.y (any port)
// in the pod network.
func startTLSPod(t *testing.T, x, y byte, name string, leaf testkit.Leaf) testkit.Backend {
	t.Helper()
	return testkit.ServeTLSBackend(t, podListener(t, x, y, 0), name, leaf)
}

func deployFile(name string) string {
	// go test runs a test in its package's directory.
	return filepath.Join("..", "..", "deploy", name)
}

// serviceAccountConfig is a client config that authenticates as a
// ServiceAccount, with a token from the TokenRequest API.
func serviceAccountConfig(t *testing.T, ns, name string) *rest.Config {
	t.Helper()
	expiry := int64(3600)
	tr, err := env.admin.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for %s/%s: %v", ns, name, err)
	}
	return &rest.Config{Host: env.cp.Host, BearerToken: tr.Status.Token,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: 50, Burst: 100, Timeout: 30 * time.Second}
}

// dcmOptions run dcm as deploy/ runs it — on its ServiceAccount's token,
// redirecting to HTTPS on 443 (its Service's port) — watching only ns (the
// tests of this package share one control plane), with the pods of the
// test kubelet's network.
func dcmOptions(t *testing.T, ns string) harness.Options {
	t.Helper()
	return harness.Options{Kubernetes: serviceAccountConfig(t, "dcm-system", "dcm"), PodNetwork: env.pods.Prefix(),
		Config: func(c *system.Config) { c.Namespaces, c.HTTPSRedirectPort = []string{ns}, 443 }}
}

// dcmClient is dcm's client: the deploy/ ServiceAccount's token.
func dcmClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(serviceAccountConfig(t, "dcm-system", "dcm"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
