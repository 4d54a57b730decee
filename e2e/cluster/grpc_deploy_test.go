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
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/e2e/kapitest"
	"github.com/dcm-router/dcm/internal/testkit"
)

// TestGRPCDeployment: gRPC pods made from a pod spec (a container port
// named grpc: the test kubelet serves the health service over h2c) behind a
// Service port with appProtocol kubernetes.io/h2c, which the real
// endpointslice controller copies into the EndpointSlices; a gRPC client
// reaches every pod through an edge Ingress, before and after a scale-out,
// without a reload.
func TestGRPCDeployment(t *testing.T) {
	ns := kapitest.Namespace(t, env.admin)
	ctx := context.Background()
	host := "greeter." + ns + ".test"
	labels := map[string]string{"app": "greeter"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "greeter"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "grpc", Image: "local/pod",
					Ports: []corev1.ContainerPort{{Name: kapitest.GRPCPortName, ContainerPort: 50051}}}}}}},
	}
	if _, err := env.admin.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "greeter"},
		Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Name: "grpc", Port: 50051,
			TargetPort: intstr.FromString(kapitest.GRPCPortName), AppProtocol: ptr.To("kubernetes.io/h2c")}}}}
	if _, err := env.admin.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	front := testkit.NewCA(t)
	tlsSecret(t, ns, "greeter-tls", front.Leaf(t, host), nil)
	grpcIngress(t, ns, "greeter", host, "greeter", "greeter-tls", nil)
	s := harness.Start(t, dcmOptions(t, ns))

	conn, err := grpc.NewClient("passthrough:///"+s.HTTPSAddr, grpc.WithAuthority(host),
		grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{ServerName: host, RootCAs: front.Pool(), MinVersion: tls.VersionTLS12})))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := healthpb.NewHealthClient(conn)
	everyPod := func(what string, n int) {
		t.Helper()
		s.Eventually(what, 30*time.Second, func() error {
			pods, err := readyPods(ns, "greeter")()
			if err != nil || len(pods) != n {
				return fmt.Errorf("ready pods %v %v", pods, err)
			}
			// Each pod serves its own name: a call for it succeeds only
			// once HAProxy has a server for that pod, and round robin
			// reaches each within a few calls.
			for _, pod := range pods {
				reached := false
				for range 2 * n {
					cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
					r, err := client.Check(cctx, &healthpb.HealthCheckRequest{Service: pod})
					cancel()
					if err == nil && r.Status == healthpb.HealthCheckResponse_SERVING {
						reached = true
						break
					}
				}
				if !reached {
					return fmt.Errorf("pod %s not reached", pod)
				}
			}
			return nil
		})
	}
	everyPod("both pods answer gRPC", 2)
	pid, reloads := s.WorkerPID(), s.Reloads()
	scale(t, ns, "greeter", 3)
	everyPod("the new pod answers gRPC too", 3)
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("worker %d → %d, reloads %v → %v", pid, s.WorkerPID(), reloads, s.Reloads())
	}
}
