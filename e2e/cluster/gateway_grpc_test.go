package cluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/dcm-router/dcm/e2e/echobasic"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/system"
)

// createGRPCEcho runs one echo-basic pod in its gRPC mode behind the
// Service name (port 8080 → 3000). The Service names no appProtocol: a
// GRPCRoute's backends get h2c from dcm whatever their port says.
func createGRPCEcho(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"app": name}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "echo", Image: "registry.k8s.io/gateway-api/echo-basic:v1.5.1",
				Env: []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "GRPC_ECHO_SERVER", Value: "1"}}}}}}}}
	if _, err := env.admin.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: corev1.ServiceSpec{Selector: labels,
		Ports: []corev1.ServicePort{{Port: 8080, TargetPort: intstr.FromInt32(3000)}}}}
	if _, err := env.admin.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func grpcMethodRule(method, service string) gwv1.GRPCRouteRule {
	return gwv1.GRPCRouteRule{
		Matches: []gwv1.GRPCRouteMatch{{Method: &gwv1.GRPCMethodMatch{Service: ptr.To(echobasic.GRPCService), Method: ptr.To(method)}}},
		BackendRefs: []gwv1.GRPCBackendRef{{BackendRef: gwv1.BackendRef{
			BackendObjectReference: gwv1.BackendObjectReference{Name: gwv1.ObjectName(service), Port: ptr.To(gwv1.PortNumber(8080))}}}}}
}

// expectGRPC waits until method, called through bind for host with a real
// gRPC client (h2c with prior knowledge), answers from a pod of ns/app,
// or with code when app is "".
func expectGRPC(s *harness.Stack, conn *grpc.ClientConn, method string, code codes.Code, ns, app string) {
	s.Eventually(fmt.Sprintf("gRPC %s answers %s %s", method, code, app), 30*time.Second, func() error {
		var pods []string
		if app != "" {
			var err error
			if pods, err = readyPods(ns, app)(); err != nil {
				return err
			}
		}
		for range 4 {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			r, err := echobasic.InvokeGRPC(ctx, conn, method)
			cancel()
			if got := status.Code(err); got != code {
				return fmt.Errorf("%s: %v, want %s", method, err, code)
			}
			if code == codes.OK && (!slices.Contains(pods, r.Identity.Pod) || r.FullyQualifiedMethod != "/"+echobasic.GRPCService+"/"+method) {
				return fmt.Errorf("%s answered by %+v, pods of %s %v", method, r, app, pods)
			}
		}
		return nil
	})
}

// TestGatewayGRPCRouteAtRuntime: a real GRPCRoute on a Gateway's HTTP
// listener is served end to end — a real gRPC client speaking h2c to the
// Gateway's 127.x bind, HAProxy speaking h2 to the echo-basic pods — with
// its status Accepted and ResolvedRefs at its generation, and in the
// portal's Gateway API picture (a GRPCRoute with RequestMirror is refused:
// status, Warning Event, dcm_rejected_objects_total); a method not
// matched answers Unimplemented (HAProxy's 404). Then its method match
// and its backend change, then a method match without a service and a
// RegularExpression one, all served with the one HAProxy worker and no
// reload.
func TestGatewayGRPCRouteAtRuntime(t *testing.T) {
	f := newGatewayFixture(t, 18087)
	createGRPCEcho(t, f.ns, "grpc-v1")
	createGRPCEcho(t, f.ns, "grpc-v2")
	ctx := context.Background()
	host := "grpc." + f.ns + ".test"
	r := &gwv1.GRPCRoute{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "echo"}, Spec: gwv1.GRPCRouteSpec{
		CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "gw"}}},
		Hostnames:       []gwv1.Hostname{gwv1.Hostname(host)},
		Rules:           []gwv1.GRPCRouteRule{grpcMethodRule("Echo", "grpc-v1")}}}
	if _, err := f.gw.GatewayV1().GRPCRoutes(f.ns).Create(ctx, r, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A GRPCRoute dcm refuses: RequestMirror is not served.
	mirror := r.DeepCopy()
	mirror.Name, mirror.Spec.Hostnames = "mirror", []gwv1.Hostname{gwv1.Hostname("mirror." + f.ns + ".test")}
	mirror.Spec.Rules[0].Filters = []gwv1.GRPCRouteFilter{{Type: gwv1.GRPCRouteFilterRequestMirror, RequestMirror: &gwv1.HTTPRequestMirrorFilter{
		BackendRef: gwv1.BackendObjectReference{Name: "grpc-v2", Port: ptr.To(gwv1.PortNumber(8080))}}}}
	mirror, err := f.gw.GatewayV1().GRPCRoutes(f.ns).Create(ctx, mirror, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := startGatewayDCM(t, f.ns, "127.0.20.120/30", 18087)
	bind := "127.0.20.120:18087"
	waitEvent(t, s, f.ns, "GRPCRoute", "mirror", mirror.UID, "Warning", "UnsupportedValue", "RequestMirror")
	s.Eventually("the refused GRPCRoute's status and metric", 30*time.Second, func() error {
		got, err := f.gw.GatewayV1().GRPCRoutes(f.ns).Get(ctx, "mirror", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(got.Status.Parents) != 1 || !written(got.Status.Parents[0].Conditions, "Accepted", "UnsupportedValue") {
			return fmt.Errorf("parents %+v", got.Status.Parents)
		}
		if n := s.Counter("dcm_rejected_objects_total", "reason", "UnsupportedValue"); n < 1 {
			return fmt.Errorf("dcm_rejected_objects_total{reason=UnsupportedValue} %v", n)
		}
		return nil
	})
	conn, err := grpc.NewClient(bind, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithAuthority(host))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	s.Eventually("GRPCRoute status", 30*time.Second, func() error {
		got, err := f.gw.GatewayV1().GRPCRoutes(f.ns).Get(ctx, "echo", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(got.Status.Parents) != 1 || got.Status.Parents[0].ControllerName != system.DefaultGatewayControllerName {
			return fmt.Errorf("parents %+v", got.Status.Parents)
		}
		for _, typ := range []string{"Accepted", "ResolvedRefs"} {
			if err := conditionIs(got.Status.Parents[0].Conditions, typ, "True", got.Generation); err != nil {
				return err
			}
		}
		return nil
	})
	// The portal's picture: the GRPCRoute beside the HTTPRoute, both
	// attached to the one listener.
	s.Eventually("the GRPCRoute in the snapshot's Gateway API", 30*time.Second, func() error {
		g := s.Engine.Snapshot().Gateways
		if g == nil || len(g.Gateways) != 1 || len(g.Gateways[0].Listeners) != 1 || g.Gateways[0].Listeners[0].AttachedRoutes != 2 {
			return fmt.Errorf("gateways %+v", g)
		}
		for _, r := range g.HTTPRoutes {
			if r.Kind == "GRPCRoute" && r.Name == "echo" && len(r.Parents) == 1 && hasCondition(r.Parents[0].Conditions, "Accepted", "True", "Accepted") == nil {
				return nil
			}
		}
		return fmt.Errorf("no GRPCRoute echo in %+v", g.HTTPRoutes)
	})
	expectGRPC(s, conn, "Echo", codes.OK, f.ns, "grpc-v1")
	expectGRPC(s, conn, "EchoTwo", codes.Unimplemented, "", "")
	pid, reloads := s.WorkerPID(), s.Reloads()

	// The method match and the backend change: EchoTwo to grpc-v2 only.
	setRules := func(rules ...gwv1.GRPCRouteRule) {
		t.Helper()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			got, err := f.gw.GatewayV1().GRPCRoutes(f.ns).Get(ctx, "echo", metav1.GetOptions{})
			if err != nil {
				return err
			}
			got.Spec.Rules = rules
			_, err = f.gw.GatewayV1().GRPCRoutes(f.ns).Update(ctx, got, metav1.UpdateOptions{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	setRules(grpcMethodRule("EchoTwo", "grpc-v2"))
	expectGRPC(s, conn, "EchoTwo", codes.OK, f.ns, "grpc-v2")
	expectGRPC(s, conn, "Echo", codes.Unimplemented, "", "")

	// A method without a service and regular expressions: path regular
	// expressions in HAProxy.
	methodOnly := grpcMethodRule("Echo", "grpc-v1")
	methodOnly.Matches[0].Method.Service = nil
	regex := grpcMethodRule("EchoTw.*", "grpc-v2")
	regex.Matches[0].Method.Type, regex.Matches[0].Method.Service = ptr.To(gwv1.GRPCMethodMatchRegularExpression), ptr.To(`.*\.GrpcEcho`)
	setRules(methodOnly, regex)
	expectGRPC(s, conn, "Echo", codes.OK, f.ns, "grpc-v1")
	expectGRPC(s, conn, "EchoTwo", codes.OK, f.ns, "grpc-v2")
	expectGRPC(s, conn, "EchoThree", codes.Unimplemented, "", "")
	// The HTTPRoute of the fixture keeps serving HTTP/1.1 on the same bind.
	expectGateway(s, bind, f.host, "/", 200, f.ns, "web")

	if got := s.WorkerPID(); got != pid {
		t.Errorf("HAProxy worker %d, was %d: a reload", got, pid)
	}
	if got := s.Reloads(); got != reloads {
		t.Errorf("dcm_reloads_total %v, was %v", got, reloads)
	}
}
