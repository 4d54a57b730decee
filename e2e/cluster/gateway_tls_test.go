package cluster

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dcm-router/dcm/e2e/echobasic"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/e2e/kapitest"
	"github.com/dcm-router/dcm/internal/testkit"
	"github.com/dcm-router/dcm/system"
)

// createTCPEcho runs an echo-basic Deployment in its TCP mode
// (TCP_ECHO_SERVER, as the suite's tcp-backend) with the TLS Secret
// echo-cert, and its Service name:443 → the TLS port.
func createTCPEcho(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"app": name}
	fieldEnv := func(n, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: n, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "echo", Image: "registry.k8s.io/gateway-api/echo-basic:v1.5.1",
				Env: []corev1.EnvVar{fieldEnv("POD_NAME", "metadata.name"), fieldEnv("NAMESPACE", "metadata.namespace"),
					{Name: "TCP_ECHO_SERVER", Value: "1"},
					{Name: "TLS_SERVER_CERT", Value: "/etc/secret-volume/crt"}, {Name: "TLS_SERVER_PRIV_KEY", Value: "/etc/secret-volume/key"}},
				VolumeMounts: []corev1.VolumeMount{{Name: "secret-volume", MountPath: "/etc/secret-volume"}}}},
			Volumes: []corev1.Volume{{Name: "secret-volume", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName: "echo-cert", Items: []corev1.KeyToPath{{Key: "tls.crt", Path: "crt"}, {Key: "tls.key", Path: "key"}}}}}},
		}}}}
	if _, err := env.admin.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: corev1.ServiceSpec{Selector: labels,
		Ports: []corev1.ServicePort{{Name: "tls", Port: 443, TargetPort: intstr.FromInt32(8443)}}}}
	if _, err := env.admin.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// tcpEchoOver opens TLS to bind with sni and asks the TCP echo behind it
// for its TEST answer.
func tcpEchoOver(bind, sni string) (echobasic.TCPAnswer, error) {
	var ans echobasic.TCPAnswer
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second},
		Config: &tls.Config{ServerName: sni, InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}}
	c, err := d.Dial("tcp", bind)
	if err != nil {
		return ans, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	if l, err := r.ReadString('\n'); err != nil || l != echobasic.TCPWelcome {
		return ans, fmt.Errorf("welcome %q: %v", l, err)
	}
	if _, err := fmt.Fprint(c, "TEST\n"); err != nil {
		return ans, err
	}
	l, err := r.ReadString('\n')
	if err != nil {
		return ans, err
	}
	return ans, json.Unmarshal([]byte(strings.TrimSpace(l)), &ans)
}

// expectPassthrough waits until a TLS connection to bind with sni reaches
// a pod of ns/app with its TLS untouched (the pod saw the SNI); app ""
// waits until the connection is refused before any TLS.
func expectPassthrough(s *harness.Stack, bind, sni, ns, app string) {
	s.Eventually(fmt.Sprintf("SNI %s on %s → %q", sni, bind, app), 30*time.Second, func() error {
		ans, err := tcpEchoOver(bind, sni)
		if app == "" {
			if err == nil {
				return fmt.Errorf("answered by %s", ans.Pod)
			}
			return nil
		}
		if err != nil {
			return err
		}
		pods, err := readyPods(ns, app)()
		if err != nil {
			return err
		}
		if !slices.Contains(pods, ans.Pod) || !ans.IsTLS || ans.TLS == nil || ans.TLS.ServerName != sni {
			return fmt.Errorf("answer %+v, pods of %s %v", ans, app, pods)
		}
		return nil
	})
}

// TestGatewayTLSRoutePassthrough: a real TLSRoute on a TLS Passthrough
// listener is served by its SNI, the TLS ending in the echo-basic TCP pod
// (it saw the SNI), with dcm's status on the route and the listener; then
// its backend and its hostname change and it is deleted — one HAProxy
// worker and no reload throughout.
func TestGatewayTLSRoutePassthrough(t *testing.T) {
	installGatewayCRDs(t)
	ns := kapitest.Namespace(t, env.admin)
	ctx := context.Background()
	gw := gatewayAdmin(t)
	ca := testkit.NewCA(t)
	leaf := ca.Leaf(t, "*."+ns+".test")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "echo-cert", Namespace: ns}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: leaf.CertPEM, corev1.TLSPrivateKeyKey: leaf.KeyPEM}}
	if _, err := env.admin.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createTCPEcho(t, ns, "db-a")
	createTCPEcho(t, ns, "db-b")
	class := &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "dcm-" + ns}, Spec: gwv1.GatewayClassSpec{ControllerName: system.DefaultGatewayControllerName}}
	if _, err := gw.GatewayV1().GatewayClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = gw.GatewayV1().GatewayClasses().Delete(context.Background(), class.Name, metav1.DeleteOptions{})
	})
	const httpPort = 18090
	g := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gw"}, Spec: gwv1.GatewaySpec{GatewayClassName: gwv1.ObjectName(class.Name),
		Listeners: []gwv1.Listener{{Name: "tls", Port: httpPort + 363, Protocol: gwv1.TLSProtocolType, Hostname: ptr.To(gwv1.Hostname("*." + ns + ".test")),
			TLS: &gwv1.ListenerTLSConfig{Mode: ptr.To(gwv1.TLSModePassthrough)}}}}}
	if _, err := gw.GatewayV1().Gateways(ns).Create(ctx, g, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	host, moved := "db."+ns+".test", "db2."+ns+".test"
	route := &gwv1.TLSRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}, Spec: gwv1.TLSRouteSpec{
		CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "gw"}}},
		Hostnames:       []gwv1.Hostname{gwv1.Hostname(host)},
		Rules: []gwv1.TLSRouteRule{{BackendRefs: []gwv1.BackendRef{{
			BackendObjectReference: gwv1.BackendObjectReference{Name: "db-a", Port: ptr.To(gwv1.PortNumber(443))}}}}}}}
	if _, err := gw.GatewayV1().TLSRoutes(ns).Create(ctx, route, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	s := startGatewayDCM(t, ns, "127.0.20.220/30", httpPort)
	bind := fmt.Sprintf("127.0.20.220:%d", httpPort+363)
	s.Eventually("the TLSRoute's and the listener's status", 30*time.Second, func() error {
		r, err := gw.GatewayV1().TLSRoutes(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(r.Status.Parents) != 1 {
			return fmt.Errorf("parents %+v", r.Status.Parents)
		}
		for _, typ := range []string{"Accepted", "ResolvedRefs"} {
			if err := conditionIs(r.Status.Parents[0].Conditions, typ, "True", r.Generation); err != nil {
				return err
			}
		}
		g, err := gw.GatewayV1().Gateways(ns).Get(ctx, "gw", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(g.Status.Listeners) != 1 || g.Status.Listeners[0].AttachedRoutes != 1 ||
			len(g.Status.Listeners[0].SupportedKinds) != 1 || g.Status.Listeners[0].SupportedKinds[0].Kind != "TLSRoute" {
			return fmt.Errorf("listeners %+v", g.Status.Listeners)
		}
		return conditionIs(g.Status.Listeners[0].Conditions, "Programmed", "True", g.Generation)
	})
	// The portal's Gateway API panel lists the TLSRoute with its status.
	s.Eventually("the TLSRoute in the snapshot's Gateway API", 30*time.Second, func() error {
		g := s.Engine.Snapshot().Gateways
		if g == nil {
			return errors.New("no Gateway API in the snapshot")
		}
		for _, r := range g.HTTPRoutes {
			if r.Kind == "TLSRoute" && r.Name == "db" && len(r.Parents) == 1 && hasCondition(r.Parents[0].Conditions, "Accepted", "True", "Accepted") == nil {
				return nil
			}
		}
		return fmt.Errorf("no TLSRoute db in %+v", g.HTTPRoutes)
	})
	expectPassthrough(s, bind, host, ns, "db-a")
	expectPassthrough(s, bind, "other."+ns+".test", ns, "")
	pid, reloads := s.WorkerPID(), s.Reloads()

	update := func(change func(*gwv1.TLSRouteSpec)) {
		t.Helper()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			r, err := gw.GatewayV1().TLSRoutes(ns).Get(ctx, "db", metav1.GetOptions{})
			if err != nil {
				return err
			}
			change(&r.Spec)
			_, err = gw.GatewayV1().TLSRoutes(ns).Update(ctx, r, metav1.UpdateOptions{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	// Backend: db-b.
	update(func(r *gwv1.TLSRouteSpec) { r.Rules[0].BackendRefs[0].Name = "db-b" })
	expectPassthrough(s, bind, host, ns, "db-b")
	// Hostname: db2; db is no longer the route's.
	update(func(r *gwv1.TLSRouteSpec) { r.Hostnames = []gwv1.Hostname{gwv1.Hostname(moved)} })
	expectPassthrough(s, bind, moved, ns, "db-b")
	expectPassthrough(s, bind, host, ns, "")
	// A TLSRoute whose Service does not exist: ResolvedRefs False
	// BackendNotFound, a Warning Event on it, counted as rejected, and its
	// SNI refused — the other route keeps serving.
	broken := route.DeepCopy()
	broken.Name, broken.Spec.Hostnames = "broken", []gwv1.Hostname{gwv1.Hostname("broken." + ns + ".test")}
	broken.Spec.Rules[0].BackendRefs[0].Name = "nonexistent"
	rejected := s.Counter("dcm_rejected_objects_total", "reason", string(gwv1.RouteReasonBackendNotFound))
	created, err := gw.GatewayV1().TLSRoutes(ns).Create(ctx, broken, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Eventually("the broken TLSRoute's ResolvedRefs", 30*time.Second, func() error {
		r, err := gw.GatewayV1().TLSRoutes(ns).Get(ctx, "broken", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(r.Status.Parents) != 1 {
			return fmt.Errorf("parents %+v", r.Status.Parents)
		}
		if err := conditionIs(r.Status.Parents[0].Conditions, "Accepted", "True", r.Generation); err != nil {
			return err
		}
		for _, c := range r.Status.Parents[0].Conditions {
			if c.Type == "ResolvedRefs" && c.Status == metav1.ConditionFalse && c.Reason == string(gwv1.RouteReasonBackendNotFound) {
				return nil
			}
		}
		return fmt.Errorf("conditions %+v", r.Status.Parents[0].Conditions)
	})
	waitEvent(t, s, ns, "TLSRoute", "broken", created.UID, corev1.EventTypeWarning, string(gwv1.RouteReasonBackendNotFound), "nonexistent")
	if got := s.Counter("dcm_rejected_objects_total", "reason", string(gwv1.RouteReasonBackendNotFound)); got <= rejected {
		t.Errorf("dcm_rejected_objects_total{reason=BackendNotFound} %v, was %v", got, rejected)
	}
	expectPassthrough(s, bind, "broken."+ns+".test", ns, "")
	expectPassthrough(s, bind, moved, ns, "db-b")

	// Deleted: its SNI reaches no pod.
	if err := gw.GatewayV1().TLSRoutes(ns).Delete(ctx, "db", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expectPassthrough(s, bind, moved, ns, "")

	if got := s.WorkerPID(); got != pid {
		t.Errorf("HAProxy's worker changed: %d, was %d", got, pid)
	}
	if got := s.Reloads(); got != reloads {
		t.Errorf("dcm_reloads_total %v, was %v", got, reloads)
	}
}
