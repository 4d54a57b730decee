package cluster

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/dcm-router/dcm/e2e/echobasic"
	"github.com/dcm-router/dcm/e2e/kapitest"
	"github.com/dcm-router/dcm/internal/testkit"
)

// TestEchoBasicPodsThroughEndpointSlices: a Deployment of the conformance
// suite's echo-basic image, as its base manifests write it (fieldRef env,
// a TLS Secret mounted with items, created after the Deployment), runs on
// the test kubelet as e2e/echobasic: every ready endpoint of the real
// EndpointSlices answers the suite's JSON on its HTTP, h2c and HTTPS ports,
// naming the pod its slice names (make conformance relies on this).
func TestEchoBasicPodsThroughEndpointSlices(t *testing.T) {
	ns := kapitest.Namespace(t, env.admin)
	ctx := t.Context()
	labels := map[string]string{"app": "echo"}
	fieldEnv := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: ns}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "echo", Image: "registry.k8s.io/gateway-api/echo-basic:v1.5.1",
				Env: []corev1.EnvVar{fieldEnv("POD_NAME", "metadata.name"), fieldEnv("NAMESPACE", "metadata.namespace"),
					{Name: "TLS_SERVER_CERT", Value: "/etc/secret-volume/crt"}, {Name: "TLS_SERVER_PRIVKEY", Value: "/etc/secret-volume/key"}},
				VolumeMounts: []corev1.VolumeMount{{Name: "secret-volume", MountPath: "/etc/secret-volume"}}}},
			Volumes: []corev1.Volume{{Name: "secret-volume", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName: "echo-cert", Items: []corev1.KeyToPath{{Key: "tls.crt", Path: "crt"}, {Key: "tls.key", Path: "key"}}}}}},
		}}}}
	if _, err := env.admin.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: ns}, Spec: corev1.ServiceSpec{Selector: labels,
		Ports: []corev1.ServicePort{
			{Name: "http", Port: 8080, TargetPort: intstr.FromInt32(3000)},
			{Name: "h2c", Port: 8081, TargetPort: intstr.FromInt32(3001), AppProtocol: ptr.To("kubernetes.io/h2c")},
			{Name: "https", Port: 443, TargetPort: intstr.FromInt32(8443)}}}}
	if _, err := env.admin.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The Secret comes after the pods, as the suite creates its
	// certificates after its manifests: the pods wait for it.
	ca := testkit.NewCA(t)
	leaf := ca.Leaf(t, "abc.example.com")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "echo-cert", Namespace: ns}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: leaf.CertPEM, corev1.TLSPrivateKeyKey: leaf.KeyPEM}}
	if _, err := env.admin.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	answered := map[string]int{}
	testkit.Eventually(t, "two ready echo-basic endpoints answering on every port", time.Minute, func() error {
		clear(answered)
		slices, err := env.admin.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=echo"})
		if err != nil {
			return err
		}
		for _, s := range slices.Items {
			for _, p := range s.Ports {
				for _, e := range s.Endpoints {
					if e.Conditions.Ready == nil || !*e.Conditions.Ready || e.TargetRef == nil {
						continue
					}
					addr := net.JoinHostPort(e.Addresses[0], strconv.Itoa(int(*p.Port)))
					if err := echoAnswers(addr, *p.Name, ns, e.TargetRef.Name, ca); err != nil {
						return err
					}
					answered[*p.Name]++
				}
			}
		}
		if answered["http"] != 2 || answered["h2c"] != 2 || answered["https"] != 2 {
			return fmt.Errorf("endpoints that answered, by port: %v", answered)
		}
		return nil
	})
}

// echoAnswers checks that addr answers as echo-basic does on the port
// named port, for pod in ns.
func echoAnswers(addr, port, ns, pod string, ca *testkit.CA) error {
	tr := &http.Transport{DisableKeepAlives: true}
	scheme, wantProto := "http", "HTTP/1.1"
	switch port {
	case "h2c":
		var p http.Protocols
		p.SetUnencryptedHTTP2(true)
		tr.Protocols, wantProto = &p, "HTTP/2.0"
	case "https":
		scheme = "https"
		tr.TLSClientConfig = &tls.Config{RootCAs: ca.Pool(), ServerName: "abc.example.com"}
	}
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	resp, err := c.Get(scheme + "://" + addr + "/check//me?x=1")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var got struct {
		Path, Namespace, Pod, Proto, HTTPPort string
		TLS                                   *struct{ ServerName string }
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		return fmt.Errorf("%s: Content-Type %q: %s", addr, ct, body)
	}
	if err := json.Unmarshal(body, &got); err != nil {
		return fmt.Errorf("%s: %w: %s", addr, err, body)
	}
	if got.Path != "/check//me?x=1" || got.Namespace != ns || got.Pod != pod || got.Proto != wantProto || got.HTTPPort != "3000" {
		return fmt.Errorf("%s (%s) echoed %s", addr, port, body)
	}
	if (port == "https") != (got.TLS != nil) || (got.TLS != nil && got.TLS.ServerName != "abc.example.com") {
		return errors.New(addr + ": tls field " + string(body))
	}
	return nil
}

// TestEchoBasicGRPCPods: an echo-basic Deployment with GRPC_ECHO_SERVER, as
// the suite's gRPC backends, answers its gRPC echo (Echo naming the pod)
// from every ready endpoint.
func TestEchoBasicGRPCPods(t *testing.T) {
	ns := kapitest.Namespace(t, env.admin)
	ctx := t.Context()
	labels := map[string]string{"app": "grpc-echo"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "grpc-echo", Namespace: ns}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "echo", Image: "registry.k8s.io/gateway-api/echo-basic:v1.5.1",
				Env: []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "GRPC_ECHO_SERVER", Value: "1"}}}}}}}}
	if _, err := env.admin.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "grpc-echo", Namespace: ns}, Spec: corev1.ServiceSpec{Selector: labels,
		Ports: []corev1.ServicePort{{Port: 8080, TargetPort: intstr.FromInt32(3000), AppProtocol: ptr.To("kubernetes.io/h2c")}}}}
	if _, err := env.admin.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "two ready gRPC echo endpoints", time.Minute, func() error {
		slices, err := env.admin.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=grpc-echo"})
		if err != nil {
			return err
		}
		n := 0
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready == nil || !*e.Conditions.Ready || e.TargetRef == nil || len(s.Ports) != 1 {
					continue
				}
				addr := net.JoinHostPort(e.Addresses[0], strconv.Itoa(int(*s.Ports[0].Port)))
				conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
				if err != nil {
					return err
				}
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				r, err := echobasic.InvokeGRPC(cctx, conn, "Echo")
				cancel()
				conn.Close()
				if err != nil {
					return fmt.Errorf("%s: %w", addr, err)
				}
				if r.Identity.Pod != e.TargetRef.Name || r.FullyQualifiedMethod != "/"+echobasic.GRPCService+"/Echo" {
					return fmt.Errorf("%s: echoed %+v, want pod %s", addr, r, e.TargetRef.Name)
				}
				n++
			}
		}
		if n != 2 {
			return fmt.Errorf("%d endpoints answered", n)
		}
		return nil
	})
}
