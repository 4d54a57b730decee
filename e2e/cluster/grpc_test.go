package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/e2e/kapitest"
	"github.com/dcm-router/dcm/internal/testkit"
)

// grpcService creates a Service with one port named grpc and its
// EndpointSlice listing pod, both with appProtocol app ("" for none), as
// the endpointslice controller copies it.
func grpcService(t *testing.T, ns, name, app string, pod *grpcPod) {
	t.Helper()
	ctx := context.Background()
	var ap *string
	if app != "" {
		ap = ptr.To(app)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "grpc", Port: 50051, TargetPort: intstr.FromString("grpc"), AppProtocol: ap}}}}
	if _, err := env.admin.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-1", Labels: map[string]string{
			discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "e2e.dcm.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("grpc"), Port: ptr.To(int32(pod.Port)), AppProtocol: ap}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{pod.Addr}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod.Name}}},
	}
	if _, err := env.admin.DiscoveryV1().EndpointSlices(ns).Create(ctx, sl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// grpcIngress serves host over TLS with secret, to service's grpc port.
func grpcIngress(t *testing.T, ns, name, host, service, secret string, annotations map[string]string) {
	t.Helper()
	ing := ingressFor(ns, name, host, "/", service)
	ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port = networkingv1.ServiceBackendPort{Name: "grpc"}
	ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{host}, SecretName: secret}}
	ing.Annotations = annotations
	if _, err := env.admin.NetworkingV1().Ingresses(ns).Create(context.Background(), ing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func tlsSecret(t *testing.T, ns, name string, leaf testkit.Leaf, ca []byte) {
	t.Helper()
	data := map[string][]byte{corev1.TLSCertKey: leaf.CertPEM, corev1.TLSPrivateKeyKey: leaf.KeyPEM}
	if ca != nil {
		data[kube.CAKey] = ca
	}
	if _, err := env.admin.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: corev1.SecretTypeTLS, Data: data}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// negotiatedALPN is the protocol HAProxy picks for a client that offers
// h2 and http/1.1 with host as SNI.
func negotiatedALPN(addr, host string) (string, error) {
	d := &tls.Dialer{Config: &tls.Config{ServerName: host, InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}, MinVersion: tls.VersionTLS12}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	return c.(*tls.Conn).ConnectionState().NegotiatedProtocol, nil
}

// TestGRPCThroughRoutes: through the real API server and dcm's own
// ServiceAccount, a real gRPC client calls a real gRPC server pod, unary
// (health Check) and streaming (health Watch, which follows a status
// change on the pod), through an edge route to an h2c Service port
// (appProtocol kubernetes.io/h2c → proto h2) and through a reencrypt route
// to a TLS pod (alpn h2). A route with its own certificate negotiates h2, the
// default certificate http/1.1; the pod is told X-Forwarded-Proto-Version
// h2. The reencrypt Ingress comes after dcm started: no reload, same worker.
func TestGRPCThroughRoutes(t *testing.T) {
	ns := kapitest.Namespace(t, env.admin)
	front, podCA := testkit.NewCA(t), testkit.NewCA(t)
	edgeHost, reHost := "grpc."+ns+".test", "grpcs."+ns+".test"
	h2c := startGRPCPod(t, 247, 1, "grpc-h2c", nil)
	podLeaf := podCA.Leaf(t, "grpcs."+ns+".svc")
	tlsPod := startGRPCPod(t, 247, 2, "grpc-tls", &podLeaf)
	grpcService(t, ns, "grpc", "kubernetes.io/h2c", h2c)
	grpcService(t, ns, "grpcs", "", tlsPod)
	edgeLeaf, reLeaf := front.Leaf(t, edgeHost), front.Leaf(t, reHost)
	tlsSecret(t, ns, "grpc-tls", edgeLeaf, nil)
	tlsSecret(t, ns, "grpcs-tls", reLeaf, podCA.CertPEM())
	grpcIngress(t, ns, "grpc", edgeHost, "grpc", "grpc-tls", nil)

	s := harness.Start(t, dcmOptions(t, ns))
	call := func(host string, pod *grpcPod) {
		t.Helper()
		conn, err := grpc.NewClient("passthrough:///"+s.HTTPSAddr, grpc.WithAuthority(host),
			grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{ServerName: host, RootCAs: front.Pool(), MinVersion: tls.VersionTLS12})))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		client := healthpb.NewHealthClient(conn)
		s.Eventually("health Check through "+host, 20*time.Second, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			r, err := client.Check(ctx, &healthpb.HealthCheckRequest{Service: pod.Name})
			if err != nil {
				return err
			}
			if r.Status != healthpb.HealthCheckResponse_SERVING {
				return fmt.Errorf("status %v", r.Status)
			}
			return nil
		})
		if v := pod.ProtoVersion(); v != "h2" {
			t.Errorf("%s: the pod got X-Forwarded-Proto-Version %q, want h2", host, v)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		stream, err := client.Watch(ctx, &healthpb.HealthCheckRequest{Service: pod.Name})
		if err != nil {
			t.Fatalf("%s: Watch: %v", host, err)
		}
		for _, want := range []healthpb.HealthCheckResponse_ServingStatus{healthpb.HealthCheckResponse_SERVING, healthpb.HealthCheckResponse_NOT_SERVING} {
			r, err := stream.Recv()
			if err != nil {
				t.Fatalf("%s: Watch, waiting for %v: %v", host, want, err)
			}
			if r.Status != want {
				t.Fatalf("%s: Watch sent %v, want %v", host, r.Status, want)
			}
			// The next message on the open stream is the pod's change.
			pod.Health.SetServingStatus(pod.Name, healthpb.HealthCheckResponse_NOT_SERVING)
		}
		pod.Health.SetServingStatus(pod.Name, healthpb.HealthCheckResponse_SERVING)
	}
	call(edgeHost, h2c)
	pid, reloads := s.WorkerPID(), s.Reloads()

	grpcIngress(t, ns, "grpcs", reHost, "grpcs", "grpcs-tls", map[string]string{kube.AnnotationBackendCA: "grpcs-tls"})
	call(reHost, tlsPod)
	for host, want := range map[string]string{edgeHost: "h2", reHost: "h2", "nothing." + ns + ".test": "http/1.1"} {
		got, err := negotiatedALPN(s.HTTPSAddr, host)
		if err != nil || got != want {
			t.Errorf("ALPN with %s: %q %v, want %q", host, got, err, want)
		}
	}
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("worker %d → %d, reloads %v → %v", pid, s.WorkerPID(), reloads, s.Reloads())
	}
}
